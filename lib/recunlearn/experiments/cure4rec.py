"""CURE4Rec experiments: dataset statistics (Table 4) and the original "Learn" models.

Each experiment has a frozen config (one run) and, for notebooks, a grid config whose list-valued
parameters expand into runs; ``collect(grid)`` returns the grid's runs as their records give them and
the runs still without a record (:class:`Collected`). Defaults are the paper's settings (CURE4Rec
§4.4: d = 32, batch 512, lr 0.01, 4 negatives per positive), not those of the authors' code. Comparing
runs with the paper is :mod:`recunlearn.report.cure4rec`'s.
"""

from __future__ import annotations

import dataclasses
import itertools
import time

import numpy as np
import pandas as pd
import torch

from ..data import DatasetNotFoundError, interaction_statistics, load_released_tables, load_split, preprocess_raw
from ..data.selection import RULES as SELECTION_RULES
from ..data.selection import select_unlearning_users
from ..data.splits import PROTOCOLS, VALIDATION_RULES
from ..metrics import METRICS, a_igf, active_user_mask
from ..models import MODELS, TrainingData, evaluate_model, train_until_converged
from ..models.mf import WMF
from ..seeding import seed_everything
from .config import Config, ConfigError, option, require_device
from .records import load_record, pending_reason, record_key, register, run_or_load

DATASETS = ("ml-100k", "ml-1m", "adm")
DEVICES = ("cpu", "cuda")
TRAINING_USERS = {("ml-100k", "released"): 943, ("ml-100k", "raw"): 943, ("ml-1m", "released"): 6040,
                  ("ml-1m", "raw"): 6040, ("adm", "released"): 22878}
"""Users with training interactions, by (dataset, protocol): those an unlearning ratio applies to.
(ADM's raw file is not available, so its count is unknown.)"""


def check_unlearning_ratio(dataset: str, protocol: str, ratio: float, name: str = "RATIO",
                           users: int | None = None) -> None:
    """ConfigError when ``ratio`` % of ``dataset``'s users is less than one user (nobody unlearned).
    ``users``: the users with training interactions, when counted from the data (else
    :data:`TRAINING_USERS`; unknown there, nothing is checked)."""
    users = users if users is not None else TRAINING_USERS.get((dataset, protocol))
    if users is not None and int(users * ratio / 100) == 0:
        smallest = next(r / 1000 for r in range(1, 100_001) if int(users * (r / 1000) / 100) > 0)
        raise ConfigError(f"parameter {name} = {ratio!r}: {ratio!r} % of the {users} users of {dataset} is "
                          f"int({users} * {ratio!r} / 100) = 0 users, so nobody would be unlearned; {name} is a "
                          f"percentage (5.0 = 5 %) and must be at least {smallest:g} here")


def users_to_unlearn(config, split) -> np.ndarray:
    """The seeded unlearning set of an unlearning config (``selection``, ``ratio``, ``scoring``,
    ``selection_seed``) on ``split``; a ConfigError naming RATIO, before any training, when it would
    hold nobody (checked here on the users of the split, for data whose user count is not known
    beforehand)."""
    train_users = split.train["user"].to_numpy()
    check_unlearning_ratio(config.dataset, config.protocol, config.ratio, users=len(np.unique(train_users)))
    return select_unlearning_users(train_users, split.train["item"].to_numpy(), split.n_users, config.selection,
                                   config.ratio, config.scoring, seed=config.selection_seed)


# --- Table 4 --------------------------------------------------------------------------------------

def missing_file_note(exc: DatasetNotFoundError) -> str:
    """Why a raw file's row is empty, in a sentence: the file, that it is neither in the local data
    directory nor downloadable from here, and where it comes from."""
    if not exc.file:
        return f"not available here: {str(exc).split(';')[0]}"
    source = f" (its source: {exc.url})" if exc.url else ""
    return (f"the raw file {exc.file} is not in the local data directory and could not be downloaded "
            f"on the machine that rendered this page{source}")


