"""CASPER experiments: dataset statistics (Table 2) and rank-list sensitivity runs (Figures 2-8, Table 3).

One :class:`CasperConfig` = one repetition: train the original model M and the perturbed model M'
from the same initial weights, and compare their rank lists on every test interaction. Selector
``none`` is the mandatory control (no perturbation: AO = Jaccard = 1 exactly on CPU, where training is deterministic).
The original model of a (dataset, model, seed, ...) is trained once per process and shared by all
perturbations of that seed.

Selectors (:data:`SELECTORS`): the control ``none``; the stream-only ``random``, ``earliest``, ``latest``
and ``casper`` (:mod:`recunlearn.perturb.operations`); and the model-based baselines of Table 3:

- ``tracin`` / ``tracin-proxy``: the training row with the largest TracIn self-influence of the original
  model M (exact last-layer score / the authors' product-of-norms proxy, :mod:`recunlearn.perturb.tracin`).
  The scores come from checkpoints of M's own training (the trainer hands M to a recorder at the
  checkpoint epochs when, and only when, a TracIn run needs it), so TracIn costs no extra training: M is
  trained once per seed with the recorder and shared with every other run of that seed, whose results do
  not change (the recorder only reads the weights);
- ``revadv-random`` / ``revadv-earliest``: a random / the first training row of the real user nearest
  to Rev.Adv's fake user (:mod:`recunlearn.perturb.revadv`; one attack per (data, seed) and process,
  shared by both modes, every perturbation and every model).

Replacement and insertion at a TracIn or Rev.Adv row use a random item, as the other baselines do.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import itertools
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ..data.errors import DatasetError
from ..data.sequences import (CASPER_DATASETS, DATASET_LABELS, Stream, first_appearance_map, load_stream,
                              stream_statistics)
from ..metrics import rls
from ..models.sequential import SEQUENTIAL_MODELS
from ..perturb.idag import build_idag, cascade_scores
from ..perturb.operations import PERTURBATIONS, REPLACEMENTS, perturb, perturb_rows, select_rows
from ..perturb.revadv import revadv_attack, revadv_row
from ..perturb.tracin import TracInRecorder
from ..seeding import seed_everything
from . import process_cache, stored_models
from .config import Config, ConfigError, option, require_device
from .records import load_record, pending_reason, record_key, register, run_or_load

MODELS = ("lstm", "tisasrec", "jodie", "latentcross")
SELECTORS = ("none", "random", "earliest", "latest", "casper", "tracin", "tracin-proxy", "revadv-random",
             "revadv-earliest")
TRACIN_SELECTORS = {"tracin": "exact", "tracin-proxy": "proxy"}
"""TracIn selectors and their score (:meth:`recunlearn.perturb.tracin.TracInRecorder.scores`)."""
REVADV_SELECTORS = {"revadv-random": "random", "revadv-earliest": "earliest"}
"""Rev.Adv selectors and which row of the nearest user they take."""
DEVICES = ("cpu", "cuda")
UNBOUNDED_L = {"jodie", "latentcross"}
RLS_METRICS = ("ao", "rbo_min", "rbo_ext", "jaccard")
ID_MAPS = ("fixed", "first_appearance", "first_appearance_labels")
"""Item numbering of each run: ``fixed`` = one sorted map for both runs (this study);
``first_appearance`` = each run renumbers items by first appearance (the authors' JODIE/LatentCross),
rank lists mapped back to the fixed ids before comparison (isolates the different initial weights);
``first_appearance_labels`` = the same, but the two runs' lists compared label by label, as the
authors' code did (adds the relabelling artefact)."""

TEST_UPDATES = ("online", "frozen")
"""JODIE's and LatentCross's test pass (spec D9): ``online`` = one optimiser step per test window, as the
authors' code (every number of the book but the comparison of the two); ``frozen`` = the trained
parameters kept fixed while the states follow the true test interactions."""
ONLINE_MODELS = {"jodie", "latentcross"}
"""The models whose test pass learns online (``test_updates`` applies to them only)."""

LSTM_EMBEDDINGS = ("fixed", "trained")
"""The LSTM's item embedding: ``fixed`` = random N(0, 1) vectors never trained, as the authors' code
(every number of the book but the comparison of the two); ``trained`` = the same vectors as initial
values, trained with the rest of the network."""

LATENTCROSS_CELLS = ("lstm", "gru")
"""LatentCross's recurrent cell (spec D8): ``lstm`` = an LSTMCell with h and c of 64, as the authors' code
(every number of the book but the comparison of the two); ``gru`` = a GRUCell with a state of 128, as
the paper describes the model ("GRU-based")."""

SMALLEST_MAX_ROWS = {"wikipedia": 29, "reddit": 224, "foursquare": 212, "lastfm": 22}
"""The shortest chronological prefix of each file in which some user has the 10 interactions that
:func:`~recunlearn.data.sequences.load_stream` requires; a shorter prefix leaves no data."""


def check_max_rows(dataset: str, rows: int | None, name: str = "MAX_ROWS") -> None:
    """ConfigError when the first ``rows`` rows of ``dataset`` leave no interaction after the user filter."""
    if rows is not None and rows < SMALLEST_MAX_ROWS[dataset]:
        raise ConfigError(f"parameter {name} = {rows!r}: the first {rows} rows of {dataset} hold no user with "
                          f">= 10 interactions, so nothing is left to train on; the smallest value for {dataset} "
                          f"is {SMALLEST_MAX_ROWS[dataset]} (None: the whole file)")


# --- Table 2 ----------------------------------------------------------------------------------------

def dataset_statistics(datasets=CASPER_DATASETS) -> pd.DataFrame:
    """Raw and filtered (users >= 10) counts of each dataset, with its display label."""
    return pd.DataFrame([stream_statistics(name) for name in datasets])


@dataclasses.dataclass(frozen=True)
class StatisticsParams(Config):
    """Notebook parameters of the Table 2 page."""

    datasets: tuple[str, ...] = option(CASPER_DATASETS, choices=CASPER_DATASETS)


# --- one repetition ---------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class CasperConfig(Config):
    """Train M and the perturbed M' from the same initial weights; RLS over the test interactions."""

    experiment = "casper-rls"
    results_version = "3"  # 2: fast formulations; 3: one fixed TiSASRec formulation. Per model: MODEL_RESULTS_VERSIONS

    dataset: str = option("foursquare", choices=CASPER_DATASETS)
    model: str = option("lstm", choices=MODELS, doc="only the models in SEQUENTIAL_MODELS can run")
    selector: str = option("random", choices=SELECTORS, doc="none = the no-perturbation control")
    perturbation: str = option("loo", choices=PERTURBATIONS)
    replacement: str = option("random", choices=REPLACEMENTS, doc="new item of replace / insert")
    k: int = option(1, min=1, doc="number of perturbed interactions")
    seed: int = option(0, min=0)
    epochs: int = option(50, min=1)
    max_rows: int | None = option(None, min=1, doc="None: the whole file; else its chronological prefix "
                                                   "(at least SMALLEST_MAX_ROWS[dataset])")
    idag_variant: str = option("paper", choices=("paper", "code-rel", "code-2021"))
    idag_max_len: int = option(0, min=-1, doc="0: the model's (50 LSTM/TiSASRec, unbounded JODIE/LatentCross); "
                                               "-1: unbounded; else this L")
    id_map: str = option("fixed", choices=ID_MAPS)
    device: str = option("cpu", choices=DEVICES)
    test_updates: str = option("online", choices=TEST_UPDATES, added=True,
                               doc="JODIE and LatentCross: online optimiser steps at test (the code) or frozen")
    lstm_embeddings: str = option("fixed", choices=LSTM_EMBEDDINGS, added=True,
                                  doc="LSTM: item embeddings fixed random vectors (the code) or trained")
    latentcross_cell: str = option("lstm", choices=LATENTCROSS_CELLS, added=True,
                                   doc="LatentCross: an LSTM cell (the code) or a GRU cell (the paper)")

    def validate(self) -> None:
        super().validate()
        check_max_rows(self.dataset, self.max_rows)
        if self.test_updates != "online" and self.model not in ONLINE_MODELS:
            raise ConfigError(f"parameter TEST_UPDATES = {self.test_updates!r} with MODEL = {self.model!r}: only "
                              f"{sorted(ONLINE_MODELS)} learn at test time; {self.model} takes 'online' (its default)")
        if self.lstm_embeddings != "fixed" and self.model != "lstm":
            raise ConfigError(f"parameter LSTM_EMBEDDINGS = {self.lstm_embeddings!r} with MODEL = {self.model!r}: "
                              f"only the LSTM has a choice of item embeddings; {self.model} takes 'fixed' (its "
                              "default)")
        if self.latentcross_cell != "lstm" and self.model != "latentcross":
            raise ConfigError(f"parameter LATENTCROSS_CELL = {self.latentcross_cell!r} with MODEL = {self.model!r}: "
                              f"only LatentCross has a choice of recurrent cell; {self.model} takes 'lstm' (its "
                              "default)")
        if self.selector in REVADV_SELECTORS and self.k != 1:
            raise ConfigError(f"parameter K = {self.k!r} with SELECTOR = {self.selector!r}: Rev.Adv learns one fake "
                              "user and perturbs one row of its nearest real user; only K = 1 is allowed")

    def dataset_files(self):
        return {self.dataset: ("raw",)}

    def value_results_version(self) -> str | None:
        return MODEL_RESULTS_VERSIONS.get(self.model)

    def idag_length(self) -> int | None:
        if self.idag_max_len == 0:
            return None if self.model in UNBOUNDED_L else 50
        return None if self.idag_max_len == -1 else self.idag_max_len


@dataclasses.dataclass
class Original:
    """A trained original model M, the untrained copy M' starts from, its fit result and, when it was
    trained with one, its TracIn recorder."""

    model: object
    initial: object
    fit: dict
    tracin: TracInRecorder | None = None


_ORIGINALS: dict[tuple, Original] = {}
"""Trained original models of this process (the 32 most recent), by everything except the perturbation."""


IMPLEMENTATIONS = {"lstm": "fast", "tisasrec": "fast", "jodie": "fast", "latentcross": "fast"}
"""Which formulation of each model the CASPER runs train (both compute the same function; the fast
one is several times faster). CASPER compares a model with a copy trained on one changed
interaction, so both runs must draw the same dropout masks wherever their data agree: TiSASRec's
fast formulation draws each user's masks from that user's own stream (see its module), as its
reference does with fixed-shape masks."""

MODEL_RESULTS_VERSIONS = {"tisasrec": "4", "jodie": "4", "latentcross": "4"}
"""Results versions of single models, replacing ``CasperConfig.results_version`` for their runs. Each
must stay above the class's version (a test checks it): bumping the class's version therefore means
bumping these past it, so no model's old records survive a change that alters every model.
TiSASRec 4: trained with the fast formulation and per-user dropout masks (3: the reference).
LatentCross 4: output layer in row blocks (the same function, other float rounding).
JODIE 4: prediction weight stored column by column (the same function, other float rounding)."""


def _build(config: CasperConfig, stream: Stream):
    if config.model not in SEQUENTIAL_MODELS:
        raise NotImplementedError(f"model {config.model!r} is not implemented; implemented: {sorted(SEQUENTIAL_MODELS)}")
    generator = torch.Generator().manual_seed(config.seed)
    variant = {"trainable_embeddings": True} if config.lstm_embeddings == "trained" else {}
    if config.latentcross_cell != "lstm":
        variant["cell"] = config.latentcross_cell
    return SEQUENTIAL_MODELS[config.model](stream.n_items, generator=generator, epochs=config.epochs,
                                           device=config.device, implementation=IMPLEMENTATIONS[config.model],
                                           **variant)


@functools.lru_cache(maxsize=16)
def _stream_size(dataset: str, max_rows: int | None) -> tuple[int, int, int] | None:
    """(training rows, users, items) of a stream; None when its file is not on this machine."""
    try:
        stream = load_stream(dataset, max_rows=max_rows)
    except DatasetError:
        return None
    return len(stream.train_positions), stream.n_users, stream.n_items


def cost_size(config: CasperConfig) -> int | None:
    """A JODIE run's size for the compute plan's cost model: its prediction layer spans every user and
    item (a (|I| + d) x (|U| + |I| + 2d) matrix whose dense gradient and Adam step come every window),
    so its work grows with training rows x (users + items), not with rows alone. None for the other
    models (the cost model then uses data rows) and when the dataset file is not on this machine."""
    size = _stream_size(config.dataset, config.max_rows) if config.model == "jodie" else None
    if size is None:
        return None
    rows, users, items = size
    return rows * (users + items)


def original_key(config: CasperConfig) -> tuple:
    """What the original model M of a run depends on: runs with equal keys share one trained M per process."""
    return (config.dataset, config.model, config.seed, config.epochs, config.max_rows, config.id_map, config.device,
            config.lstm_embeddings, config.latentcross_cell)


STORED_ORIGINALS = 6
"""How many trained originals :func:`stored_original_path`'s directory keeps (the most recently used):
a JODIE original on Foursquare takes about 0.4 GB."""


def stored_original_path(config: CasperConfig, stream: Stream) -> Path | None:
    """Where M of ``config`` is kept between processes (:mod:`~recunlearn.experiments.stored_models`;
    None when no directory is set): named by :func:`original_key`, the stream and the results version,
    besides the code, torch version and threads every stored model is named by."""
    return stored_models.stored_path("casper-originals", _training_key(config, stream), __name__)


def _training_key(config: CasperConfig, stream: Stream, *which) -> tuple:
    """What names a model of a run between processes: :func:`original_key`, the stream it trains on
    and the results version; ``which`` tells a training in progress (:func:`stored_models.resume_point`)
    of M (``"original"`` and whether TracIn records it) from M' (the run's key)."""
    from .records import results_version

    return (original_key(config), stream.description, len(stream), results_version(config), *which)


def _load_original(path: Path | None, tracin: bool) -> Original | None:
    """The stored M at ``path``; None also for one stored without the TracIn recorder ``tracin`` needs."""
    return stored_models.load(path, lambda stored: isinstance(stored, Original)
                              and not (tracin and stored.tracin is None))


def _original(config: CasperConfig, stream: Stream, tracin: bool = False) -> Original:
    """M of ``config`` (trained once per process and :func:`original_key`, and kept between processes
    where :func:`stored_original_path` says so); ``tracin``: trained with a TracIn recorder (an M
    cached without one is trained again, with it: same weights, bit for bit)."""
    key = original_key(config)
    if key not in _ORIGINALS or (tracin and _ORIGINALS[key].tracin is None):
        path = stored_original_path(config, stream)
        entry = _load_original(path, tracin)
        if entry is None:
            seed_everything(config.seed)
            model = _build(config, stream)
            initial = copy.deepcopy(model)  # M' starts from exactly these weights
            recorder = TracInRecorder(stream, config.epochs) if tracin else None
            seed_everything(config.seed)  # training randomness (dropout) restarts from the seed, as for M'
            resume = stored_models.resume_point("casper-originals", _training_key(config, stream, "original", tracin),
                                                __name__)
            fit = model.fit(stream, checkpoint=recorder, resume=resume)
            entry = Original(model, initial, fit, recorder)
            stored_models.store(path, entry, STORED_ORIGINALS)
        if len(_ORIGINALS) >= 32 and key not in _ORIGINALS:  # a few MB each; keep the most recent ones
            _ORIGINALS.pop(next(iter(_ORIGINALS)))
        _ORIGINALS[key] = entry
    return _ORIGINALS[key]


_ATTACKS: dict[tuple, dict] = {}
"""Rev.Adv attacks of this process by (stream, seed): the fake user does not depend on the model."""


def _revadv_attack(stream: Stream, seed: int) -> tuple[dict, float]:
    """The Rev.Adv attack of ``seed`` on ``stream`` (cached) and the seconds it took here (0 if cached)."""
    key = (stream.description, len(stream), seed)
    start = time.perf_counter()
    attack, _ = process_cache.cached(_ATTACKS, key, 8, lambda: revadv_attack(stream, seed))
    return attack, time.perf_counter() - start


def select_for_run(config: CasperConfig, stream: Stream, rng: np.random.Generator,
                   original: Original) -> tuple[np.ndarray, dict]:
    """The stream positions ``config.selector`` perturbs and what the record notes about the choice
    (the TracIn score of the row; Rev.Adv's attack). Random choices come from ``rng``."""
    if config.selector in TRACIN_SELECTORS:
        variant = TRACIN_SELECTORS[config.selector]
        positions = original.tracin.select(variant, config.k)
        scores = original.tracin.scores(variant)
        by_position = dict(zip(stream.train_positions.tolist(), scores.tolist()))
        return positions, {"tracin": {"variant": variant, "checkpoint_epochs": list(original.tracin.epochs),
                                      "scores": [by_position[p] for p in positions.tolist()],
                                      "checkpoint_seconds": original.tracin.seconds}}
    if config.selector in REVADV_SELECTORS:
        attack, seconds = _revadv_attack(stream, config.seed)
        positions = revadv_row(stream, attack["user"], REVADV_SELECTORS[config.selector], rng)
        return positions, {"revadv": {**attack, "attack_seconds": seconds}}
    return select_rows(stream, config.selector, rng, config.k, config.idag_length(), config.idag_variant), {}


def relabel(stream: Stream, id_map: str) -> tuple[Stream, np.ndarray | None]:
    """The stream a model trains on under ``id_map`` and the run's map ``new_id[fixed_id]`` (None: fixed)."""
    if id_map == "fixed":
        return stream, None
    new_id = first_appearance_map(stream.item, stream.n_items)
    return stream.with_items(new_id[stream.item]), new_id


def compare_runs(original, perturbed, original_stream: Stream, perturbed_stream: Stream,
                 back: tuple[np.ndarray | None, np.ndarray | None] = (None, None), **test) -> pd.DataFrame:
    """One row per test interaction: user, the RLS metrics of M vs M', and both target ranks.
    ``back``: per run, a map ``new_id[fixed_id]`` whose score columns are taken back to fixed ids;
    ``test``: options of both models' test pass (``online`` for JODIE and LatentCross)."""
    parts = []
    for (rows0, target0, s0), (rows1, target1, s1) in zip(original.test_scores(original_stream, **test),
                                                          perturbed.test_scores(perturbed_stream, **test)):
        if not np.array_equal(rows0, rows1):
            raise RuntimeError("test rows of the two runs differ")
        if back[0] is not None:
            s0, target0 = s0[:, torch.as_tensor(back[0], device=s0.device)], np.argsort(back[0])[target0]
        if back[1] is not None:
            s1, target1 = s1[:, torch.as_tensor(back[1], device=s1.device)], np.argsort(back[1])[target1]
        metrics = rls.rls_metrics(rls.rank_lists(s0), rls.rank_lists(s1))
        parts.append(pd.DataFrame({"row": rows0, **metrics,
                                   "rank_original": rls.target_ranks(s0, torch.as_tensor(target0)),
                                   "rank_perturbed": rls.target_ranks(s1, torch.as_tensor(target1))}))
    frame = pd.concat(parts, ignore_index=True)
    users = pd.Series(original_stream.user, index=original_stream.row)
    frame.insert(1, "user", users.loc[frame["row"]].to_numpy())
    return frame


def mrr_groups(per_row: pd.DataFrame, share: float = 0.2) -> pd.Series:
    """User -> ``high`` / ``mid`` / ``low`` by the original model's per-user MRR (top / bottom
    ``share`` of users; ties broken by user id)."""
    per_user = (1.0 / per_row["rank_original"]).groupby(per_row["user"]).mean()
    order = np.lexsort((per_user.index.to_numpy(), -per_user.to_numpy()))
    n, cut = len(per_user), int(np.floor(share * len(per_user)))
    labels = np.array(["mid"] * n, dtype=object)
    labels[order[:cut]] = "high"
    labels[order[n - cut:]] = "low"
    return pd.Series(labels, index=per_user.index)


def summarize_comparison(per_row: pd.DataFrame, perturbed_users: list[int]) -> dict:
    """Means over test interactions of unperturbed users (and over all: ``*_all``), next-item
    metrics of both runs, and group means (Jaccard@10 and AO per MRR group, perturbed users excluded)."""
    keep = ~per_row["user"].isin(perturbed_users)
    out = {m: float(per_row.loc[keep, m].mean()) for m in RLS_METRICS}
    out.update({f"{m}_all": float(per_row[m].mean()) for m in RLS_METRICS})
    for run in ("original", "perturbed"):
        out[f"mrr_{run}"] = rls.mrr(per_row[f"rank_{run}"])
        out[f"recall10_{run}"] = rls.recall_at_k(per_row[f"rank_{run}"], 10)
    groups = mrr_groups(per_row)
    group = per_row["user"].map(groups)
    for name in ("high", "mid", "low"):
        part = per_row[keep & (group == name)]
        out[f"jaccard_{name}"] = float(part["jaccard"].mean()) if len(part) else float("nan")
        out[f"ao_{name}"] = float(part["ao"].mean()) if len(part) else float("nan")
    out["n_test"], out["n_test_kept"] = int(len(per_row)), int(keep.sum())
    return out


@register(CasperConfig)
def run_casper(config: CasperConfig) -> dict:
    """One repetition: original M (shared per seed), perturbation, M' from M's initial weights, RLS."""
    require_device(config.device)  # threads: the library's CPU choice, set around every runner (records.py)
    stream = load_stream(config.dataset, max_rows=config.max_rows)
    start = time.perf_counter()
    model_stream, map0 = relabel(stream, config.id_map)
    entry = _original(config, model_stream, tracin=config.selector in TRACIN_SELECTORS)
    original, initial, fit0 = entry.model, entry.initial, entry.fit
    tracin_seconds = entry.tracin.seconds if entry.tracin is not None else 0.0  # inside fit0's time; not training
    rng = np.random.default_rng(config.seed)
    select_start = time.perf_counter()
    chosen: dict = {}
    if config.selector == "none":
        new_stream, info = stream, None
    else:
        positions, chosen = select_for_run(config, stream, rng, entry)
        new_stream, info = perturb_rows(stream, positions, config.perturbation, rng, config.replacement)
    select_seconds = time.perf_counter() - select_start
    cascade = None
    if info is not None and config.selector == "casper":
        graph = build_idag(stream, config.idag_length(), config.idag_variant)
        roots, scores = cascade_scores(graph)
        by_node = dict(zip(graph.nodes[roots].tolist(), scores.tolist()))
        cascade = [by_node[p] for p in info.positions]
    seed_everything(config.seed)
    perturbed = copy.deepcopy(initial)
    new_model_stream, map1 = relabel(new_stream, config.id_map)
    fit1 = perturbed.fit(new_model_stream, resume=stored_models.resume_point(
        "casper-perturbed", _training_key(config, new_model_stream, record_key(config)), __name__))
    test = {"online": config.test_updates == "online"} if config.model in ONLINE_MODELS else {}
    per_row = compare_runs(original, perturbed, model_stream, new_model_stream,
                           (map0, map1) if config.id_map == "first_appearance" else (None, None), **test)
    metrics = summarize_comparison(per_row, list(info.users) if info else [])
    renumbered = None if map0 is None else int((map0 != map1).sum())  # items whose id differs between the runs
    return {"metrics": metrics, "perturbation": info.to_dict() if info else None, "cascade_scores": cascade,
            "renumbered_items": renumbered,
            "timings": {"train_original_seconds": fit0["train_seconds"] - tracin_seconds,
                        "tracin_checkpoint_seconds": tracin_seconds, "train_perturbed_seconds": fit1["train_seconds"],
                        "select_seconds": select_seconds, "wall_seconds": time.perf_counter() - start},
            "loss_final": {"original": fit0["loss"][-1], "perturbed": fit1["loss"][-1]},
            "stream": stream.description, "seed": config.seed, "device": config.device, **chosen}


# --- grids for notebooks ------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class CasperGrid(Config):
    """Notebook parameters: lists expand into one :class:`CasperConfig` per combination.

    ``only_cached``: runs whose record does not exist are shown as pending instead of computed (the
    paper profile, whose records come from the compute plan): :func:`records.pending_reason`.
    """

    experiment = "casper-rls"

    datasets: tuple[str, ...] = option(("foursquare",), choices=CASPER_DATASETS)
    models: tuple[str, ...] = option(("lstm",), choices=MODELS)
    selectors: tuple[str, ...] = option(("random",), choices=SELECTORS)
    perturbations: tuple[str, ...] = option(("loo",), choices=PERTURBATIONS)
    replacements: tuple[str, ...] = option(("random",), choices=REPLACEMENTS)
    ks: tuple[int, ...] = option((1,), min=1)
    seeds: tuple[int, ...] = option((0, 1, 2), min=0)
    epochs: int = option(50, min=1)
    max_rows: int | None = option(None, min=1)
    device: str = option("cpu", choices=DEVICES)
    only_cached: bool = option(False)

    def validate(self) -> None:
        super().validate()
        for dataset in self.datasets:
            check_max_rows(dataset, self.max_rows)

    def runs(self) -> list[CasperConfig]:
        out = []
        # seeds outside the perturbation axes, so each original model is trained once (see _original);
        # TracIn first, so that M is trained with its recorder before the other selectors reuse it
        selectors = sorted(self.selectors, key=lambda name: name not in TRACIN_SELECTORS)
        for d, m, seed, s, p, r, k in itertools.product(self.datasets, self.models, self.seeds, selectors,
                                                        self.perturbations, self.replacements, self.ks):
            if p == "loo" and r != self.replacements[0]:
                continue  # the replacement item is irrelevant for LOO
            if s != "casper" and r != "random" and "random" in self.replacements:
                continue  # the paper's baselines replace with a random item; only CASPER varies it
            if s == "none" and p != self.perturbations[0]:
                continue  # the control run does not depend on the perturbation
            if s in REVADV_SELECTORS and k != 1:
                continue  # Rev.Adv perturbs one row
            out.append(CasperConfig(dataset=d, model=m, selector=s, perturbation=p,
                                    replacement=r if p != "loo" else "random", k=k, seed=seed, epochs=self.epochs,
                                    max_rows=self.max_rows, device=self.device))
        return out


RUN_KEYS = ["dataset", "model", "selector", "perturbation", "replacement", "k", "seed"]
RUN_METRICS = [*RLS_METRICS, *(f"{m}_all" for m in RLS_METRICS), "mrr_original", "mrr_perturbed",
               "recall10_original", "recall10_perturbed", *(f"{m}_{g}" for m in ("jaccard", "ao")
                                                             for g in ("high", "mid", "low"))]


@dataclasses.dataclass(frozen=True)
class Collected:
    """The runs of a grid as records give them.

    ``runs``: one row per run of the grid, in the grid's order: the config keys (:data:`RUN_KEYS`),
    ``status`` (``computed`` or why the run is pending), and for computed runs the metrics, timings,
    device and commit (pending runs keep NaN in every metric column). ``pending``: one row per run
    without a record: its keys, ``reason`` and record ``key``."""

    runs: pd.DataFrame
    pending: pd.DataFrame

    @property
    def computed(self) -> pd.DataFrame:
        """The rows of ``runs`` that have a record."""
        return self.runs[self.runs["status"] == "computed"]


def collect(grid: CasperGrid, records_dir=None) -> Collected:
    """Every run of ``grid``: its record, computed first when missing (unless ``grid.only_cached``),
    or the reason it is pending (:func:`records.pending_reason` of the grid's device, or ``pending:
    model not implemented``)."""
    rows, pending = [], []
    for config in grid.runs():
        keys = {key: getattr(config, key) for key in RUN_KEYS}
        record = load_record(config, records_dir)
        reason = None
        if config.model not in SEQUENTIAL_MODELS and record is None:
            reason = "pending: model not implemented"
        elif grid.only_cached and record is None:
            reason = pending_reason(grid.device)
        if reason is not None:
            rows.append({**keys, "status": reason})
            pending.append({**keys, "reason": reason, "key": record_key(config)})
            continue
        record = record or run_or_load(config, records_dir)
        rows.append({**keys, "status": "computed", **record["metrics"], **record["timings"],
                     "device": record["device"], "git_commit": record["git_commit"]})
    frame = pd.DataFrame(rows)
    for column in RUN_METRICS:  # pending runs keep NaN in every metric column
        if column not in frame:
            frame[column] = np.nan
    return Collected(frame, pd.DataFrame(pending, columns=[*RUN_KEYS, "reason", "key"]))


__all__ = ["CasperConfig", "CasperGrid", "Figure8Grid", "ScalingConfig", "StatisticsParams", "Collected", "collect",
           "dataset_statistics", "run_scaling_table", "renumbering_table", "DATASET_LABELS"]


# --- Figure 8(b): CASPER's run time against the number of interactions ---------------------------------

@dataclasses.dataclass(frozen=True)
class ScalingConfig(Config):
    """Time to build the IDAG, score every root exactly and pick the top one, on chronological
    prefixes of a dataset (model training excluded, as the paper's Figure 8(b) times it)."""

    experiment = "casper-scaling"
    results_version = "2"  # 2: every repeat's time kept, sizes interleaved across repeats

    dataset: str = option("lastfm", choices=CASPER_DATASETS)
    sizes: tuple[int, ...] = option((10_000, 20_000, 40_000, 80_000, 129_310), min=1,
                                    doc="prefix lengths in raw rows (LastFM-10% has 129,310)")
    idag_max_len: int = option(-1, min=-1, doc="-1: unbounded (LatentCross / JODIE); else L")
    idag_variant: str = option("paper", choices=("paper", "code-rel", "code-2021"))
    repeats: int = option(3, min=1)

    def validate(self) -> None:
        super().validate()
        for size in self.sizes:
            check_max_rows(self.dataset, size, name="SIZES")

    def dataset_files(self):
        return {self.dataset: ("raw",)}


@register(ScalingConfig)
def run_scaling(config: ScalingConfig) -> dict:
    """Build / score / select seconds per prefix (single-threaded numpy): every repeat's total in
    ``repeat_seconds``, and the medians over repeats. Each repeat times every size once, the sizes
    in order, so that drift in the machine's load spreads over all sizes instead of one."""
    from ..perturb.idag import top_roots

    max_len = None if config.idag_max_len == -1 else config.idag_max_len
    streams = {size: load_stream(config.dataset, max_rows=size) for size in config.sizes}
    times: dict[int, list[tuple[float, float, float]]] = {size: [] for size in config.sizes}
    shapes = {}
    for _ in range(config.repeats):
        for size, stream in streams.items():
            t0 = time.perf_counter()
            graph = build_idag(stream, max_len, config.idag_variant)
            t1 = time.perf_counter()
            roots, scores = cascade_scores(graph)
            t2 = time.perf_counter()
            top_roots(roots, scores, 1)
            t3 = time.perf_counter()
            times[size].append((t1 - t0, t2 - t1, t3 - t2))
            shapes[size] = (len(graph), graph.n_edges, len(roots), int(scores.max()))
    rows = []
    for size, stream in streams.items():
        build, score, select = (float(np.median(x)) for x in zip(*times[size]))
        nodes, edges, n_roots, max_score = shapes[size]
        rows.append({"raw_rows": size, "interactions": len(stream), "train_rows": int((~stream.is_test).sum()),
                     "nodes": nodes, "edges": edges, "roots": n_roots, "max_score": max_score,
                     "build_seconds": build, "score_seconds": score, "select_seconds": select,
                     "total_seconds": build + score + select,
                     "repeat_seconds": [float(sum(t)) for t in times[size]]})
    return {"rows": rows, "device": "cpu"}


@dataclasses.dataclass(frozen=True)
class Figure8Grid(CasperGrid):
    """Figure 8 page: the k-perturbation grid (a) plus the CASPER timing on prefixes (b)."""

    scaling_dataset: str = option("lastfm", choices=CASPER_DATASETS)
    scaling_sizes: tuple[int, ...] = option((10_000, 20_000, 40_000, 80_000, 129_310), min=1)
    scaling_repeats: int = option(3, min=1)

    def validate(self) -> None:
        super().validate()
        for size in self.scaling_sizes:
            check_max_rows(self.scaling_dataset, size, name="SCALING_SIZES")

    def scaling_config(self) -> ScalingConfig:
        return ScalingConfig(dataset=self.scaling_dataset, sizes=self.scaling_sizes, repeats=self.scaling_repeats)


def run_scaling_table(config: ScalingConfig, records_dir=None) -> pd.DataFrame:
    """The timing rows of ``config`` (from its record, computed if missing: seconds on any CPU)."""
    return pd.DataFrame(run_or_load(config, records_dir)["rows"])


# --- the authors' item renumbering, measured without training ------------------

def renumbering_artifact(dataset: str, selector: str, perturbation: str, replacement: str = "random",
                         seed: int = 0, max_len: int | None = None) -> dict:
    """How many items change id between the original and the perturbed run under the authors'
    first-appearance numbering, and the "AO floor": AO between the label lists of one fixed ranking
    (items by training popularity) under the two numberings — the best AO a perfectly stable model
    could score when lists are compared label by label, as the authors' JODIE/LatentCross code did."""
    stream = load_stream(dataset)
    new, info = perturb(stream, selector, perturbation, np.random.default_rng(seed), 1, replacement, max_len)
    before, after = first_appearance_map(stream.item, stream.n_items), first_appearance_map(new.item, new.n_items)
    ranking = np.argsort(-stream.train_item_counts(), kind="stable")
    ao = rls.rls_metrics(torch.as_tensor(before[ranking][None]), torch.as_tensor(after[ranking][None]))["ao"][0]
    return {"dataset": dataset, "selector": selector, "perturbation": perturbation, "replacement": replacement,
            "seed": seed, "renumbered_items": int((before != after).sum()), "ao_floor": float(ao)}


def renumbering_table(dataset: str, seeds) -> pd.DataFrame:
    """:func:`renumbering_artifact` for the Table 3 rows (L unbounded, as the authors' JODIE/LatentCross);
    the random baselines over ``seeds``, mean per row."""
    rows = [("casper", "loo", "random"), ("casper", "replace", "random"), ("casper", "replace", "popular"),
            ("casper", "replace", "unpopular"), ("casper", "insert", "unpopular"), ("earliest", "loo", "random"),
            ("random", "loo", "random"), ("latest", "loo", "random"), ("random", "replace", "random")]
    out = []
    for selector, pert, rep in rows:
        for seed in (seeds if selector != "casper" or (pert != "loo" and rep == "random") else seeds[:1]):
            out.append(renumbering_artifact(dataset, selector, pert, rep, seed))
    frame = pd.DataFrame(out)
    return (frame.groupby(["selector", "perturbation", "replacement"], sort=False)
            .agg(renumbered_items=("renumbered_items", "mean"), ao_floor=("ao_floor", "mean"), runs=("seed", "count"))
            .reset_index())
