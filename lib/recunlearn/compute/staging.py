"""A data directory for a machine that has none: what the selected runs of the plan read.

A lent GPU machine, or any machine that cannot reach the datasets' sources, receives the working tree
and nothing else. ``python -m recunlearn compute ... --stage DIR`` writes into ``DIR`` a copy of every
dataset file the selected runs read (each verified against its checksum first, kept compressed where
this machine holds it compressed), laid out as a local data directory (``RECUNLEARN_DATA=DIR``), and
``DIR/NEEDS``: the optional packages those runs import, one per line, for the caller to bring along.
``tools/stage-device.sh`` and ``tools/device-compute.sh`` use it.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Callable, Iterable

from ..data import registry
from ..experiments.config import Config

OPTIONAL_PACKAGES: dict[str, Callable[[Config], bool]] = {
    "POT": lambda config: getattr(config, "method", None) == "ultrare",
}
"""Package (as pip names it) -> whether a config's run imports it. UltraRE's balanced partition solves an
optimal-transport problem with POT; nothing else needs a package beyond torch, numpy, scipy and pandas
(and PyYAML, which the compute command needs to read the plan: tools/stage-device.sh stages it)."""


@dataclasses.dataclass(frozen=True)
class Staged:
    """What :func:`stage` wrote: the files (relative to the target) with their sizes, and the packages."""

    files: dict[str, int]
    packages: tuple[str, ...]

    @property
    def bytes(self) -> int:
        return sum(self.files.values())


def files_read(configs: Iterable[Config]) -> dict[str, tuple[str, ...]]:
    """Dataset -> the roles of its files that ``configs`` read (``Config.dataset_files``), sorted."""
    found: dict[str, set[str]] = {}
    for config in configs:
        for dataset, roles in getattr(config, "dataset_files", lambda: {})().items():
            found.setdefault(dataset, set()).update(roles)
    return {dataset: tuple(sorted(roles)) for dataset, roles in sorted(found.items())}


def packages_needed(configs: Iterable[Config]) -> tuple[str, ...]:
    """The :data:`OPTIONAL_PACKAGES` that some of ``configs`` import."""
    configs = list(configs)
    return tuple(name for name, needed in OPTIONAL_PACKAGES.items() if any(map(needed, configs)))


def stage(configs: Iterable[Config], target: Path) -> Staged:
    """Copy the dataset files ``configs`` read into ``target`` (a data directory) and write
    ``target/NEEDS``. Each file is located and verified as a run would (a missing or corrupt one raises,
    naming its path, checksum and source) and never downloaded here: stage from a machine that has them."""
    configs = list(configs)
    target = Path(target)
    files = {}
    for dataset, roles in files_read(configs).items():
        for role in roles:
            source = registry.locate(dataset, role, download=False)
            spec = registry.get_file(dataset, role)
            relative = f"{dataset}/{spec.path}" + (".gz" if source.suffix == ".gz" and not spec.path.endswith(".gz")
                                                   else "")
            destination = target / relative
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, destination)
            files[relative] = destination.stat().st_size
    packages = packages_needed(configs)
    target.mkdir(parents=True, exist_ok=True)
    (target / "NEEDS").write_text("".join(f"{name}\n" for name in packages))
    return Staged(files, packages)
