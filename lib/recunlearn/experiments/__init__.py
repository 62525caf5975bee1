"""Validated configs, run records and the runners of each paper's experiments."""

from . import cure4rec, cure4rec_exact, cure4rec_scif  # noqa: F401 - registers the CURE4Rec runners
from . import casper  # noqa: F401 - registers the CASPER runners
from . import bystanders  # noqa: F401 - registers the bystander runner (the book's own chapter)
from . import stability  # noqa: F401 - registers the stability runner (the book's own chapter, question 3)
from . import sru  # noqa: F401 - registers the SRU runner
from .config import Config, ConfigError
from .records import RUNNERS, load_records, record_key, run_or_load

__all__ = ["Config", "ConfigError", "RUNNERS", "load_records", "record_key", "run_or_load", "cure4rec"]