def dataset_statistics(datasets=DATASETS) -> pd.DataFrame:
    """Users, items, interactions and sparsity of each dataset, from the raw source (implicit,
    5-core) and from the authors' released ``ratings.csv``. A raw file that is not available gives
    a row of NaN with the reason in ``note``."""
    rows = []
    for name in datasets:
        try:
            rows.append({"dataset": name, "source": "raw, 5-core", **interaction_statistics(preprocess_raw(name)),
                         "note": ""})
        except DatasetNotFoundError as exc:
            rows.append({"dataset": name, "source": "raw, 5-core", "note": missing_file_note(exc)})
        released = load_released_tables(name)["ratings"]
        rows.append({"dataset": name, "source": "released", **interaction_statistics(released), "note": ""})
    frame = pd.DataFrame(rows)
    return frame.astype({"users": "Int64", "items": "Int64", "interactions": "Int64"})


@dataclasses.dataclass(frozen=True)
class StatisticsParams(Config):
    """Notebook parameters of the Table 4 page."""

    datasets: tuple[str, ...] = option(DATASETS, choices=DATASETS)


# --- Learn: one original model --------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class TrainingSettings(Config):
    """Dataset, protocol, model and training hyper-parameters shared by the CURE4Rec experiments."""

    dataset: str = option("ml-100k", choices=DATASETS)
    model: str = option("wmf", choices=tuple(MODELS))
    seed: int = option(0, min=0, doc="model initialisation and sampling")
    protocol: str = option("released", choices=PROTOCOLS)
    validation: str = option("split_test", choices=VALIDATION_RULES,
                             doc="split_test: half of each user's released test items validate (seeded; "
                                 "a user's only test item stays in test); "
                                 "test: validate on the test set, as the authors' code")
    split_seed: int = option(0, min=0)
    dim: int = option(32, min=1)
    batch_size: int = option(512, min=1, doc="positive rows per batch (users per batch for whole-data WMF)")
    lr: float = option(0.01, min=0.0)
    n_negatives: int = option(4, min=1)
    l2: float | None = option(None, min=0.0, doc="None: 0 for WMF/BPR, 1e-4 for LightGCN")
    wmf_loss: str = option("whole_data", choices=WMF.LOSSES)
    wmf_c0: float = option(0.2, min=0.0)
    n_layers: int = option(3, min=1)
    max_epochs: int = option(500, min=1)
    patience: int = option(5, min=1)
    k: int = option(20, min=1)
    active_fraction: float = option(0.05, min=0.0, max=1.0)
    device: str = option("cpu", choices=DEVICES)

    def validate(self) -> None:
        """A-IGF needs active and inactive users; an unlearning config (one with a ``ratio``) must
        unlearn at least one user."""
        super().validate()
        if not 0 < self.active_fraction < 1:
            raise ConfigError(f"parameter ACTIVE_FRACTION = {self.active_fraction!r}: must be > 0 and < 1 "
                              "(A-IGF compares active with inactive users)")
        if getattr(self, "ratio", None) is not None:
            check_unlearning_ratio(self.dataset, self.protocol, self.ratio)

    def dataset_files(self):
        roles = ("raw",) if self.protocol == "raw" else ("released_ratings", "released_train", "released_test")
        return {self.dataset: roles}


@dataclasses.dataclass(frozen=True)
class LearnConfig(TrainingSettings):
    """One original ("Learn") model trained on all training data and evaluated on the test set."""

    experiment = "cure4rec-learn"


def build_model(config: TrainingSettings, n_users: int, n_items: int, generator: torch.Generator,
                n_blocks: int = 1):
    """The model named by ``config.model`` with the config's hyper-parameters (``n_blocks``
    independent copies trained as one blocked model when ``n_blocks > 1``)."""
    l2 = config.l2 if config.l2 is not None else (1e-4 if config.model == "lightgcn" else 0.0)
    common = dict(batch_size=config.batch_size, l2=l2)
    if config.model == "wmf":
        n_neg = config.n_negatives if config.wmf_loss == "bce_sampled" else 1
        kwargs = dict(loss=config.wmf_loss, c0=config.wmf_c0, n_negatives=n_neg, **common)
    elif config.model == "bpr":
        kwargs = dict(n_negatives=config.n_negatives, **common)
    else:
        kwargs = dict(n_layers=config.n_layers, n_negatives=config.n_negatives, **common)
    return MODELS[config.model](n_users * n_blocks, n_items * n_blocks, config.dim, generator, n_blocks=n_blocks,
                                **kwargs)


