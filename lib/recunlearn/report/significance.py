"""The statistics behind the claim verdicts: paired one-sided tests (Wilcoxon signed-rank, a paired
t-test where too few pairs can reach the level), two-sided paired tests for tables of differences,
Spearman's rho with a seeded permutation p-value, band tests against both ends of an interval, and
Holm's correction over the tests of one claim. Pure functions of arrays, tested against known
answers; :mod:`recunlearn.report.claims` turns their p-values into verdicts."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pandas as pd

from .verdicts import ALPHA

N_PERMUTATIONS = 9999
NEGLIGIBLE = 1e-6
"""Rounding, relative to the size of the values: two values that differ by no more than this fraction of
the larger are equal (their paired difference is a tie, :func:`difference`), and values whose spread is no
more than this fraction of their mean have no spread (:func:`band_p`)."""

def signed_rank_p(differences) -> tuple[float, float]:
    """One-sided p-values of the Wilcoxon signed-rank test of paired ``differences``: (p that they
    are shifted above 0, p that they are shifted below 0). Zero differences (ties: see :func:`difference`)
    are dropped; with none left both are 1. Exact null distribution for up to 50 pairs
    without ties, normal approximation otherwise (scipy's ``method="auto"``)."""
    from scipy.stats import wilcoxon

    d = np.asarray(differences, dtype=float)
    d = d[np.isfinite(d) & (d != 0)]
    if len(d) == 0:
        return 1.0, 1.0
    up = float(wilcoxon(d, alternative="greater").pvalue)
    down = float(wilcoxon(d, alternative="less").pvalue)
    return up, down


SIGNED_RANK, PAIRED_T = "signed-rank", "paired t"
"""The two paired tests of :func:`paired_p`."""


def signed_rank_reaches(pairs: int, alpha: float = ALPHA) -> bool:
    """Whether a one-sided exact signed-rank test over ``pairs`` non-zero differences can reach
    p < ``alpha`` at all (its smallest p is 1 / 2**pairs: 5 pairs or more at 0.05)."""
    return 0.5 ** pairs < alpha


def difference(a, b):
    """``a - b`` element-wise, with every difference within rounding of the two values (no more than
    :data:`NEGLIGIBLE` of the larger in size) set to exactly 0: a tie, which the paired tests drop or
    count as no difference. Values of any size keep their real differences (shardGF is about 1e-5)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    d = a - b
    return np.where(np.abs(d) <= NEGLIGIBLE * np.maximum(np.abs(a), np.abs(b)), 0.0, d)


def paired_p(differences, alpha: float = ALPHA) -> tuple[float, float, str]:
    """One-sided p-values of paired ``differences`` and the test that gave them: the Wilcoxon
    signed-rank test (:func:`signed_rank_p`) when its non-zero differences are enough for it to
    reach ``alpha`` (:func:`signed_rank_reaches`), else the one-sided t-tests of the differences'
    mean against 0 (:func:`band_p` over ``[0, inf)``, zeros kept: 2 to 4 pairs at 0.05, which the
    signed-rank test could never call significant either way; one pair: (1, 1))."""
    d = np.asarray(differences, dtype=float)
    d = d[np.isfinite(d)]
    if signed_rank_reaches(int(np.count_nonzero(d)), alpha):
        return (*signed_rank_p(d), SIGNED_RANK)
    return (*band_p(d, 0.0, np.inf), PAIRED_T)


def two_sided_p(higher: float, lower: float) -> float:
    """The two-sided p of a paired test from its two one-sided p-values (:func:`paired_p`)."""
    return min(1.0, 2 * min(higher, lower))


ONE_PAIR = "none (1 pair)"
"""The test :func:`paired_two_sided` names for a single pair: no test."""


def paired_two_sided(differences, alpha: float = ALPHA) -> tuple[float, str]:
    """The two-sided p of paired ``differences`` and the test that gave it (:func:`paired_p`, its test
    chosen at ``alpha / 2``, since the doubled one-sided p is what must reach ``alpha``: five pairs
    give the signed-rank test a smallest two-sided p of 1/16, which cannot pass, so a paired t-test
    decides); NaN and :data:`ONE_PAIR` for fewer than two pairs."""
    d = np.asarray(differences, dtype=float)
    d = d[np.isfinite(d)]
    if not testable(len(d)):
        return float("nan"), ONE_PAIR
    higher, lower, test = paired_p(d, alpha / 2)
    return two_sided_p(higher, lower), test


def testable(pairs: int) -> bool:
    """Whether :func:`paired_p` over ``pairs`` pairs is a test at all (a single pair is not: no p)."""
    return pairs >= 2


def format_p(p: float) -> str:
    """A p-value for the page: ``p = 0.0123`` (3 significant digits), ``p < 0.001`` below that."""
    return "p < 0.001" if p < 1e-3 else f"p = {p:.3g}"


def difference_text(p: float, test: str, alpha: float = ALPHA) -> str:
    """``"two-sided paired t, p = 0.0209: a significant difference at α = 0.05"`` (or ``no significant``);
    ``p`` NaN (a single pair): ``"one pair is too few for a test"``."""
    if pd.isna(p):
        return "one pair is too few for a test"
    return (f"two-sided {test}, {format_p(p)}: " + ("a significant difference" if p < alpha else
                                                     "no significant difference") + f" at α = {alpha:g}")


def paired_test_name(used: set[str]) -> str:
    """The test named in a claim row, given the tests :func:`paired_p` used for its links or cells."""
    if used == {PAIRED_T}:
        return "one-sided paired t-test (too few pairs for the signed-rank test to reach the level tested)"
    if PAIRED_T in used:
        return ("one-sided Wilcoxon signed-rank (a paired t-test where the pairs are too few for it to reach the "
                "level tested)")
    return "one-sided Wilcoxon signed-rank"


def _ranks(values: np.ndarray) -> np.ndarray:
    return pd.Series(values).rank(method="average").to_numpy()


def spearman_permutation(x, y, n_permutations: int = N_PERMUTATIONS, seed: int = 0) -> tuple[float, float, float]:
    """Spearman's ρ of ``y`` against ``x`` (seed-level points, ties averaged) and its one-sided
    permutation p-values ``(rho, p_increasing, p_decreasing)``: the share of reassignments of the
    ``y`` values to the points whose ρ is at least (at most) the observed one. Exact (every
    permutation) for up to 7 points; otherwise ``n_permutations`` random ones from a generator
    seeded with ``seed``, with p = (1 + count) / (1 + n_permutations). Constant ``x`` or ``y``:
    ρ = NaN, both p = 1."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan"), 1.0, 1.0
    ranks = centred_ranks(x, y)
    rho = ranks.rho()
    exact = math.factorial(len(y)) <= 5040
    rng = None if exact else np.random.default_rng(seed)
    return (rho, *permutation_p(rho, ranks.null_rhos(exact, n_permutations, rng), exact, n_permutations))


