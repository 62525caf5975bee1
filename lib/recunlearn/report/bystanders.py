"""The book's own chapter (questions 1-4): tables, figures and claims from the runs of
:mod:`recunlearn.experiments.bystanders` and :mod:`recunlearn.experiments.stability`; the page
builders are ``report/pages/bystanders_q*.py``.

The claims are this study's hypotheses, not a paper's; they are judged with the same tests and
vocabulary as the papers' claims (``reproduced`` reads "holds in our runs"):

- ``bystanders_unlearning_moves_lists``: unlearning moves bystanders' top 10 beyond what retraining
  from a fresh initialisation alone does (Jaccard@10 of ``unlearn`` below ``reinit-only``);
- ``bystanders_who_matters``: removing the unlearning set moves Retrain's bystanders more than
  removing as many random rows (Jaccard@10 of ``unlearn`` below ``random-rows``);
- ``bystanders_shards_shelter``: SISA, RecEraser and UltraRE move bystanders' lists less than Retrain
  (AO above Retrain's), because the users of unaffected shards keep their exact lists;
- ``bystanders_core_moves_more`` (question 2, who is unlearned): unlearning the most active (core)
  users moves bystanders' top 10 more than unlearning random users, and random users more than the
  least active (edge) ones;
- ``bystanders_disturbance_follows_utility``: the methods rank in the same order by the utility they
  keep (NDCG@20 of the unlearned model) as by how little they move bystanders' top 10 (Jaccard@10):
  the methods that keep more utility disturb less (a rank agreement over the methods' means, per
  dataset, backbone and unlearning set: partly reproduced when the association holds but the orders
  differ in some setting).
"""

from __future__ import annotations

import pandas as pd

from .claims import (INCONCLUSIVE, PARTLY, REPRODUCED, SELF_CHECK, as_kind, band_claim, claims_frame, ordering_claim,
                     paired_differences, rank_agreement_claim, split_waiting, trend_claim)
from .compare import mean_std_table
from .names import MISSING_TEXT, display_name

METRICS = ["ao", "rbo_min", "jaccard", "share_identical_top_k", "ndcg_untruncated_before", "ndcg_untruncated_after"]
CELLS = ["dataset", "model", "selection"]


SHOWN = [("jaccard", ["unlearn", "reinit-only", "random-rows"]), ("ao", ["unlearn"]),
         ("share_identical_top_k", ["unlearn"]), ("ndcg_untruncated_after", ["unlearn"])]
"""What :func:`bystander_table` shows: each metric after the *after* models named (the controls'
Jaccard@10 beside the unlearning's, the contrast the hypotheses test; the utility the unlearned
model keeps, which ``bystanders_disturbance_follows_utility`` ranks the methods by)."""
AFTER_SHORT = {"unlearn": "unlearning", "reinit-only": "re-init. only", "random-rows": "random rows"}


def bystander_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per dataset, model, unlearning set and method, display names, in the papers' order: the
    seeds (``runs``), then mean ± std over seeds of the bystanders' Jaccard@10 after the method's
    unlearning and after each control (re-initialisation only; as many random rows, Retrain only:
    ``—`` for the other methods), and their AO, share of unchanged top 10 and NDCG@20 after the
    unlearning. Columns are two-level (metric, *after* model). Every metric of every run (RBO, NDCG@20
    before) is in the page's runs download."""
    keys = ["dataset", "model", "selection", "method"]
    parts = []
    for metric, controls in SHOWN:
        for control in controls:
            part = runs[runs["control"] == control] if len(runs) else runs
            table = mean_std_table(part, keys, [metric], digits=3)
            if table.empty:
                continue
            if not parts:
                parts.append(table[["runs"]].set_axis(pd.MultiIndex.from_tuples([("", "runs")]), axis=1))
            parts.append(table.drop(columns="runs").set_axis(
                pd.MultiIndex.from_tuples([(display_name(metric), AFTER_SHORT[control])]), axis=1))
    if not parts:
        return pd.DataFrame()
    table = pd.concat(parts, axis=1).reindex(parts[0].index)
    values = table.columns != ("", "runs")
    table.loc[:, values] = table.loc[:, values].fillna(MISSING_TEXT)
    return table


