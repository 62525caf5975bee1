"""Seeding of every random number generator the library touches."""

from __future__ import annotations

import random

import numpy as np
import torch


def seed_everything(seed: int) -> None:
    """Seed python ``random``, numpy's legacy global RNG and torch (CPU and CUDA).

    Library code draws from explicit ``numpy.random.default_rng(seed)`` / ``torch.Generator``
    objects; this only guards against third-party code using the global generators.
    """
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
