"""What a run costs: the measured seconds of stored records, and an estimate for any config.

Definitions:

- *seconds of a record* (:func:`record_seconds`): the CPU seconds of its runner (``cost.cpu_seconds``;
  wall seconds for a GPU record) when the record has a ``cost``; older records are read from their
  ``timings`` by the experiment's ``legacy`` rule (:data:`COST_RULES`), which for ``cure4rec-exact``
  covers the unlearning stage only and for ``cure4rec-exact-mio`` nothing. The seconds are those of
  the run alone: a run whose shared model (CASPER's original, SRU's full-data model, the exact method's
  learned model of a bystander or stability run) came from its process's cache gets that training
  added back;
- *shared seconds*: the part of a run that the other runs of its batch reuse (training the shared
  model), paid once per batch (:meth:`CostModel.batch_seconds`);
- *data rows* (:func:`data_rows`): lines of the first dataset file a config reads, capped at its
  ``max_rows``; unknown when the file is not on this machine. An experiment's rule may measure its
  size otherwise (``size``; SRU: the interactions of the sessions a run reads times the catalogue, the
  work of its full-softmax output layer; CASPER's JODIE: training rows times users plus items, the
  work of its prediction layer), and that size then stands for the data rows;
- *family* of a config: experiment, device and the experiment's ``fields`` that change the run time
  (model, method, ...); seeds, selections, ratios and the like are assumed not to. Within a family a
  *point* is (dataset, data rows, epochs), the epochs being those configured (a maximum);
- *epochs reached* of a record: the epochs its trainings actually ran, where the experiment's rule
  reads them (``reached``; SRU stops early: the mean ``epochs_run`` of its trainings). The *expected
  epochs* of a config configured for E epochs: the median epochs reached by the records of its
  experiment and device configured for E (any family, any dataset), capped at E; E itself when no
  such record tells (the bound).

The estimate of a config is the first that applies: ``measured`` (median over the records of its
family and point), ``scaled`` (the point of its family with the nearest data rows, times the ratio of
data rows and, where the experiment has an epoch count, of the config's expected epochs to the median
epochs reached by that point's records, or its configured epochs where they do not tell; a GPU config
falls back to CPU records; for an experiment that names a reference experiment, a measured ratio
between the two datasets replaces the ratio of data rows: the median over the other kinds of the same
experiment and model measured on both (e.g. SISA's and Retrain's exact runs of LightGCN on ML-1M and
ML-100K for UltraRE's), else the reference experiment's measurements of the same model on both, e.g.
training the Learn model, else the largest of the reference's ratios for other models measured on both),
``proxy`` (the estimate of a related experiment's config, e.g. the exact run inside an
exact-MIO run), ``sibling`` (the median of the scaled estimates of the other families of its
experiment, e.g. another model), ``default`` (:data:`DEFAULT_SECONDS`). Nothing here is typed in by
hand: every measured number comes from a record.
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import math
import statistics
from typing import Callable, Iterable

from ..data import registry
from ..experiments.config import Config, ConfigError
from ..experiments.casper import cost_size as casper_cost_size
from ..experiments.sru import cached_shard_seconds as sru_cached_shard_seconds
from ..experiments.sru import cost_size as sru_cost_size
from ..experiments.sru import epochs_reached as sru_epochs_reached

DEFAULT_SECONDS = 3600.0
"""Estimate of a run of which nothing comparable was ever measured: one CPU-hour, a placeholder."""


def _timings_sum(*names: str) -> Callable[[dict], float | None]:
    """Legacy rule: the sum of these timings (None unless all are present)."""
    def seconds(record: dict) -> float | None:
        values = [(record.get("timings") or {}).get(name) for name in names]
        return float(sum(values)) if all(isinstance(v, (int, float)) for v in values) else None
    return seconds


def _first_timing(*names: str) -> Callable[[dict], float | None]:
    """Legacy rule: the first of these timings present."""
    def seconds(record: dict) -> float | None:
        timings = record.get("timings") or {}
        return next((float(timings[n]) for n in names if isinstance(timings.get(n), (int, float))), None)
    return seconds


def _no_legacy(record: dict) -> None:
    return None


def _alone(record: dict, seconds: float, wall: float) -> tuple[float, float]:
    return seconds, 0.0


def _casper_alone(record: dict, seconds: float, wall: float) -> tuple[float, float]:
    """(seconds alone, shared) of a CASPER run: one whose wall time is less than its two trainings
    (wall times) reused a cached original, whose training is added back, converted to the unit of
    ``seconds`` by the run's ratio of ``seconds`` to wall time."""
    timings = record.get("timings") or {}
    original = float(timings.get("train_original_seconds") or 0.0)
    perturbed = float(timings.get("train_perturbed_seconds") or 0.0)
    shared = original * (seconds / wall if wall > 0 else 1.0)
    return (seconds + shared if wall < original + perturbed else seconds), shared