@dataclasses.dataclass(frozen=True)
class CentredRanks:
    """Ranks of x and y (ties averaged) minus their means, and the norm that makes their product ρ."""

    x: np.ndarray
    y: np.ndarray
    scale: float

    def rho(self) -> float:
        return float(self.x @ self.y / self.scale)

    def null_rhos(self, exact: bool, n_permutations: int, rng) -> np.ndarray:
        """ρ after reassigning the y ranks to the points: every permutation (``exact``), else
        ``n_permutations`` random ones drawn from ``rng``."""
        perms = (np.array(list(itertools.permutations(self.y))) if exact
                 else rng.permuted(np.tile(self.y, (n_permutations, 1)), axis=1))
        return perms @ self.x / self.scale


def centred_ranks(x, y) -> CentredRanks:
    rx, ry = _ranks(np.asarray(x, dtype=float)), _ranks(np.asarray(y, dtype=float))
    rx, ry = rx - rx.mean(), ry - ry.mean()
    return CentredRanks(rx, ry, float(np.sqrt((rx ** 2).sum() * (ry ** 2).sum())))


def permutation_p(observed: float, null: np.ndarray, exact: bool, n_permutations: int) -> tuple[float, float]:
    """One-sided p-values (at least, at most ``observed``) from the statistic's ``null`` draws: their
    share when ``exact`` (every permutation), else (1 + count) / (1 + ``n_permutations``)."""
    eps = 1e-12
    up, down = int(np.sum(null >= observed - eps)), int(np.sum(null <= observed + eps))
    if exact:
        return up / len(null), down / len(null)
    return (1 + up) / (1 + n_permutations), (1 + down) / (1 + n_permutations)


