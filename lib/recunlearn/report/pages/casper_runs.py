"""What every CASPER page builder shares: validating its grid, collecting its runs, the command that
computes the pending ones, and the tables every run page shows (run counts, the nbval check)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Mapping

import pandas as pd

from ...experiments.casper import CasperGrid, Collected, collect
from ..casper_variants import (Variant, variant_figure, variant_part, variant_table, variant_tests_view,
                               with_protocol_columns)
from . import pending_command, require_one, status_notice, validated


def collect_page(page: str, grid_cls: type[CasperGrid], params: Mapping[str, Any],
                 collected: Collected | None = None, one: tuple[str, ...] = (),
                 what: str = "this page") -> tuple[CasperGrid, Collected, str | None]:
    """``(grid, collected runs, command computing the pending runs)`` of ``page`` at ``params``. The grid
    is validated before any compute, each list parameter of ``one`` (``"models"``, ``"datasets"``) to a
    single value where ``what`` (the page's figures) draws one (:func:`~recunlearn.report.pages.require_one`);
    ``collected`` (e.g. runs made up by a test) replaces :func:`~recunlearn.experiments.casper.collect`."""
    grid = require_one(validated(grid_cls, params), one, what)
    collected = with_protocol_columns(collect(grid) if collected is None else collected, grid.runs())
    return grid, collected, casper_pending_command(page, grid, collected.pending)


def casper_pending_command(page: str, grid: CasperGrid, pending: pd.DataFrame | None) -> str | None:
    """:func:`~recunlearn.report.pages.pending_command` of CASPER's ``pending`` runs that a command can
    compute (not those of a model not implemented)."""
    if pending is not None and len(pending):
        pending = pending[pending["reason"] != "pending: model not implemented"]
    return pending_command(page, grid.device, pending, grid.runs())


def status_counts(runs: pd.DataFrame) -> pd.Series:
    """How many runs are computed and how many pending, by reason."""
    return runs.value_counts("status")


def printed(frame: pd.DataFrame) -> str:
    """A frame as the nbval-checked cell prints it (no index)."""
    return frame.to_string(index=False)


@dataclasses.dataclass(frozen=True)
class VariantSection:
    """What a CASPER page shows of one variant comparison (:mod:`~recunlearn.report.casper_variants`):
    its tables, figure, glued texts, notices and nbval-checked lines, for the page's own dicts."""

    tables: dict
    figures: dict
    values: dict
    notices: dict
    checks: list


def variant_section(runs: pd.DataFrame, variant: Variant, name: str, paper: pd.DataFrame, command: str | None,
                    title: str, what: str, values: dict[str, str]) -> VariantSection:
    """The section of a page whose ``runs`` (every variant, with the protocol columns) include
    ``variant``'s comparison: the tables ``name`` and ``name_tests``, the figure ``name_figure``
    (titled ``title``), the glued ``values``, their pending notices (``what`` names the comparison;
    ``command`` computes its pending runs) and the printed computed runs away from the default
    (none when none is)."""
    part = variant_part(runs, variant)
    varied = part[(part["status"] == "computed") & (part[variant.field] != variant.default)] if len(part) else part
    checks = [printed(varied[["model", "selector", "perturbation", "replacement", "seed", variant.field, "ao"]]
                      .round(2))] if len(varied) else []
    notices = {name: status_notice(f"The {what} comparison", part, command),
               f"{name}_tests": status_notice(f"The {what} tests", part, command),
               f"{name}_figure": status_notice(f"The {what} figure", part, command)}
    return VariantSection(
        tables={name: variant_table(runs, variant, paper), f"{name}_tests": variant_tests_view(runs, variant)},
        figures={f"{name}_figure": lambda: variant_figure(runs, variant, title, paper)},
        values=values, notices=notices, checks=checks)


def variant_sections(page: str, grid: CasperGrid, collected: Collected, paper: pd.DataFrame,
                     scale: str) -> VariantSection:
    """The sections of every variant comparison ``grid`` lists
    (:func:`~recunlearn.report.casper_variants.grid_variants`) in one (their tables, figures, values, notices
    and checks; ``scale`` opens each figure's title), each pending notice naming the command that computes the
    comparison's own pending runs, and the glued ``page_variants`` (JSON: per comparison its section, the
    authors' choice it measures, the version every other number uses and its ``<section>_effect``
    sentence, for the scoreboard):

    - every section glues ``<section>_effect`` (a two-value comparison:
      :func:`~recunlearn.report.casper_variants.variant_text`);
    - ``numbering`` (:mod:`~recunlearn.report.casper_numbering`, three values: its own sentence) also
      ``numbering_gap``; ``test_protocol`` (:mod:`~recunlearn.report.casper_test_protocol`) also
      ``test_protocol_scope``."""
    from ..casper_numbering import numbering_gap_text, numbering_text
    from ..casper_test_protocol import frozen_test_scope
    from ..casper_variants import grid_variants, models_scope, variant_text

    runs = collected.runs
    own = {"numbering": lambda: {"numbering_effect": numbering_text(runs),
                                 "numbering_gap": numbering_gap_text(runs, paper)},
           "test_protocol": lambda: {"test_protocol_scope": frozen_test_scope(runs)}}
    sections, published = [], []
    for variant in grid_variants(grid):
        values = {f"{variant.section}_effect": variant_text(runs, variant)} if len(variant.values) == 2 else {}
        values.update(own.get(variant.section, dict)())
        effect, scope = values[f"{variant.section}_effect"], models_scope(runs, variant)
        if scope and not effect.startswith("pending"):
            values[f"{variant.section}_effect"] = f"{scope}: {effect[0].lower() + effect[1:]}"
        command = casper_pending_command(page, grid, variant_part(collected.pending, variant))
        sections.append(variant_section(runs, variant, variant.section, paper, command,
                                        f"{scale}: {variant.title}", variant.noun, values))
        published.append({"section": variant.section, "choice": variant.choice,
                          "used": variant.labels[variant.default],
                          "finding": sections[-1].values[f"{variant.section}_effect"]})
    tables, figures, values, notices = ({key: value for section in sections
                                         for key, value in getattr(section, part).items()}
                                        for part in ("tables", "figures", "values", "notices"))
    return VariantSection(tables, figures, {**values, "page_variants": json.dumps(published)}, notices,
                          [line for section in sections for line in section.checks])