def _shared_model(wall_key: str, cached_key: str,
                  also_cached: Callable[[dict], float] | None = None) -> Callable[[dict, float, float], tuple]:
    """Rule of a run whose batch shares one trained model (SRU's full-data model; the exact method's
    learned model of a bystander or stability run): the record's ``timings[wall_key]`` is the shared
    seconds; a run that took the model from its process's cache (``timings[cached_key]``) gets them
    added back, and so do ``also_cached(record)`` wall seconds of other cached work (SRU's cached
    sub-models; charged to every run that shares them, an overestimate). Wall seconds are converted
    to the unit of ``seconds`` by the run's ratio of ``seconds`` to wall time. Records made before
    the model was shared say nothing of it (shared 0)."""
    def alone(record: dict, seconds: float, wall: float) -> tuple[float, float]:
        timings = record.get("timings") or {}
        ratio = seconds / wall if wall > 0 else 1.0
        shared = float(timings.get(wall_key) or 0.0) * ratio
        added = (shared if timings.get(cached_key) else 0.0) + (also_cached(record) * ratio if also_cached else 0.0)
        return seconds + added, shared
    return alone


@dataclasses.dataclass(frozen=True)
class CostRule:
    """How an experiment's records are read for cost (see the module's definitions)."""

    fields: tuple[str, ...] = ()
    legacy: Callable[[dict], float | None] = _no_legacy
    alone: Callable[[dict, float, float], tuple[float, float]] = _alone
    epochs: str | None = None
    proxy: str | None = None
    scale_by: str | None = None
    size: Callable[[Config], int | None] | None = None
    reached: Callable[[dict], float | None] | None = None


_LEARNED_MODEL = _shared_model("learned_wall_seconds", "learned_cached")

COST_RULES: dict[str, CostRule] = {
    "casper-rls": CostRule(("model", "id_map", "latentcross_cell"), _timings_sum("wall_seconds"), _casper_alone,
                           epochs="epochs", size=casper_cost_size),
    "casper-scaling": CostRule(("sizes", "repeats", "idag_max_len", "idag_variant")),
    "cure4rec-learn": CostRule(("model", "max_epochs"), _timings_sum("wall_seconds"), scale_by="cure4rec-learn"),
    "cure4rec-scif": CostRule(("model", "max_epochs", "mio_seeds", "mio_epochs"),
                              _timings_sum("learn_wall_seconds", "retrain_wall_seconds", "scif_seconds",
                                           "mio_seconds"), scale_by="cure4rec-learn"),
    "cure4rec-exact": CostRule(("model", "method", "timing", "n_shards", "combiner", "max_epochs"),
                               _first_timing("unlearn_wall_seconds", "unlearn_sum_seconds"), scale_by="cure4rec-learn"),
    "cure4rec-bystander": CostRule(("model", "method", "control", "timing", "n_shards", "max_epochs"),
                                   _timings_sum("wall_seconds"), _LEARNED_MODEL, scale_by="cure4rec-learn",
                                   proxy="cure4rec-exact"),
    "cure4rec-stability": CostRule(("model", "method", "state", "selector", "timing", "n_shards", "max_epochs"),
                                   alone=_LEARNED_MODEL, scale_by="cure4rec-learn", proxy="cure4rec-exact"),
    "cure4rec-exact-mio": CostRule(("model", "method", "timing", "n_shards", "max_epochs", "mio_seeds", "mio_epochs"),
                                   proxy="cure4rec-exact", scale_by="cure4rec-learn"),
    "sru-unlearning": CostRule(("model", "method", "retrain", "n_shards", "aggregator_epochs"),
                               alone=_shared_model("full_model_wall_seconds", "full_model_cached",
                                                   sru_cached_shard_seconds),
                               epochs="max_epochs", size=sru_cost_size,
                               reached=sru_epochs_reached),
}


