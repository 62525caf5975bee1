"""The LSTM's item embeddings, fixed or trained: how much the authors' choice changes its AO.

The authors' LSTM embeds every item as a random N(0, 1) vector that is never trained: the embedding
is a fixed random input projection, and only the recurrent and output layers learn. A run's
``lstm_embeddings`` (:data:`recunlearn.experiments.casper.LSTM_EMBEDDINGS`) picks:

- ``fixed``: the authors' model, this study's default (every other LSTM number of the chapter);
- ``trained``: the same vectors as initial values, trained with the rest of the network.

Paired by (setting, seed), ``fixed`` − ``trained`` is what freezing the embedding adds to (or takes
from) the LSTM's AO.
"""

from __future__ import annotations

from ..experiments.casper import LSTM_EMBEDDINGS
from .casper_variants import Variant

LSTM_EMBEDDING = Variant(
    field="lstm_embeddings", grid_option="lstm_embeddings", section="lstm_embeddings", values=LSTM_EMBEDDINGS,
    labels={"fixed": "fixed random item embeddings (authors', ours)", "trained": "trained item embeddings"},
    short_labels={"fixed": "fixed", "trained": "trained"},
    phrases={"fixed": "the fixed random item embeddings", "trained": "trained item embeddings"},
    settings=(("random", "loo", "random"), ("earliest", "loo", "random"), ("casper", "loo", "random")),
    contrasts=(("fixed", "trained", "freezing the item embeddings"),),
    choice="the LSTM's item embeddings left at their random initial values", noun="LSTM embedding",
    title="the LSTM's AO with fixed or trained item embeddings", models=("lstm",))
"""The LSTM embedding comparison (:class:`~recunlearn.report.casper_variants.Variant`): deletion (LOO)
by Random, Earliest-Random and CASPER."""
