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

Two implementations of every model (``implementation=``, same parameters and initial weights):
``"reference"`` is the straightforward formulation (``F.cross_entropy`` of the full logits, PyTorch's
dropout, scores of the whole catalogue for every ranking); ``"fast"`` (the default) computes the
same function with less work, equal up to float rounding:

- the training loss is the fused output layer
  (:class:`~recunlearn.models.output_layer.LinearCrossEntropy`: loss and gradients in row blocks
  that stay in cache, oneDNN products, no (rows x |I|) matrix in memory);
- rankings (:meth:`SessionModel.target_ranks`) take the scores in the same row blocks, and a
  candidate list's scores (:meth:`SessionModel.candidate_scores`) are the candidates' dot products
  only;
- dropout masks are drawn as ``uniform >= p`` (the same Bernoulli(1 - p) keep mask and 1 / (1 - p)
  scaling as ``F.dropout``, about five times cheaper to draw on a CPU); the draws differ from the
  reference's, so a fast and a reference run train on other dropout masks.

Model-specific work is described in each model's module.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import torch
from torch import nn
from torch.nn import functional as F

from ..output_layer import blocked_target_ranks, linear, linear_cross_entropy

IMPLEMENTATIONS = ("fast", "reference")
"""Values of the models' ``implementation`` keyword: same model, two ways of computing it."""


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


def check_implementation(value) -> str:
    if value not in IMPLEMENTATIONS:
        raise SessionModelError(f"implementation must be one of {IMPLEMENTATIONS}, got {value!r}")
    return value


def dropout(x: torch.Tensor, p: float, training: bool, fast: bool) -> torch.Tensor:
    """``F.dropout(x, p, training)``; with ``fast`` the keep mask is ``uniform >= p`` drawn by
    ``torch.rand`` from the global RNG (same distribution, other draws)."""
    if not fast:
        return F.dropout(x, p, training)
    if not training or p == 0:
        return x
    return x * torch.rand_like(x).ge_(p).mul_(1.0 / (1.0 - p))


N_BUCKETS = 2
"""Length groups of the fast transformers (:func:`length_buckets`): measured on Games' training windows
(maxlen 20, a third of them full), 2 groups were as fast as 3 or 4 and faster than 1 or 6 (each group
adds its own small operations)."""


def length_buckets(windows: torch.Tensor, n_buckets: int = N_BUCKETS) -> list[tuple[torch.Tensor, int]]:
    """Rows of left-padded ``windows`` (B, L) grouped by length: ``[(rows, width), ...]`` where every
    row of a group has at most ``width`` leading-padding-free positions (its last ``width`` columns hold
    all its items); widths are ``ceil(L * k / n_buckets)``, k = 1..n_buckets, empty groups left out."""
    length = windows.shape[1]
    nonzero = windows != 0
    lengths = torch.where(nonzero.any(1), length - nonzero.int().argmax(1), 0)
    widths = sorted({-(-length * k // n_buckets) for k in range(1, n_buckets + 1)})
    bucket = torch.searchsorted(torch.tensor(widths, device=windows.device), lengths)
    groups = []
    for k, width in enumerate(widths):
        rows = (bucket == k).nonzero()[:, 0]
        if len(rows):
            groups.append((rows, width))
    return groups


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

    def __init__(self, n_items: int, maxlen: int, hyper: dict, implementation: str = "fast"):
        super().__init__()
        self.n_items = positive_int("n_items", n_items)
        self.maxlen = positive_int("maxlen", maxlen)
        self.hyper = check_hyper(self.name, hyper, self.DEFAULTS)
        self.implementation = check_implementation(implementation)

    @property
    def fast(self) -> bool:
        return self.implementation == "fast"

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
        hidden = self.hidden(windows)
        if self.fast and not (torch.is_grad_enabled() and hidden.requires_grad):
            return linear(hidden, self.output.weight, self.output.bias)
        return self.output(hidden)

    def target_ranks(self, windows: torch.Tensor, targets: torch.Tensor, rank_fn) -> torch.Tensor:
        """``rank_fn(scores(windows), targets)`` (no gradient); the fast implementation takes the
        scores in row blocks and never holds the (B x |I|) matrix."""
        with torch.no_grad():
            if not self.fast:
                return rank_fn(self.scores(windows), targets)
            return blocked_target_ranks(self.hidden(windows), self.output.weight, self.output.bias, targets, rank_fn)

    def candidate_scores(self, windows: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        """Scores ``(B, c)`` of the items ``candidates`` (B, c) of each row (no gradient); the fast
        implementation computes only the candidates' dot products."""
        with torch.no_grad():
            if not self.fast:
                return self.scores(windows).gather(1, candidates)
            hidden = self.hidden(windows)
            rows = self.output.weight[candidates]  # (B, c, d)
            return torch.baddbmm(self.output.bias[candidates][..., None], rows, hidden[:, :, None])[..., 0]

    def forward(self, windows: torch.Tensor) -> torch.Tensor:
        return self.scores(windows)

    def training_loss(self, windows: torch.Tensor, targets: torch.Tensor,
                      generator: torch.Generator | None = None) -> torch.Tensor:
        """Full-softmax cross-entropy of the next item at the last position (GRU4Rec, SASRec).

        The authors' loss is ``CrossEntropyLoss(ignore_index=0)`` over a label row that holds the
        target at the last position and 0 elsewhere, i.e. this mean over the batch."""
        return self.next_item_loss(self.hidden(windows), targets)

    def next_item_loss(self, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Mean full-softmax cross-entropy of ``targets`` given states ``hidden`` (B, d)."""
        if self.fast:
            return linear_cross_entropy(hidden, self.output.weight, self.output.bias, targets)
        return F.cross_entropy(self.output(hidden), targets)

    def extra_repr(self) -> str:
        hyper = ", ".join(f"{k}={v}" for k, v in self.hyper.items())
        return f"n_items={self.n_items}, maxlen={self.maxlen}, implementation={self.implementation}, {hyper}"