def smallest_spearman_p(x, n_permutations: int = N_PERMUTATIONS) -> float:
    """The smallest one-sided p-value :func:`spearman_permutation` can give for points at levels ``x``
    (whatever the values): the chance that a random reassignment of distinct values orders them as
    perfectly as the levels allow, prod(m_i!) / n! for levels of multiplicity m_i (1/6 for three
    points at three levels), no smaller than the Monte Carlo floor 1 / (1 + ``n_permutations``)
    beyond 7 points."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    if len(x) < 3 or np.ptp(x) == 0:
        return 1.0
    _, counts = np.unique(x, return_counts=True)
    exact = math.exp(sum(math.lgamma(m + 1) for m in counts) - math.lgamma(len(x) + 1))
    return exact if math.factorial(len(x)) <= 5040 else max(exact, 1.0 / (1 + n_permutations))


def band_p(values, low: float = -np.inf, high: float = np.inf) -> tuple[float, float]:
    """Whether the mean of ``values`` (seed-level) lies inside ``[low, high]``: ``(p_inside,
    p_outside)``. ``p_inside`` is the larger of the one-sided t-test p-values of mean > low and
    mean < high (two one-sided tests); ``p_outside`` the smaller of those of mean < low and mean >
    high. Fewer than two values: (1, 1). Values without spread (equal up to rounding: a spread within
    :data:`NEGLIGIBLE` of their size, judged as none, where the t statistic is infinite or rounding-sized
    noise would make it huge) get the exact p of the sign-flip test instead: 0.5**n on the side the
    values lie (beyond rounding), 1 on the other. Equal values carry no estimate of the noise, which the
    t-test needs, so they are judged as n signs alone; values with any spread keep the t-test, whose p
    can be far smaller (the discontinuity is deliberate: a measured spread, however small, is evidence
    a sign count is not)."""
    from scipy.stats import t as student

    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) < 2:
        return 1.0, 1.0
    mean = v.mean()
    sd = 0.0 if np.ptp(v) <= NEGLIGIBLE * abs(mean) else v.std(ddof=1)  # equal values: rounding is no spread

    def above(bound):  # p of "mean > bound"
        if np.isinf(bound):
            return 0.0 if bound < 0 else 1.0
        if sd == 0:
            return 0.5 ** len(v) if mean > bound + NEGLIGIBLE * max(abs(mean), abs(bound)) else 1.0
        return float(student.sf((mean - bound) / (sd / np.sqrt(len(v))), len(v) - 1))

    def below(bound):  # p of "mean < bound"
        if np.isinf(bound):
            return 0.0 if bound > 0 else 1.0
        if sd == 0:
            return 0.5 ** len(v) if mean < bound - NEGLIGIBLE * max(abs(mean), abs(bound)) else 1.0
        return float(student.cdf((mean - bound) / (sd / np.sqrt(len(v))), len(v) - 1))

    return max(above(low), below(high)), min(below(low), above(high))


def _outcome(p_claimed: float, p_opposite: float, alpha: float) -> str:
    return "holds" if p_claimed < alpha else "fails" if p_opposite < alpha else "noise"


def holm(p_values, alpha: float = ALPHA) -> list[bool]:
    """Holm's step-down rejections of ``p_values`` at family-wise level ``alpha``: sorted
    ascending, the i-th smallest (from 0) is rejected while ``p < alpha / (m - i)``; the first that
    is not stops the procedure (it and every larger p are kept)."""
    p = np.asarray(list(p_values), dtype=float)
    rejected = np.zeros(len(p), dtype=bool)
    for i, index in enumerate(np.argsort(p, kind="stable")):
        if not p[index] < alpha / (len(p) - i):
            break
        rejected[index] = True
    return rejected.tolist()


def corrected_outcomes(p_claimed, p_opposite, alpha: float = ALPHA) -> tuple[list[str], list[str]]:
    """The outcomes (``holds``, ``fails``, ``noise``) of the several tests of one claim (its cells,
    or its links), and the outcomes uncorrected (each test at ``alpha`` alone).

    When every test passes at ``alpha`` every outcome is ``holds``: the claim is their conjunction,
    and a conjunction of level-``alpha`` tests is itself a level-``alpha`` test (intersection-union),
    so no correction is due. Otherwise a test holds (or fails, in the opposite direction) only when
    it is significant after Holm's correction for the number of tests (:func:`holm`): with 18 cells
    at 0.05, one chance pass is more likely than not, and must not make a claim *partly
    reproduced*, nor one chance reversal make it *not reproduced*."""
    p_claimed, p_opposite = list(p_claimed), list(p_opposite)
    raw = [_outcome(up, down, alpha) for up, down in zip(p_claimed, p_opposite)]
    if all(o == "holds" for o in raw):
        return raw, raw
    holds, fails = holm(p_claimed, alpha), holm(p_opposite, alpha)
    return ["holds" if h else "fails" if f else "noise" for h, f in zip(holds, fails)], raw
