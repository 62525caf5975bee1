"""LatentCross's recurrent cell, LSTM or GRU: how much the authors' choice changes its AO.

The paper calls LatentCross "GRU-based"; the authors' code, the only record of what ran, builds it
on an LSTM cell (h and c of 64 values each, the prediction reading h). A run's ``latentcross_cell``
(:data:`recunlearn.experiments.casper.LATENTCROSS_CELLS`) picks:

- ``lstm``: the authors' model, this study's default (every other LatentCross number of the chapter);
- ``gru``: the paper's description, a GRU cell whose state has the same 128 values, all of them read by
  the prediction (:mod:`recunlearn.models.sequential.latentcross`).

Paired by (setting, seed), ``lstm`` − ``gru`` is what the authors' cell adds to (or takes from)
LatentCross's AO.
"""

from __future__ import annotations

from ..experiments.casper import LATENTCROSS_CELLS
from .casper_variants import Variant

LATENTCROSS_CELL = Variant(
    field="latentcross_cell", grid_option="latentcross_cells", section="latentcross_cell", values=LATENTCROSS_CELLS,
    labels={"lstm": "LSTM cell (authors' code, ours)", "gru": "GRU cell (the paper's description)"},
    short_labels={"lstm": "LSTM cell", "gru": "GRU cell"},
    phrases={"lstm": "the authors' LSTM cell", "gru": "the paper's GRU cell"},
    settings=(("random", "loo", "random"), ("earliest", "loo", "random"), ("casper", "loo", "random")),
    contrasts=(("lstm", "gru", "the authors' LSTM cell instead of a GRU"),),
    choice="LatentCross built on an LSTM cell (the paper describes a GRU)", noun="LatentCross cell",
    title="LatentCross's AO with an LSTM or a GRU cell", models=("latentcross",))
"""The LatentCross cell comparison (:class:`~recunlearn.report.casper_variants.Variant`): deletion (LOO)
by Random, Earliest-Random and CASPER."""
