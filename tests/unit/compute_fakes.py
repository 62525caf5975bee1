"""A fake experiment for the compute tests: ``fake-sleep`` sleeps ``seconds`` (or fails) and records a value.

Importing this module registers it; a spawned worker process imports it when it unpickles a
:class:`SleepConfig`, so local workers can run it (``tests/unit`` is on the path they inherit).
"""

from __future__ import annotations

import dataclasses
import time

from recunlearn.experiments.config import Config, option
from recunlearn.experiments.records import RUNNERS

FAKE = "fake-sleep"
FAKE_ON_DEVICE = "fake-sleep-on-device"


@dataclasses.dataclass(frozen=True)
class SleepConfig(Config):
    """One fake run: sleep ``seconds``, then fail if ``fail``, else record ``value = seed + len(label)``."""

    experiment = FAKE

    label: str = option("a")
    seed: int = option(0, min=0)
    seconds: float = option(0.0, min=0.0)
    fail: bool = option(False)


def run_sleep(config: SleepConfig) -> dict:
    time.sleep(config.seconds)
    if config.fail:
        raise RuntimeError("asked to fail")
    return {"metrics": {"value": float(config.seed + len(config.label))}, "timings": {"wall_seconds": config.seconds},
            "device": "cpu"}


@dataclasses.dataclass(frozen=True)
class DeviceSleepConfig(SleepConfig):
    """The fake run with a ``device``, like every real experiment's config."""

    experiment = FAKE_ON_DEVICE

    device: str = option("cpu", choices=("cpu", "cuda"))


RUNNERS[FAKE] = (SleepConfig, run_sleep)
RUNNERS[FAKE_ON_DEVICE] = (DeviceSleepConfig, run_sleep)
