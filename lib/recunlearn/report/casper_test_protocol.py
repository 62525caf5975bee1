"""The test pass of JODIE and LatentCross, learning online or frozen: how much it changes their AO.

The authors' code tests JODIE and LatentCross by going on learning over the test rows: the model
scores a window of test rows, then takes one optimiser step on it, so the original and the perturbed
model keep drifting apart while they are measured. A run's ``test_updates``
(:data:`recunlearn.experiments.casper.TEST_UPDATES`) picks:

- ``online``: the authors' protocol, this study's default (every other number of the chapter);
- ``frozen``: the parameters fixed at the end of training, the user and item states still following
  the test rows.

The first window of test rows is scored before any step, so the two agree on it, and on a run whose
test rows fit in one window. Paired by (model, setting, seed), ``online`` − ``frozen`` is what the
test-time learning adds to (or takes from) AO.
"""

from __future__ import annotations

import pandas as pd

from ..experiments.casper import ONLINE_MODELS, TEST_UPDATES
from ..models.sequential.latentcross import WINDOW
from .casper_variants import Variant, variant_part

TEST_PROTOCOL = Variant(
    field="test_updates", grid_option="test_updates", section="test_protocol", values=TEST_UPDATES,
    labels={"online": "online steps at test (authors', ours)", "frozen": "parameters frozen at test"},
    short_labels={"online": "online", "frozen": "frozen"},
    phrases={"online": "the online steps", "frozen": "the parameters frozen at test"},
    settings=(("random", "loo", "random"), ("earliest", "loo", "random"), ("casper", "loo", "random")),
    contrasts=(("online", "frozen", "the test-time learning"),),
    choice="JODIE and LatentCross learning online from the test rows (an optimiser step per window)",
    noun="test-protocol", title="AO with the test pass learning online or frozen",
    models=tuple(sorted(ONLINE_MODELS)))
"""The test-protocol comparison (:class:`~recunlearn.report.casper_variants.Variant`): deletion (LOO)
by Random, Earliest-Random and CASPER, Table 3(a)'s rows that every model has."""


def frozen_test_scope(runs: pd.DataFrame, window: int = WINDOW) -> str:
    """Which test rows the two protocols can differ on, from the computed runs of the comparison: the
    rows after the first window of ``window`` (scored before any step) out of each run's test rows
    (the largest count when runs differ); ``pending`` without a computed run."""
    part = variant_part(runs, TEST_PROTOCOL)
    done = part[part["status"] == "computed"] if len(part) else part
    if done.empty or "n_test" not in done or done["n_test"].isna().all():
        return "pending (no computed run yet)"
    n_test = int(done["n_test"].max())
    later = max(0, n_test - window)
    return (f"of the {n_test:,} test rows of each run, the first {min(window, n_test):,} are scored before any "
            f"step, so the two protocols can differ on the other {later:,} ({later / n_test:.0%})")