def _require_device(device: str) -> None:
    require_device(device)


def summarize_utility(per_user: dict[str, np.ndarray], train_counts: np.ndarray, active_fraction: float) -> dict:
    """Mean of every metric over the evaluated users, and A-IGF (active minus inactive, both NDCG
    variants), with active users = the top ``active_fraction`` of the evaluated users by training
    interactions."""
    active = active_user_mask(train_counts, per_user["user"], active_fraction)
    summary = {name: float(per_user[name].mean()) for name in METRICS}
    summary.update({"a_igf": a_igf(per_user["ndcg_untruncated"], active),
                    "a_igf_standard": a_igf(per_user["ndcg"], active),
                    "n_eval_users": int(len(per_user["user"])), "n_active": int(active.sum())})
    return summary


def test_exclusions(split, config: TrainingSettings):
    """Items never ranked at test time: training items, and validation items when they were split off."""
    return split.train_matrix if config.validation == "test" else split.train_matrix + split.matrix("valid")


@dataclasses.dataclass(frozen=True)
class RemainingUsers:
    """What is left after unlearning ``deleted``: the remaining users, those of them evaluated (with
    test items), the mask of kept training rows and every user's remaining training count."""

    users: np.ndarray
    eval_users: np.ndarray
    kept_rows: np.ndarray
    train_counts: np.ndarray


def remaining_after(split, deleted: np.ndarray) -> RemainingUsers:
    """The users and training rows that remain once ``deleted`` users are unlearned (stage IV's scope)."""
    train_users = split.train["user"].to_numpy()
    users = np.setdiff1d(np.arange(split.n_users), deleted)
    has_test = np.diff(split.matrix("test").indptr) > 0
    kept = ~np.isin(train_users, deleted)
    return RemainingUsers(users, users[has_test[users]], kept,
                          np.bincount(train_users[kept], minlength=split.n_users))


def evaluate_remaining(model, split, config: TrainingSettings, remaining: RemainingUsers, user_block=None):
    """Stage IV: per-user test metrics of ``model`` on the remaining users and their summary, with
    active users recomputed among the remaining users. Returns ``(per_user, summary)``."""
    per_user = evaluate_model(model, test_exclusions(split, config), split.matrix("test"), config.k,
                              users=remaining.eval_users, device=config.device, user_block=user_block)
    return per_user, summarize_utility(per_user, remaining.train_counts, config.active_fraction)


def train_original_model(config: TrainingSettings):
    """Stage I: the model of ``config`` trained on all training data with early stopping on
    validation NDCG@k (code variant). Returns ``(model, split, training_result, wall_seconds)``."""
    _require_device(config.device)
    seed_everything(config.seed)
    split = load_split(config.dataset, config.protocol, config.split_seed, config.validation)
    data = TrainingData.from_pairs(split.train.user, split.train.item, split.n_users, split.n_items, config.device)
    generator = torch.Generator(device=config.device).manual_seed(config.seed)
    model = build_model(config, split.n_users, split.n_items, torch.Generator().manual_seed(config.seed))
    model = model.to(config.device)
    start = time.perf_counter()
    training = train_until_converged(model, data, generator, split.train_matrix, split.matrix("valid"),
                                     lr=config.lr, max_epochs=config.max_epochs, patience=config.patience,
                                     k=config.k, progress=False)
    return model, split, training, time.perf_counter() - start


@register(LearnConfig)
def run_learn(config: LearnConfig) -> dict:
    """Train the original model and evaluate it on the test set; test candidates exclude training
    and validation items."""
    model, split, training, wall = train_original_model(config)
    start = time.perf_counter()
    per_user = evaluate_model(model, test_exclusions(split, config), split.matrix("test"), config.k,
                              device=config.device)
    test_seconds = time.perf_counter() - start
    return {
        "metrics": summarize_utility(per_user, split.user_train_counts(), config.active_fraction),
        "curve": training.curve,
        "timings": {"train_seconds": training.train_seconds, "validation_seconds": training.validation_seconds,
                    "wall_seconds": wall, "test_seconds": test_seconds},
        "training": {"best_epoch": training.best_epoch, "epochs_run": training.epochs_run,
                     "best_validation": training.best_validation},
        "split": split.description, "seed": config.seed, "device": config.device,
    }


