"""Data layer: dataset registry, parsers, preprocessing and splits."""

from .errors import ChecksumMismatchError, DatasetError, DatasetNotFoundError
from .preprocess import contiguous_ids, interaction_statistics, k_core, to_implicit
from .registry import DATASETS, get_dataset, locate
from .splits import Split, load_raw_table, load_released_tables, load_split, preprocess_raw

__all__ = ["ChecksumMismatchError", "DatasetError", "DatasetNotFoundError", "DATASETS", "get_dataset", "locate",
           "contiguous_ids", "interaction_statistics", "k_core", "to_implicit", "Split", "load_split",
           "load_raw_table", "load_released_tables", "preprocess_raw"]