def rule_of(experiment: str) -> CostRule:
    return COST_RULES.get(experiment, CostRule())


def record_seconds(record: dict) -> tuple[float, float] | None:
    """(seconds of the run alone, shared seconds) of a stored record, or None when it tells neither."""
    rule = rule_of(record.get("experiment", ""))
    cost = record.get("cost")
    if isinstance(cost, dict):
        wall = cost.get("wall_seconds")
        seconds = wall if (record.get("config") or {}).get("device") == "cuda" else cost.get("cpu_seconds")
    else:
        seconds = wall = rule.legacy(record)
    if not (isinstance(seconds, (int, float)) and isinstance(wall, (int, float))):
        return None
    return rule.alone(record, float(seconds), float(wall))


@functools.lru_cache(maxsize=None)
def file_rows(dataset: str, role: str) -> int | None:
    """Lines of ``dataset``'s file ``role`` where it lies on this machine (plain or gzipped), else None."""
    spec = registry.get_file(dataset, role)
    if spec.pickled:
        return None
    for path in registry.candidate_paths(dataset, spec):
        if path.is_file():
            opener = gzip.open if path.suffix == ".gz" else open
            with opener(path, "rb") as handle:
                return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
    return None


def data_rows(config: Config) -> int | None:
    """Lines of the first dataset file ``config`` reads, capped at its ``max_rows`` (None: unknown)."""
    files = config.dataset_files() if hasattr(config, "dataset_files") else {}
    if not files:
        return None
    dataset, roles = next(iter(files.items()))
    rows = file_rows(dataset, roles[0])
    limit = getattr(config, "max_rows", None)
    return min(rows, limit) if rows is not None and limit is not None else rows


@dataclasses.dataclass(frozen=True)
class Estimate:
    """Seconds of one run alone, of which ``shared_seconds`` a batch pays once; how it was obtained."""

    seconds: float
    shared_seconds: float
    basis: str
    source: str
    on_device: bool = True
    """False when no record of the config's device stands behind it (a GPU config estimated from CPU
    records, or the default placeholder): then it bounds nothing on that device."""
    unscaled: bool = False
    """True when it was scaled from other data without the size of the config's own (its file is not on
    this machine): it can be far off."""


@dataclasses.dataclass(frozen=True)
class _Point:
    dataset: str | None
    rows: int | None
    epochs: int | None
    sized: bool = False  # rows is the rule's work size (e.g. rows x (users + items)), not data rows


def _family(config: Config, device: str | None = None) -> tuple:
    values = config.to_dict()
    fields = tuple((name, _hashable(values.get(name))) for name in rule_of(config.experiment).fields)
    return (config.experiment, device or values.get("device", "cpu"), fields)


def _point(config: Config) -> _Point:
    rule = rule_of(config.experiment)
    rows = rule.size(config) if rule.size is not None else None
    sized = rows is not None
    if rows is None:
        rows = data_rows(config)
    return _Point(getattr(config, "dataset", None), rows, getattr(config, rule.epochs) if rule.epochs else None,
                  sized)


def _hashable(value):
    return tuple(value) if isinstance(value, list) else value


def _ratio(target: float | None, measured: float | None) -> float | None:
    return target / measured if target and measured else None