def bystander_claims(runs: pd.DataFrame) -> pd.DataFrame:
    """The hypotheses of the module docstring, each tested on seed-paired runs."""
    unlearn = runs[runs["control"] == "unlearn"] if len(runs) else runs
    retrain = runs[runs["method"] == "retrain"] if len(runs) else runs
    return claims_frame([
        ordering_claim("bystanders_unlearning_moves_lists",
                       "Unlearning moves bystanders' top 10 more than re-initialising and retraining the same "
                       "shards on unchanged data", runs, "control", [("unlearn", "reinit-only")], "jaccard",
                       CELLS + ["method"], higher=False),
        ordering_claim("bystanders_who_matters",
                       "Retrain moves bystanders' top 10 more when the unlearning set is removed than when as many "
                       "random rows are", retrain, "control", [("unlearn", "random-rows")], "jaccard", CELLS,
                       higher=False),
        ordering_claim("bystanders_shards_shelter",
                       "SISA, RecEraser and UltraRE move bystanders' rank lists less than Retrain", unlearn, "method",
                       [("sisa", "retrain"), ("receraser", "retrain"), ("ultrare", "retrain")], "ao", CELLS),
        ordering_claim("bystanders_core_moves_more",
                       "Unlearning core users moves bystanders' top 10 more than unlearning random users, and random "
                       "users more than edge users", unlearn, "selection", [("core", "random"), ("random", "edge")],
                       "jaccard", ["dataset", "model", "method"], higher=False),
        rank_agreement_claim("bystanders_disturbance_follows_utility",
                             "The methods rank in the same order by the utility they keep (NDCG@20 after unlearning) "
                             "as by how little they move bystanders' top 10 (Jaccard@10)", unlearn, "method",
                             "ndcg_untruncated_after", "jaccard", CELLS),
    ])


def utility_figure(runs: pd.DataFrame):
    """The two orders ``bystanders_disturbance_follows_utility`` compares, drawn: NDCG@20 after
    unlearning against bystanders' Jaccard@10, one point per method and unlearning set (mean over
    seeds, ± 1 sd), one panel per backbone; one figure per dataset."""
    from .plots import method_scatter

    return method_scatter(runs[runs["control"] == "unlearn"], "ndcg_untruncated_after", "jaccard",
                          "utility kept against bystanders' top 10 kept", marker="selection",
                          xlabel="NDCG@20 after unlearning", ylabel="bystanders' Jaccard@10", by="dataset")


# --- question 2: who is unlearned ------------------------------------------------------------------------------

CASCADE_CELLS = ["dataset", "model", "method", "seed"]


def cascade_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per unlearning set and backbone: rows removed, the deletion cascade (share of training
    interactions reached) and the bystanders' disturbance (1 − AO) and Jaccard@10, mean ± sd over seeds."""
    if runs.empty:
        return pd.DataFrame()
    keys = ["dataset", "model", "method", "selection", "selection_seed", "removed_rows", "cascade_share"]
    return mean_std_table(runs.assign(cascade_share=runs["cascade_share"].round(4)), keys, ["disturbance", "jaccard"])


def cascade_claims(runs: pd.DataFrame) -> pd.DataFrame:
    """Question 2's hypotheses: within one training seed (the seed fixes both initialisations, so only the
    unlearning set varies), Spearman's ρ over the unlearning sets between what is deleted and the
    bystanders' disturbance, with a one-sided permutation p-value per (dataset, model, method, seed)."""
    return claims_frame([
        trend_claim("bystanders_cascade_predicts",
                    "Unlearning sets whose deleted interactions reach more of the interaction graph (deletion "
                    "cascade) disturb Retrain's bystanders more (1 − AO), within each training seed", runs,
                    "cascade_share", "disturbance", +1, CASCADE_CELLS),
        trend_claim("bystanders_rows_predict",
                    "Unlearning sets with more training rows disturb Retrain's bystanders more (1 − AO), within "
                    "each training seed", runs, "removed_rows", "disturbance", +1, CASCADE_CELLS),
    ])


def cascade_figure(runs: pd.DataFrame):
    """Disturbance (1 − AO) against the deletion cascade, one point per run, one panel per backbone (at
    most three a row, page-wide), coloured by how the set was chosen (the paper's order and the
    colours every other figure gives core, random and edge users), marked by seed, the legend below;
    one figure per dataset."""
    import seaborn as sns

    from .plots import PAGE_WIDTH_IN, display_order, display_values, hue_palette, per_part, set_theme

    palette = hue_palette(runs, "selection")

    def draw(part, title, _):
        set_theme()
        shown = display_values(part.sort_values("cascade_share"), ["model", "selection"])
        panels = display_order(part, "model")
        wrap = min(len(panels), 3)
        grid = sns.relplot(shown, x="cascade_share", y="disturbance", hue="selection", style="seed", col="model",
                           hue_order=[v for v in palette if v in set(shown["selection"])], palette=palette,
                           col_order=panels, col_wrap=wrap if len(panels) > 1 else None, kind="scatter",
                           height=3.0, aspect=PAGE_WIDTH_IN / wrap / 3.0, facet_kws={"sharey": False})
        grid.set_axis_labels("deletion cascade (share)", "bystanders' 1 − AO")
        grid.set_titles(col_template="{col_name}")
        grid.figure.suptitle(title, y=1.02)
        sns.move_legend(grid, "upper center", bbox_to_anchor=(0.5, 0.0), ncol=8, frameon=False)
        return grid

    return per_part(runs, ["dataset"], "disturbance against the deletion cascade", draw)


