"""Work a process keeps for its later runs (trained models, attacks): one bounded cache helper."""

from __future__ import annotations

from typing import Callable, TypeVar

T = TypeVar("T")


def cached(cache: dict, key, capacity: int, compute: Callable[[], T]) -> tuple[T, bool]:
    """``(value, was_cached)``: ``cache[key]``, computed by ``compute()`` when absent; the cache keeps
    the ``capacity`` most recently added values (the oldest is dropped first)."""
    hit = key in cache
    if not hit:
        value = compute()
        while len(cache) >= capacity:
            cache.pop(next(iter(cache)))
        cache[key] = value
    return cache[key], hit
