"""Seeding of every random number generator the library touches."""

from __future__ import annotations

import random

import numpy as np
import torch


def seed_everything(seed: int) -> None:
    """Seed python ``random``, numpy's legacy global RNG and torch (CPU and CUDA).

    Also switches torch to deterministic algorithms, so that the same config reruns bit-identically
    on CPU whatever the thread count. On CUDA, cuBLAS additionally needs
    ``CUBLAS_WORKSPACE_CONFIG=:4096:8`` in the environment (``python -m recunlearn compute --device
    cuda`` sets it for its workers).

    Library code draws from explicit ``numpy.random.default_rng(seed)`` / ``torch.Generator``
    objects; this only guards against third-party code using the global generators.
    """
    torch.use_deterministic_algorithms(True, warn_only=True)  # e.g. embedding-gradient sums in a fixed order
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