# --- question 3: stability after unlearning --------------------------------------------------------------------

STABILITY_KEYS = ["dataset", "model", "method", "state", "selector"]
STABILITY_METRICS = ["ao", "ao_shard", "jaccard", "jaccard_shard", "share_identical_top_k"]
SHARDED = [("sisa", "retrain"), ("receraser", "retrain"), ("ultrare", "retrain")]
STABLE_WITHIN = 0.01
"""How far (AO) the unlearned model's stability may be from the learned model's and still count as equal."""


def stability_table(runs: pd.DataFrame) -> pd.DataFrame:
    """AO and Jaccard@10 between the reference and perturbed lists, of all users and of the retrained
    shard's users, mean ± sd over seeds."""
    return mean_std_table(runs, STABILITY_KEYS, STABILITY_METRICS)


def state_differences(runs: pd.DataFrame, metric: str = "ao") -> pd.DataFrame:
    """Seed-paired ``metric`` of the unlearned model minus the learned one, per (dataset, model, method,
    selector): the same interaction is left out of both."""
    cells = ["dataset", "model", "method", "selector"]
    return paired_differences(runs, "state", "unlearned", "learn", metric, cells, waiting=True)


def stability_claims(runs: pd.DataFrame) -> pd.DataFrame:
    """Question 3's hypotheses, each on seed-paired runs (the same interaction left out of every method
    and state of one seed)."""
    cells = ["dataset", "model", "state", "selector"]
    return claims_frame([
        band_claim("stability_unchanged_by_unlearning",
                   f"The model after unlearning is as stable as the learned one: under one left-out interaction, "
                   f"its AO differs from the learned model's by less than {STABLE_WITHIN}",
                   state_differences(runs), "diff", ["dataset", "model", "method"], -STABLE_WITHIN, STABLE_WITHIN,
                   note="AO of the unlearned model minus the learned model's, paired by seed and selector;"),
        ordering_claim("stability_shards_shelter",
                       "SISA, RecEraser and UltraRE lists move less than Retrain's when one interaction is left "
                       "out (AO over all users)", runs, "method", SHARDED, "ao", cells),
        ordering_claim("stability_shard_more_sensitive",
                       "The users of the retrained shard see their lists move more than Retrain's users do (AO of "
                       "the shard's users below Retrain's)", runs, "method", SHARDED, "ao_shard", cells,
                       higher=False),
    ])


def stability_figure(runs: pd.DataFrame):
    """1 − AO under one left-out interaction by method and state: all users, and the retrained shard's users."""
    from .plots import method_bars

    keys = ["dataset", "model", "method", "state", "selector", "seed"]  # one figure per dataset
    long = pd.concat([runs[keys].assign(users="all users", disturbance=1.0 - runs["ao"]),
                      runs[keys].assign(users="retrained shard's users", disturbance=1.0 - runs["ao_shard"])],
                     ignore_index=True)  # a plot needs unique index labels
    long = long.assign(served=long["state"].map({"learn": "learned model", "unlearned": "unlearned model"})
                       + ", " + long["users"])
    return method_bars(long, "disturbance",
                       "One interaction left out: 1 − AO of reference vs perturbed lists (0 = unchanged)",
                       col="model", x="method", hue="served")


# --- question 4: completeness vs disturbance -------------------------------------------------------------------

MIO_CHANCE = 0.5
MIO_WITHIN = 0.05
"""Tolerance of the completeness claims: an MIO AUC within this distance of chance (or of Retrain's)."""


