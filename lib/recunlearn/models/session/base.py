"""The contract shared by the SRU chapter's session models, and checked hyper-parameters.

``model = SESSION_MODELS[name](n_items, maxlen, generator=..., **hyper)`` is an ``nn.Module`` with

- ``hidden(windows) -> (B, d)``: the hidden state the model predicts the next item from, for
  left-padded windows ``(B, maxlen)`` of item ids (0 = padding, ids 1..n_items);
- ``scores(windows) -> (B, n_items + 1)``: next-item logits ``output(hidden(windows))``; column 0 is
  the padding id, which evaluations exclude from rankings;
- ``item_embeddings() -> (n_items + 1, e)``: the input item-embedding table (row 0 = padding);
- ``training_loss(windows, targets, generator) -> scalar``: the loss of one mini-batch of
  prefix -> next-item pairs (the trainer calls only this);
- ``output``: the ``Linear(d -> n_items + 1)`` output layer, so ``scores = output(hidden)``.

Weights are initialised by PyTorch's default initialisers (as the authors' code does: it applies no
initialiser of its own) inside a forked global RNG seeded from ``generator``, so the same generator
state gives bit-identical initial weights and the global RNG is left untouched.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import torch
from torch import nn


class SessionModelError(ValueError):
    """A wrong model name or hyper-parameter (a ``ValueError``)."""


class UnknownModelError(SessionModelError, KeyError):
    """A model name not in the registry; a ``ValueError`` and, as a failed dict lookup, a ``KeyError``."""

    def __str__(self) -> str:  # KeyError would print the message quoted
        return str(self.args[0]) if self.args else ""


def positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SessionModelError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def probability(name: str, value, *, allow_zero: bool = True, allow_one: bool = False) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    lo, hi = ("[0" if allow_zero else "(0"), ("1]" if allow_one else "1)")
    if ok:
        ok = (value >= 0 if allow_zero else value > 0) and (value <= 1 if allow_one else value < 1)
    if not ok:
        raise SessionModelError(f"{name} must be a number in {lo}, {hi}, got {value!r}")
    return float(value)


def check_hyper(model: str, given: dict, defaults: dict) -> dict:
    """``defaults`` updated by ``given``; an unknown name raises a ValueError listing the allowed ones."""
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise SessionModelError(f"unknown hyper-parameter {unknown[0]!r} for {model}; "
                                f"allowed: {', '.join(defaults)}")
    return {**defaults, **given}


@contextmanager
def seeded_from(generator: torch.Generator | None):
    """A block in which torch's global CPU RNG is seeded from ``generator`` (seed 0 when None) and
    restored afterwards."""
    seed = int(torch.randint(0, 2**62, (1,), generator=generator)) if generator is not None else 0
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


class SessionModel(nn.Module):
    """Base class: subclasses set ``name`` and ``DEFAULTS`` and implement :meth:`hidden`,
    :meth:`item_embeddings` and (when not next-item cross-entropy) :meth:`training_loss`."""

    name = "session"
    DEFAULTS: dict = {}

    def __init__(self, n_items: int, maxlen: int, hyper: dict):
        super().__init__()
        self.n_items = positive_int("n_items", n_items)
        self.maxlen = positive_int("maxlen", maxlen)
        self.hyper = check_hyper(self.name, hyper, self.DEFAULTS)

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    @property
    def hidden_size(self) -> int:
        return int(self.hyper["hidden_size"])

    def check_windows(self, windows: torch.Tensor) -> torch.Tensor:
        if windows.dim() != 2 or windows.shape[1] != self.maxlen:
            raise ValueError(f"{self.name}: windows must have shape (B, {self.maxlen}), got {tuple(windows.shape)}")
        return windows

    def hidden(self, windows: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def item_embeddings(self) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def scores(self, windows: torch.Tensor) -> torch.Tensor:
        """Next-item logits ``(B, n_items + 1)``; column 0 (padding) is never a valid prediction."""
        return self.output(self.hidden(windows))

    def forward(self, windows: torch.Tensor) -> torch.Tensor:
        return self.scores(windows)

    def training_loss(self, windows: torch.Tensor, targets: torch.Tensor,
                      generator: torch.Generator | None = None) -> torch.Tensor:
        """Full-softmax cross-entropy of the next item at the last position (GRU4Rec, SASRec).

        The authors' loss is ``CrossEntropyLoss(ignore_index=0)`` over a label row that holds the
        target at the last position and 0 elsewhere, i.e. this mean over the batch."""
        return nn.functional.cross_entropy(self.scores(windows), targets)

    def extra_repr(self) -> str:
        return f"n_items={self.n_items}, maxlen={self.maxlen}, " + ", ".join(f"{k}={v}" for k, v in self.hyper.items())
