"""The CASPER authors' LSTM next-item model (spec §3.1, decision D11), in PyTorch.

- Every row of the full stream (train and test, chronological) is one example: input = the user's
  previous ``max_len - 1`` item tokens (token = item + 1, 0 = padding, left-padded), target = the
  row's item. Training rows train; test rows are scored with earlier test items in their input
  (teacher forcing). A user's first row has an all-padding input.
- Item embeddings ``Embedding(|I|+1, 128, padding_idx=0)`` are **frozen** N(0, 1) vectors: the
  released code embeds every window once before training and detaches it, so "embedding 128" is a
  fixed random input projection. ``trainable_embeddings=True`` is the variant that trains them.
- ``LSTM(128 -> 64)`` from a zero state, the last output -> ``Linear(64 -> |I|+1)``; softmax
  cross-entropy; Adam(lr 1e-3, weight decay 1e-5); 50 epochs of mini-batches of 1,024
  **consecutive** training examples in chronological order, no shuffling (so a deletion or
  insertion shifts the batch boundaries of every later example; the released code's trailing empty
  batch is skipped).
- Scores are the logits of the |I| real items (padding class excluded, D13). Softmax is monotone,
  so the rank list equals the authors' ranking by probability up to ties.
"""

from __future__ import annotations

import time

import numpy as np
import torch
from torch import nn

from ...data.sequences import Stream


def user_windows(user: np.ndarray, item: np.ndarray, length: int) -> np.ndarray:
    """For each row (in the given order): the item tokens (item + 1) of the same user's previous
    ``length`` rows, left-padded with 0, shape (N, length), int64."""
    n = len(user)
    order = np.argsort(user, kind="stable")
    _, starts, counts = np.unique(user[order], return_index=True, return_counts=True)
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - np.repeat(starts, counts)  # position within the user's rows
    where = np.empty(n, dtype=np.int64)
    where[order] = np.arange(n)  # position in the user-grouped order
    tokens = (item[order] + 1).astype(np.int64)
    out = np.zeros((n, length), dtype=np.int64)
    for back in range(1, length + 1):  # column length - back holds the token `back` rows earlier
        ok = rank >= back
        out[ok, length - back] = tokens[where[ok] - back]
    return out


class LSTMNet(nn.Module):
    def __init__(self, n_items: int, dim: int, hidden: int):
        super().__init__()
        self.embedding = nn.Embedding(n_items + 1, dim, padding_idx=0)
        self.lstm = nn.LSTM(dim, hidden, num_layers=1, batch_first=True)
        self.fc = nn.Linear(hidden, n_items + 1)

    def forward(self, windows: torch.Tensor, frozen: bool) -> torch.Tensor:
        if frozen:
            with torch.no_grad():
                x = self.embedding(windows)
        else:
            x = self.embedding(windows)
        out, _ = self.lstm(x)
        return self.fc(out[:, -1])


class LSTMRecommender:
    """See the module docstring. ``generator`` seeds the initial weights; nothing else is random."""

    def __init__(self, n_items: int, generator: torch.Generator | None = None, dim: int = 128, hidden: int = 64,
                 max_len: int = 50, epochs: int = 50, batch_size: int = 1024, lr: float = 1e-3,
                 weight_decay: float = 1e-5, trainable_embeddings: bool = False, device: str = "cpu"):
        self.n_items, self.max_len, self.epochs, self.batch_size = n_items, max_len, epochs, batch_size
        self.lr, self.weight_decay, self.frozen, self.device = lr, weight_decay, not trainable_embeddings, device
        with torch.random.fork_rng(devices=[]):
            if generator is not None:
                torch.manual_seed(int(torch.randint(0, 2**62, (1,), generator=generator)))
            self.net = LSTMNet(n_items, dim, hidden)
        self.net.to(device)

    def _windows(self, stream: Stream) -> np.ndarray:
        return user_windows(stream.user, stream.item, self.max_len - 1)

    def fit(self, stream: Stream) -> dict:
        """Train on the stream's training rows; returns the per-epoch mean loss and the time."""
        windows = self._windows(stream)
        train = stream.train_positions
        x = torch.as_tensor(windows[train], device=self.device)
        y = torch.as_tensor(stream.item[train] + 1, device=self.device)
        params = [p for n, p in self.net.named_parameters() if not (self.frozen and n.startswith("embedding"))]
        optimizer = torch.optim.Adam(params, lr=self.lr, weight_decay=self.weight_decay)
        loss_fn = nn.CrossEntropyLoss()
        curve, start = [], time.perf_counter()
        self.net.train()
        for _epoch in range(self.epochs):
            total = 0.0
            for lo in range(0, len(train), self.batch_size):
                optimizer.zero_grad()
                loss = loss_fn(self.net(x[lo:lo + self.batch_size], self.frozen), y[lo:lo + self.batch_size])
                loss.backward()
                optimizer.step()
                total += loss.item() * len(y[lo:lo + self.batch_size])
            curve.append(total / max(len(train), 1))
        return {"loss": curve, "train_seconds": time.perf_counter() - start}

    @torch.no_grad()
    def test_scores(self, stream: Stream, chunk: int = 2048):
        """Yield ``(source rows, targets, scores)`` for the test rows in stream order; scores (b, |I|)."""
        self.net.eval()
        windows = self._windows(stream)
        test = stream.test_positions
        for lo in range(0, len(test), chunk):
            part = test[lo:lo + chunk]
            logits = self.net(torch.as_tensor(windows[part], device=self.device), True)
            yield stream.row[part], stream.item[part], logits[:, 1:]