def tradeoff_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per backbone and method: bystanders' disturbance (1 − AO) and Jaccard@10, MIO accuracy and AUC,
    mean ± sd over seeds and unlearning sets."""
    return mean_std_table(runs, ["dataset", "model", "method"], ["disturbance", "jaccard", "mio_accuracy", "mio_auc"])


def oracle_power_claim(runs: pd.DataFrame) -> dict:
    """``tradeoff_oracle_has_power``, the positive control of the completeness claim (a self-check):
    on the Learn model, before anyone is unlearned, the oracle's AUC is more than :data:`MIO_WITHIN`
    above chance, per dataset and backbone (one value per unlearning set and seed). Without it, an
    AUC at chance after unlearning could mean an oracle that tells nothing apart."""
    learn = runs.drop_duplicates(["dataset", "model", "selection", "seed"]) if len(runs) else runs
    if "learn_mio_auc" not in learn:
        learn = learn.assign(learn_mio_auc=pd.Series(dtype=float))
    row = band_claim("tradeoff_oracle_has_power",
                     f"Before unlearning the oracle tells members apart: the Learn model's MIO AUC is more than "
                     f"{MIO_WITHIN} above chance", learn, "learn_mio_auc", ["dataset", "model"],
                     low=MIO_CHANCE + MIO_WITHIN,
                     note="The oracle's AUC on the model trained with the users still in it (Table 1's Learn).")
    return as_kind(row, SELF_CHECK)


def tradeoff_claims(runs: pd.DataFrame) -> pd.DataFrame:
    """Question 4's hypotheses: the exact methods are equally complete (MIO AUC), so the less disturbing
    ones pay nothing in completeness; the disturbance side is question 1's ordering. The completeness
    claim can only hold where the oracle has power (:func:`oracle_power_claim`): established in some
    backbones only, it holds partly at best; established in none (or failing), a completeness that
    would otherwise hold reads inconclusive."""
    cells = ["dataset", "model", "selection"]
    gaps = pd.concat([paired_differences(runs, "method", method, "retrain", "mio_auc", cells,
                                         waiting=True).assign(method=method)
                      for method, _ in SHARDED]) if len(runs) else pd.DataFrame(columns=cells + ["diff", "method"])
    power = oracle_power_claim(runs)
    established = oracle_power_claim(split_waiting(runs)[0])["verdict"]  # on the runs there are, pending aside
    complete = band_claim("tradeoff_complete_at_chance",
                          f"Every exact method is complete: the MIO oracle's AUC on the unlearned users is within "
                          f"{MIO_WITHIN} of chance ({MIO_CHANCE})", runs, "mio_auc", ["dataset", "model", "method"],
                          MIO_CHANCE - MIO_WITHIN, MIO_CHANCE + MIO_WITHIN)
    if established == PARTLY and complete["verdict"] in (REPRODUCED, PARTLY):
        complete.update(verdict=PARTLY, evidence=complete["evidence"] + "; partly: the oracle's power before "
                        "unlearning is established in some backbones only",
                        **{"holds in": complete["holds in"] + "; the oracle's power in some backbones only"})
    elif established not in (REPRODUCED, PARTLY) and complete["verdict"] in (REPRODUCED, PARTLY):
        complete.update(verdict=INCONCLUSIVE, evidence=complete["evidence"] + "; inconclusive: the oracle's power "
                        f"before unlearning is not established ({established})",
                        **{"holds in": complete["holds in"] + "; the oracle's power not established"})
    return claims_frame([
        complete,
        band_claim("tradeoff_no_completeness_cost",
                   f"Sharding costs no completeness: the MIO AUC of SISA, RecEraser and UltraRE "
                   f"is within {MIO_WITHIN} of Retrain's", gaps, "diff", ["dataset", "model", "method"], -MIO_WITHIN,
                   MIO_WITHIN, note="MIO AUC minus Retrain's, paired by unlearning set and seed;"),
        power,
    ])


def tradeoff_figure(runs: pd.DataFrame):
    """MIO AUC (completeness: 0.5 = the oracle cannot tell) against bystanders' disturbance (1 − AO), one
    point per method and backbone: the mean over seeds and unlearning sets with ± 1 sd bars; one figure
    per dataset."""
    from .plots import per_part

    return per_part(runs, ["dataset"], "completeness against bystanders' disturbance", _tradeoff_panels)


def _tradeoff_panels(runs: pd.DataFrame, title: str, _=None):
    from .plots import method_scatter

    chance = (MIO_CHANCE - MIO_WITHIN, MIO_CHANCE + MIO_WITHIN)
    return method_scatter(runs, "disturbance", "mio_auc", title, band=chance,
                          xlabel="bystanders' 1 − AO (disturbance)", ylabel="MIO AUC (0.5 = complete)")