class CostModel:
    """Measured seconds by family and point, from records; estimates for any config."""

    def __init__(self, records: Iterable[dict]):
        from ..experiments.records import RUNNERS

        self._table: dict[tuple, dict[_Point, list[tuple[float, float]]]] = {}
        self._reached: dict[tuple, dict[_Point, list[float]]] = {}  # epochs reached, by family and point
        self._reached_at: dict[tuple, list[float]] = {}  # epochs reached, by (experiment, device, epochs)
        for record in records:
            seconds = record_seconds(record) if record else None
            entry = RUNNERS.get(record.get("experiment", "")) if record else None
            if seconds is None or entry is None:
                continue
            try:
                config = entry[0].from_dict(record["config"])
            except (ConfigError, KeyError, TypeError):
                continue  # a config today's code cannot read: its timing no longer describes a run
            family, point = _family(config), _point(config)
            self._table.setdefault(family, {}).setdefault(point, []).append(seconds)
            reader = rule_of(config.experiment).reached
            reached = reader(record) if reader is not None else None
            if isinstance(reached, (int, float)) and reached > 0:
                self._reached.setdefault(family, {}).setdefault(point, []).append(float(reached))
                self._reached_at.setdefault((family[0], family[1], point.epochs), []).append(float(reached))

    def _expected_epochs(self, family: tuple, epochs: int | None) -> tuple[float | None, bool]:
        """(expected epochs of a config of the family's experiment and device configured for ``epochs``,
        whether records told them) — see the module's definitions."""
        reached = self._reached_at.get((family[0], family[1], epochs)) if epochs else None
        return (min(statistics.median(reached), epochs), True) if reached else (epochs, False)

    def estimate(self, config: Config) -> Estimate:
        """The estimate of ``config`` (see the module's definitions)."""
        device = getattr(config, "device", "cpu")
        for family_device, note in ((device, ""), ("cpu", " (CPU records)")):
            found = self._from_family(_family(config, family_device), _point(config), note)
            if found is not None:
                return dataclasses.replace(found, on_device=family_device == device)
            if device == "cpu":
                break
        proxy = rule_of(config.experiment).proxy
        if proxy is not None:
            proxied = self.estimate(_proxy_config(config, proxy))
            if proxied.basis != "default":
                return Estimate(proxied.seconds, proxied.shared_seconds, "proxy",
                                f"{proxy}: {proxied.basis}, {proxied.source}", proxied.on_device, proxied.unscaled)
        return self._from_siblings(config) or Estimate(DEFAULT_SECONDS, 0.0, "default", "nothing comparable measured",
                                                       on_device=False)

    def _from_siblings(self, config: Config) -> Estimate | None:
        """The median of the other families' estimates of this experiment and device at ``config``'s
        data, each at its own point (``config`` with the family's fields, e.g. another model: a size
        rule may measure models differently)."""
        experiment, device, _ = _family(config)
        found, devices = [], set()
        for family in self._table:
            if family[0] != experiment or family[1] not in (device, "cpu"):
                continue
            try:
                sibling = config.replace(**{name: (list(value) if isinstance(value, tuple) else value)
                                            for name, value in family[2]})
            except (ConfigError, TypeError):
                continue
            estimate = self._from_family(family, _point(sibling), "")
            if estimate is not None:
                found.append(estimate)
                devices.add(family[1])
        if not found:
            return None
        return Estimate(statistics.median(e.seconds for e in found), statistics.median(e.shared_seconds for e in found),
                        "sibling", f"median of {len(found)} other kind(s) of {experiment}", devices == {device},
                        any(e.unscaled for e in found))

    def _from_family(self, family: tuple, point: _Point, note: str) -> Estimate | None:
        points = self._table.get(family)
        if not points:
            return None
        if point in points:
            values = points[point]
            return Estimate(statistics.median(v[0] for v in values), statistics.median(v[1] for v in values),
                            "measured", f"median of {len(values)} record(s){note}")
        nearest = min(points, key=lambda p: (_log_distance(point.rows, p.rows), -len(points[p])))
        expected, told = self._expected_epochs(family, point.epochs)
        reached = self._reached.get(family, {}).get(nearest)
        ran = statistics.median(reached) if reached and nearest.epochs else nearest.epochs
        rows, epochs = _ratio(point.rows, nearest.rows), _ratio(expected, ran)
        measured = self._measured_ratio(family, point.dataset, nearest.dataset)
        if measured is not None:
            rows, unscaled = measured[0], f" ({measured[1]})"
        else:
            unscaled = "" if rows is not None else ", data rows unknown: not scaled by data"
        factor = (rows or 1.0) * (epochs or 1.0)
        values = points[nearest]
        described = (f"{nearest.dataset}, " + (f"work size {nearest.rows:,}" if nearest.sized and nearest.rows
                                               else f"{nearest.rows or '?'} rows")
                     + (f", {nearest.epochs} epochs" if nearest.epochs else ""))
        if reached and nearest.epochs:
            described += f" (reached {ran:.3g})"
        target = f" (epochs reached: {expected:.3g} of {point.epochs})" if told and epochs is not None else ""
        return Estimate(factor * statistics.median(v[0] for v in values),
                        factor * statistics.median(v[1] for v in values), "scaled",
                        f"{len(values)} record(s) on {described}, x {factor:.3g}{target}{unscaled}{note}",
                        unscaled=bool(unscaled) and measured is None)

    def _measured_ratio(self, family: tuple, target: str | None, source: str | None) -> tuple[float, str] | None:
        """How much slower the same model is on dataset ``target`` than on ``source``, for an experiment
        whose rule names a reference experiment to scale by — the data-size factor that replaces the
        ratio of data rows (training cost is not linear in rows: LightGCN's propagation grows with the
        graph). First the median ratio over the other kinds of the family's own experiment and model
        that were measured on both datasets (the closest measurement of the same work); else the
        reference experiment's ratio for the same model (e.g. training the Learn model); else, for a model
        the reference never measured on both, the largest ratio of another model of the reference measured
        on both (the data rows understate every model's growth where one was measured: ADM has 2.4x
        ML-100K's rows, but its catalogue and graph make WMF's Learn 40x and BPR's 26x slower)."""
        experiment, device, _ = family
        reference = rule_of(experiment).scale_by
        if reference is None or target is None or source is None or target == source:
            return None
        model = _model(family)

        def ratio(seconds: dict[str, list[float]]) -> float | None:
            both = target in seconds and source in seconds
            return statistics.median(seconds[target]) / statistics.median(seconds[source]) if both else None

        kinds = self._seconds_by_dataset(experiment, device, group=lambda f: f, keep=lambda f: _model(f) == model)
        own = [r for kind, seconds in kinds.items() if kind != family and (r := ratio(seconds)) is not None]
        if own:
            measured = statistics.median(own)
            return measured, (f"{experiment} {model}, {len(own)} other kind(s) measured on both: "
                              f"{target} / {source} x {measured:.3g}")
        by_model = self._seconds_by_dataset(reference, device, group=_model)
        measured = ratio(by_model.get(model, {}))
        if measured is not None:
            return measured, f"{reference} {model}: {target} / {source} measured x {measured:.3g}"
        others = {other: r for other, seconds in by_model.items()
                  if other != model and (r := ratio(seconds)) is not None}
        if not others:
            return None
        largest = max(others, key=others.get)
        return others[largest], (f"{model} not measured on both: {reference} {largest}, the largest other model's "
                                 f"{target} / {source} measured x {others[largest]:.3g}")

    def _seconds_by_dataset(self, experiment: str, device: str, group: Callable[[tuple], object],
                            keep: Callable[[tuple], bool] = lambda family: True
                            ) -> dict[object, dict[str, list[float]]]:
        """The measured seconds of the families of ``experiment`` on ``device`` that ``keep`` keeps, by
        dataset, pooled by ``group(family)``."""
        out: dict[object, dict[str, list[float]]] = {}
        for family, points in self._table.items():
            if family[0] == experiment and family[1] == device and keep(family):
                for point, values in points.items():
                    out.setdefault(group(family), {}).setdefault(point.dataset, []).extend(v[0] for v in values)
        return out

    def batch_seconds(self, configs: Iterable[Config]) -> float:
        """Seconds of runs computed one after another in one process (shared work paid once)."""
        estimates = [self.estimate(config) for config in configs]
        if not estimates:
            return 0.0
        return sum(e.seconds - e.shared_seconds for e in estimates) + max(e.shared_seconds for e in estimates)


def _model(family: tuple):
    """The model a family's runs train (None for an experiment without one)."""
    return dict(family[2]).get("model")


def _log_distance(a: int | None, b: int | None) -> float:
    return abs(math.log(a / b)) if a and b else math.inf


def _proxy_config(config: Config, experiment: str) -> Config:
    """``experiment``'s config with the fields it shares with ``config``."""
    from ..experiments.records import RUNNERS

    proxy_cls = RUNNERS[experiment][0]
    allowed = set(proxy_cls.parameter_names())
    return proxy_cls.from_dict({k: v for k, v in config.to_dict().items() if k in allowed})