# --- collected runs ---------------------------------------------------------------------------------

LEARN_KEYS = ["dataset", "model", "validation", "seed"]


def pending_frame(configs: list[Config], device: str, keys: list[str]) -> pd.DataFrame:
    """One row per config without a record: its ``keys``, ``reason`` and record ``key``."""
    rows = [{**{k: getattr(c, k) for k in keys}, "reason": pending_reason(device), "key": record_key(c)}
            for c in configs]
    return pd.DataFrame(rows, columns=[*keys, "reason", "key"])


@dataclasses.dataclass
class Collected:
    """The runs of a grid as records give them: ``runs`` (one row per run with a record, or per run and
    method for SCIF) and ``pending`` (one row per run without a record: keys, ``reason``, ``key``)."""

    runs: pd.DataFrame
    pending: pd.DataFrame


@dataclasses.dataclass(frozen=True)
class UnlearningGrid(Config):
    """Notebook parameters shared by the unlearning pages (exact methods, SCIF): the cells
    (datasets x models x unlearning sets x ratios x seeds) and how each model is trained."""

    datasets: tuple[str, ...] = option(("ml-100k",), choices=DATASETS)
    models: tuple[str, ...] = option(("wmf",), choices=("wmf", "bpr", "lightgcn"))
    selections: tuple[str, ...] = option(SELECTION_RULES, choices=SELECTION_RULES)
    ratios: tuple[float, ...] = option((5.0,), min=0.0, max=100.0, percent=True, doc="percentages of users")
    seeds: tuple[int, ...] = option((0, 1, 2), min=0)
    validation: str = option("split_test", choices=("split_test", "test"))
    max_epochs: int = option(500, min=1)
    device: str = option("cpu", choices=DEVICES)

    def validate(self) -> None:
        super().validate()
        for dataset, ratio in itertools.product(self.datasets, self.ratios):
            check_unlearning_ratio(dataset, "released", ratio, name="RATIOS")


@dataclasses.dataclass(frozen=True)
class LearnGrid(Config):
    """Notebook parameters of the "Learn" page: lists expand into one :class:`LearnConfig` each."""

    experiment = "cure4rec-learn"

    datasets: tuple[str, ...] = option(("ml-100k",), choices=DATASETS)
    models: tuple[str, ...] = option(("wmf", "bpr", "lightgcn"), choices=tuple(MODELS))
    seeds: tuple[int, ...] = option((0, 1, 2), min=0)
    validations: tuple[str, ...] = option(("split_test",), choices=VALIDATION_RULES)
    max_epochs: int = option(500, min=1)
    device: str = option("cpu", choices=DEVICES)
    compute_missing: bool = option(True, doc="False: show only stored records, list the rest as pending")

    def runs(self) -> list[LearnConfig]:
        return [LearnConfig(dataset=d, model=m, seed=s, validation=v, max_epochs=self.max_epochs, device=self.device)
                for d, m, v, s in itertools.product(self.datasets, self.models, self.validations, self.seeds)]


def collect(grid: LearnGrid, records_dir=None) -> Collected:
    """Every run of ``grid``: its record, computed first when missing (unless ``grid.compute_missing`` is
    false), else listed as pending. ``runs``: one row per run with a record, with config, metrics,
    timings and training; its ``attrs["pending"]`` lists the pending runs' configs."""
    rows, pending = [], []
    for config in grid.runs():
        record = run_or_load(config, records_dir) if grid.compute_missing else load_record(config, records_dir)
        if record is None:
            pending.append(config)
            continue
        rows.append({"dataset": config.dataset, "model": config.model, "validation": config.validation,
                     "seed": config.seed, **record["metrics"], **record["timings"], **record["training"],
                     "device": record["device"], "git_commit": record["git_commit"]})
    frame = pd.DataFrame(rows)
    frame.attrs["pending"] = [config.to_dict() for config in pending]
    return Collected(frame, pending_frame(pending, grid.device, LEARN_KEYS))


def run_learn_grid(grid: LearnGrid, records_dir=None) -> pd.DataFrame:
    """The ``runs`` of :func:`collect` (runs without a record in ``frame.attrs["pending"]``)."""
    return collect(grid, records_dir).runs
