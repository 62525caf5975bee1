"""Made-up CASPER runs and page parameters shared by the CASPER page tests."""

from __future__ import annotations

import numpy as np
import pandas as pd
import yaml

from recunlearn import paths
from recunlearn.experiments.casper import RUN_KEYS, RUN_METRICS, CasperGrid, Collected
from recunlearn.experiments.records import record_key

PARAMS = paths.REPO_ROOT / "notebooks" / "params" / "casper"
SELECTOR_AO = {"none": 1.0, "random": 0.90, "earliest": 0.86, "latest": 0.93, "casper": 0.82, "tracin": 0.88,
               "tracin-proxy": 0.89, "revadv-random": 0.91, "revadv-earliest": 0.87}


def params(stem: str, profile: str = "smoke", **changes) -> dict:
    """A page's parameters of ``profile``, with ``changes``."""
    values = yaml.safe_load((PARAMS / f"{stem}.{profile}.yml").read_text())
    if stem.startswith("figure-08"):  # a few small prefixes: the timing runs in well under a second
        values.update(SCALING_DATASET="lastfm", SCALING_SIZES=[1000, 2000, 3000], SCALING_REPEATS=1)
    return {**values, **changes}


def fake_collected(grid: CasperGrid, pending: dict[str, str] | None = None) -> Collected:
    """Made-up runs of ``grid``: AO by selector (:data:`SELECTOR_AO`) minus 0.01 per extra perturbed
    interaction, plus 0.001 per seed; the other metrics follow from it. Runs of the models in
    ``pending`` get that reason instead of metrics."""
    pending = pending or {}
    rows, waiting = [], []
    for config in grid.runs():
        keys = {key: getattr(config, key) for key in RUN_KEYS}
        if config.model in pending:
            rows.append({**keys, "status": pending[config.model]})
            waiting.append({**keys, "reason": pending[config.model], "key": record_key(config)})
            continue
        ao = SELECTOR_AO[config.selector] - 0.01 * (config.k - 1) + (0.001 * config.seed if config.selector != "none"
                                                                     else 0.0)
        jaccard = 1.0 if config.selector == "none" else ao - 0.05
        metrics = {"ao": ao, "rbo_min": ao - 0.01, "rbo_ext": ao - 0.005, "jaccard": jaccard,
                   "mrr_original": 0.2, "mrr_perturbed": 0.2 + 0.001 * config.seed,
                   "recall10_original": 0.3, "recall10_perturbed": 0.3,
                   "jaccard_high": jaccard + 0.02, "jaccard_mid": jaccard, "jaccard_low": jaccard - 0.02,
                   "ao_high": ao, "ao_mid": ao, "ao_low": ao}
        metrics.update({f"{m}_all": metrics[m] for m in ("ao", "rbo_min", "rbo_ext", "jaccard")})
        rows.append({**keys, "status": "computed", **metrics, "device": config.device, "git_commit": "fake"})
    runs = pd.DataFrame(rows)
    for column in RUN_METRICS:
        if column not in runs:
            runs[column] = np.nan
    return Collected(runs, pd.DataFrame(waiting, columns=[*RUN_KEYS, "reason", "key"]))
