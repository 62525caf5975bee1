"""GRU4Rec as the SRU authors' code runs it: an item embedding, one GRU layer and a full-softmax output.

Follows the authors' code (``models/gru4rec.py``):

- item embedding ``(n_items + 1, embedding_size)`` with ``padding_idx=0`` (row 0 is zero and gets no
  gradient), one batch-first GRU layer ``embedding_size -> hidden_size``, no dropout;
- the GRU runs over the whole left-padded window, padding included: a padded step feeds a zero
  vector, which still moves the GRU state through its biases, so the state depends on how many
  padding steps precede the first item (windows have a fixed length, so this is a function of the
  prefix);
- the hidden state is the GRU output at the last position; logits = ``Linear(hidden_size ->
  n_items + 1)`` of it; the loss is cross-entropy of the next item at the last position;
- 64 / 64 by default (the code's ``hidden_units`` is both sizes); PyTorch's default initialisation.

The fast implementation (:mod:`.base`) differs from the reference only in the output layer and
the rankings: the GRU dominates less than the catalogue-sized output layer, and bucketing windows by
length (the leading padding steps are the same for every window) saved under 5 % of the GRU's time
on Games, measured, not worth a second formulation.
"""

from __future__ import annotations

import torch
from torch import nn

from .base import SessionModel, positive_int, seeded_from


class GRU4Rec(SessionModel):
    """See the module docstring. Hyper-parameters: ``hidden_size`` (64), ``embedding_size`` (64)."""

    name = "gru4rec"
    DEFAULTS = {"hidden_size": 64, "embedding_size": 64}

    def __init__(self, n_items: int, maxlen: int, generator: torch.Generator | None = None,
                 implementation: str = "fast", **hyper):
        super().__init__(n_items, maxlen, hyper, implementation)
        d = positive_int("hidden_size", self.hyper["hidden_size"])
        e = positive_int("embedding_size", self.hyper["embedding_size"])
        with seeded_from(generator):
            self.item_emb = nn.Embedding(self.n_items + 1, e, padding_idx=0)
            self.gru = nn.GRU(e, d, batch_first=True)
            self.output = nn.Linear(d, self.n_items + 1)

    def hidden(self, windows: torch.Tensor) -> torch.Tensor:
        states, _ = self.gru(self.item_emb(self.check_windows(windows)))
        return states[:, -1]

    def item_embeddings(self) -> torch.Tensor:
        return self.item_emb.weight
