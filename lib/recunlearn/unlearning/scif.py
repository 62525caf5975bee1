"""SCIF: selective and collaborative influence-function unlearning (Li et al., ESWA 2023).

A one-step influence-function (Newton) update that removes all training interactions of the
unlearned users ``U_del`` from a trained recommender, without retraining. SCIF has no official code,
so this is a reconstruction from its abstract, CURE4Rec's description and standard influence-function
theory. Only the rows ``S = P[U_del] ∪ Q[I_del]`` move, where ``I_del`` is the set of items the
unlearned users interacted with ("selective": the users; "collaborative": their items, whose Hessian
couples them to every retained user who also interacted with them).

**Objective.** The training data are split into *loss terms* ``z``; ``n`` is
their number and ``ℓ(z; θ)`` the backbone's loss on ``z`` *as the model defines it*, including the
model's own regulariser:

============================  ==================================================  ===============
model                         term ``z`` and ``ℓ(z)``                             ``n``
============================  ==================================================  ===============
WMF ``whole_data``            a user ``u`` with training rows: ``Σ_{i∈R_u}        users with
                              [(1-c0) y_ui² - 2 y_ui] + c0 p_uᵀ(QᵀQ)p_u +         training rows
                              l2_model |p_u|²`` (all of u's observed and missing
                              pairs; deterministic)
WMF ``bce_sampled``           one labelled pair of a fixed seeded sample (each    ``2·|D|·k``
                              positive row repeated ``k = n_negatives`` times,
                              with ``k`` negatives): logistic loss (+ the model's
                              per-batch L2 spread over the positive pairs)
BPR, LightGCN                 one triple ``(u, i, j)`` of a fixed seeded sample   ``|D|·k``
                              (``k`` negatives per positive): ``softplus(y_uj -
                              y_ui) + l2_model/2 (|p_u⁰|² + |q_i⁰|² + |q_j⁰|²)``;
                              LightGCN scores with the embeddings propagated on
                              the *original* training graph
============================  ==================================================  ===============

Sampled losses are made deterministic by drawing the negatives once from ``generator`` (default:
seed 0) exactly as the trainer does (uniform over the user's non-interacted items), so the Hessian
is well defined. With ``1/n`` normalisation the mean loss is exactly what the model minimises per
batch (for WMF whole-data: the per-user mean of the whole-data loss). The SCIF objective is

    L(θ) = (1/n) Σ_z ℓ(z; θ) + (l2/2) |θ_S|²          (``l2`` default 1e-4, on the selected rows)

**Update (deletion form, Koh & Liang 2017).** With the removed terms
``D_del = {z : user(z) ∈ U_del}`` and

    g = Σ_{z ∈ D_del} ∇_S ℓ(z; θ̂),      H = ∇²_S L(θ̂)     (restricted to S, never materialised),

conjugate gradient solves ``(H + δ I) x = g`` (``δ``: the damping, below) and

    θ_S ← θ̂_S + x / n,      all other parameters unchanged.

This is the influence approximation of ``argmin (1/n) Σ_{z ∉ D_del} ℓ(z) + (l2/2)|θ_S|²`` around
θ̂. (Implementation detail: CG is run on the right-hand side ``g / n``; the solution is the same.)
``form="newton"`` instead takes one damped Newton step on the retained objective,
``θ_S ← θ̂_S - (H_rest + δI)^{-1} ∇_S L_rest(θ̂)`` with
``L_rest = (1/n) Σ_{z ∉ D_del} ℓ + (l2/2)|θ_S|²``; it equals the influence form when θ̂ minimises L
and ``H_rest = H``, and it also corrects for a non-converged θ̂.

What the forms do to the unlearned users' own rows: at a stationary θ̂, ``g / n`` restricted to
``p_u`` equals ``-l2 · p_u`` (``p_u`` appears only in u's terms), so the influence form moves the
deleted users' rows very little (first order; it mainly moves the items). In ``L_rest`` only the L2
term acts on ``p_u``, so the newton form scales those rows by ``δ / (l2 + δ)`` (shrinks them toward
0: to 10/11 of their value at δ = 1e-3, l2 = 1e-4), which is the retained objective's minimiser
only as ``δ → 0``.

**Damping** (``damping_rule``). ``"relative"`` (default): ``δ = damping_fraction · μ̂``, where ``μ̂``
estimates the mean eigenvalue ``tr(H) / |θ_S|`` of the Hessian the solve uses with Hutchinson's
estimator (:func:`hutchinson_mean_eigenvalue`: ``damping_probes`` Rademacher probes drawn from
``probe_seed``, through the same Hessian-vector product); a negative ``μ̂`` gives ``δ = 0``. δ thus
follows the Hessian's scale (a loss scaled by c gets a δ scaled by c) and, at the default fraction
0.01, perturbs the solve by about 1 % of a typical curvature. ``"absolute"``: ``δ = damping`` as
given (default 1e-3; SCIF publishes no value; on BPR's Hessian this is about the *largest*
eigenvalue, which shrinks the update several-fold). Either rule gives the *initial* δ: if CG has not
converged after ``cg_iterations`` (or meets non-positive curvature: MF losses are non-convex, so
``H`` need not be PSD) δ is multiplied by ``damping_growth`` and the solve restarted, at most
``damping_attempts`` times in all (by default ×10 per attempt, 4 attempts); the last attempt's
solution is used either way and ``cg_converged`` reports it.

Hessian-vector products use double back-propagation through a leaf tensor that holds only the S
rows, scattered into the frozen tables; for the MF models only the terms that touch S enter the
graph (the others are constant in S). Everything runs on the model's device.

**LightGCN.** The update uses the original graph, on which θ̂ was trained (plain SCIF ignores graph
changes). The returned model serves with the graph of the *retained* data by default
(``serve_graph="retained"``, so the deleted interactions are no longer propagated, as in Retrain);
``serve_graph="original"`` keeps the training graph.

**Time** (the unlearning step only; evaluation and the MIO are not timed) is split into
``gradient_seconds`` (parameter selection, fixed sample, ``g`` and the differentiable gradient of L),
``cg_seconds`` (all HVPs: the Hutchinson probes and the CG solves) and ``update_seconds`` (writing
the rows, plus building the serving graph for LightGCN). Copying the model (``inplace=False``) is not
timed.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from ..models.base import Recommender, TrainingData
from ..models.lightgcn import LightGCN, normalized_adjacency, propagate
from ..models.mf import BPR, WMF
from ..models.trainer import synchronize

FORMS = ("influence", "newton")
SERVE_GRAPHS = ("retained", "original")
DAMPING_RULES = ("relative", "absolute")
DAMPING_FRACTION = 0.01
"""Default fraction of the Hessian's mean eigenvalue used as δ by the relative rule."""
DAMPING_PROBES = 10
"""Default number of Hutchinson probes of the relative rule."""
ABSOLUTE_DAMPING = 1e-3
"""Initial δ of the absolute rule when no ``damping`` is given (SCIF publishes no value)."""


# --- conjugate gradient ---------------------------------------------------------------------------

@dataclass
class CGResult:
    """Solution of ``(A + damping I) x = b``: ``iterations`` matrix-vector products used,
    ``residual`` = |b - (A + damping I) x| / |b| (recursive CG residual), ``converged`` when it is at
    most the tolerance, ``negative_curvature`` when a direction with ``pᵀ(A + δI)p <= 0`` stopped it."""

    x: torch.Tensor
    iterations: int
    residual: float
    converged: bool
    negative_curvature: bool = False


def _dot(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a * b).sum())


def conjugate_gradient(hvp: Callable[[torch.Tensor], torch.Tensor], b: torch.Tensor, damping: float = 0.0,
                       max_iter: int = 100, tol: float = 1e-5) -> CGResult:
    """Solve ``(A + damping I) x = b`` for symmetric ``A`` given only ``hvp(v) = A v``.

    Starts at ``x = 0``; stops when the relative residual ``|r| / |b| <= tol`` or after ``max_iter``
    products. ``b`` may have any shape (``hvp`` maps tensors of that shape to that shape). A
    non-positive curvature ``pᵀ(A + δI)p <= 0`` (``A + δI`` not positive definite) stops the
    iteration with the current iterate and ``negative_curvature=True``.
    """
    x = torch.zeros_like(b)
    b_norm = math.sqrt(_dot(b, b))
    if b_norm == 0.0:
        return CGResult(x, 0, 0.0, True)
    r = b.clone()
    p = r.clone()
    rs = b_norm ** 2
    for iteration in range(1, max_iter + 1):
        ap = hvp(p)
        if damping:
            ap = ap + damping * p
        curvature = _dot(p, ap)
        if not curvature > 0.0:
            return CGResult(x, iteration, math.sqrt(rs) / b_norm, False, True)
        alpha = rs / curvature
        x = x + alpha * p
        r = r - alpha * ap
        rs_new = _dot(r, r)
        if math.sqrt(rs_new) <= tol * b_norm:
            return CGResult(x, iteration, math.sqrt(rs_new) / b_norm, True)
        p = r + (rs_new / rs) * p
        rs = rs_new
    return CGResult(x, max_iter, math.sqrt(rs) / b_norm, False)


# --- damping --------------------------------------------------------------------------------------

def hutchinson_mean_eigenvalue(hvp: Callable[[torch.Tensor], torch.Tensor], like: torch.Tensor, probes: int,
                               generator: torch.Generator) -> tuple[float, float]:
    """Hutchinson's estimate of the mean eigenvalue ``tr(A) / n`` of a symmetric ``A`` given only
    ``hvp(v) = A v`` (``n = like.numel()``; vectors have ``like``'s shape, dtype and device).

    The estimate is the mean over ``probes`` Rademacher vectors ``v`` (independent ±1 entries, drawn
    on the CPU from ``generator``) of ``vᵀAv / n``, unbiased since ``E[v vᵀ] = I``. Returns the
    estimate and its standard error (std of the per-probe values / √probes; 0 for one probe).
    """
    if probes < 1:
        raise ValueError(f"need at least one probe, got {probes}")
    values = []
    for _ in range(probes):
        signs = torch.randint(0, 2, like.shape, generator=generator).to(like.dtype) * 2 - 1
        v = signs.to(like.device)
        values.append(_dot(v, hvp(v)) / like.numel())
    per_probe = np.array(values)
    stderr = float(per_probe.std(ddof=1) / math.sqrt(probes)) if probes > 1 else 0.0
    return float(per_probe.mean()), stderr


@dataclass
class Damping:
    """The initial damping δ of a solve and how it was chosen (see the module docstring). For the
    absolute rule ``fraction``, ``mean_eigenvalue`` and ``mean_eigenvalue_stderr`` are None and
    ``probes`` is 0."""

    rule: str
    damping: float
    fraction: float | None = None
    probes: int = 0
    mean_eigenvalue: float | None = None
    mean_eigenvalue_stderr: float | None = None


def check_damping(rule: str, damping: float | None, fraction: float, probes: int) -> None:
    """``ValueError`` unless the arguments of :func:`choose_damping` are valid."""
    if rule not in DAMPING_RULES:
        raise ValueError(f"damping_rule must be one of {DAMPING_RULES}, got {rule!r}")
    if rule == "absolute" and damping is not None and damping < 0:
        raise ValueError(f"need damping >= 0, got {damping}")
    if rule == "relative" and damping is not None:
        raise ValueError("damping is the absolute rule's δ; the relative rule takes damping_fraction")
    if rule == "relative" and (fraction < 0 or probes < 1):
        raise ValueError(f"need damping_fraction >= 0 and damping_probes >= 1, got {fraction}, {probes}")


def choose_damping(hvp: Callable[[torch.Tensor], torch.Tensor], like: torch.Tensor, rule: str = "relative",
                   damping: float | None = None, fraction: float = DAMPING_FRACTION, probes: int = DAMPING_PROBES,
                   probe_seed: int = 0) -> Damping:
    """δ by ``rule``: ``"relative"``: ``fraction · max(μ̂, 0)`` with ``μ̂`` the Hutchinson estimate
    of the mean eigenvalue of the operator ``hvp`` (``probes`` probes from ``probe_seed``);
    ``"absolute"``: ``damping`` (default :data:`ABSOLUTE_DAMPING`). ``damping`` is accepted by the
    absolute rule only, so a δ is never silently ignored."""
    check_damping(rule, damping, fraction, probes)
    if rule == "absolute":
        return Damping(rule, float(ABSOLUTE_DAMPING if damping is None else damping))
    mean, stderr = hutchinson_mean_eigenvalue(hvp, like, probes, torch.Generator().manual_seed(probe_seed))
    return Damping(rule, fraction * max(mean, 0.0), fraction, probes, mean, stderr)


# --- the objective --------------------------------------------------------------------------------

def _isin(values: torch.Tensor, members: torch.Tensor) -> torch.Tensor:
    return torch.isin(values, members)


def model_kind(model: Recommender) -> str:
    """``"wmf_whole_data"``, ``"wmf_bce"``, ``"bpr"`` or ``"lightgcn"``; ``TypeError`` for other models."""
    if isinstance(model, LightGCN):
        return "lightgcn"
    if isinstance(model, WMF):
        return "wmf_whole_data" if model.loss == "whole_data" else "wmf_bce"
    if isinstance(model, BPR):
        return "bpr"
    raise TypeError(f"SCIF supports WMF, BPR and LightGCN models, got {type(model).__name__}")


class ScifObjective:
    """The SCIF objective of ``model`` on ``data`` as a function of the selected rows ``theta``
    (``(len(users_s) + len(items_s), dim)``: user rows first, then item rows); see the module
    docstring for the loss terms and ``n``.

    ``loss_sum(theta, part)`` is ``Σ ℓ(z)`` over the terms of ``part``: ``"deleted"`` (terms of the
    unlearned users), ``"all"`` or ``"retained"`` (restricted to the terms that depend on S, so its
    value differs from the full sum by a constant). ``objective(theta, part)`` adds the ``1/n``
    normalisation and the L2 term.
    """

    def __init__(self, model: Recommender, data: TrainingData, deleted_users: torch.Tensor,
                 generator: torch.Generator | None = None, l2: float = 1e-4):
        self.model, self.data, self.l2 = model, data, l2
        self.kind = model_kind(model)
        device = model.user_embedding.device
        self.deleted_users = torch.unique(torch.as_tensor(deleted_users, dtype=torch.long, device=device))
        rows = data.rows_of_users(self.deleted_users)
        self.users_s = self.deleted_users
        self.items_s = torch.unique(data.items[rows])
        self.n_users_s = len(self.users_s)
        with torch.no_grad():
            self.theta0 = torch.cat([model.user_embedding[self.users_s], model.item_embedding[self.items_s]]).detach()
        if generator is None:
            generator = torch.Generator(device=device).manual_seed(0)

        if self.kind == "wmf_whole_data":
            # the trainer's whole-data batches cover the users with training rows ("members") only
            member = data.indptr[1:] > data.indptr[:-1]
            self.n = int(member.sum())
            touching = _isin(data.items, self.items_s)  # u ∈ U_del implies i ∈ I_del
            deleted_user_mask = torch.zeros(data.n_users, dtype=torch.bool, device=device)
            deleted_user_mask[self.deleted_users] = True
            self._rows = {"all": torch.nonzero(touching).flatten(), "deleted": rows,
                          "retained": torch.nonzero(touching & ~deleted_user_mask[data.users]).flatten()}
            self._user_sets = {"all": torch.nonzero(member).flatten(),
                               "deleted": torch.nonzero(member & deleted_user_mask).flatten(),
                               "retained": torch.nonzero(member & ~deleted_user_mask).flatten()}
            return

        k = model.n_negatives
        users = data.users.repeat_interleave(k)
        positives = data.items.repeat_interleave(k)
        negatives = data.sample_negatives(users, generator)
        self.sample = (users, positives, negatives)
        deleted = _isin(users, self.deleted_users)
        if self.kind == "lightgcn":
            self.n = len(users)
            touching = torch.ones_like(deleted)
            adjacency = model.adjacency if model.adjacency is not None else normalized_adjacency(data)
            dtype = model.user_embedding.dtype
            self.adjacency = adjacency if adjacency.dtype == dtype else adjacency.to(dtype)
        elif self.kind == "bpr":
            self.n = len(users)
            touching = _isin(positives, self.items_s) | _isin(negatives, self.items_s)
        else:  # wmf_bce: a positive and a negative pair per row; masks over the 2·len(users) pairs
            self.n = 2 * len(users)
            touching = torch.cat([_isin(positives, self.items_s), deleted | _isin(negatives, self.items_s)])
            deleted = torch.cat([deleted, deleted])
        self._terms = {"all": torch.nonzero(touching).flatten(), "deleted": torch.nonzero(deleted).flatten(),
                       "retained": torch.nonzero(touching & ~deleted).flatten()}

    @property
    def n_parameters(self) -> int:
        return self.theta0.numel()

    def tables(self, theta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The ego user and item tables with the S rows replaced by ``theta`` (differentiable)."""
        users = self.model.user_embedding.detach().index_copy(0, self.users_s, theta[: self.n_users_s])
        items = self.model.item_embedding.detach().index_copy(0, self.items_s, theta[self.n_users_s:])
        return users, items

    def loss_sum(self, theta: torch.Tensor, part: str = "all") -> torch.Tensor:
        """``Σ ℓ(z; theta)`` over the terms of ``part`` (``"all"``, ``"deleted"``, ``"retained"``)."""
        p, q = self.tables(theta)
        model = self.model
        if self.kind == "wmf_whole_data":
            rows, user_set = self._rows[part], self._user_sets[part]
            y = (p[self.data.users[rows]] * q[self.data.items[rows]]).sum(1)
            loss = ((1.0 - model.c0) * y.square() - 2.0 * y).sum()
            p_set = p[user_set]
            loss = loss + model.c0 * ((p_set.T @ p_set) * (q.T @ q)).sum()
            if model.l2:
                loss = loss + model.l2 * p_set.square().sum()
            return loss
        terms = self._terms[part]
        users, positives, negatives = self.sample
        if self.kind == "wmf_bce":
            n_rows = len(users)
            is_negative = terms >= n_rows
            row = torch.where(is_negative, terms - n_rows, terms)
            item = torch.where(is_negative, negatives[row], positives[row])
            p_rows = p[users[row]]
            logits = (p_rows * q[item]).sum(1)
            loss = F.binary_cross_entropy_with_logits(logits, (~is_negative).to(logits.dtype), reduction="sum")
            if model.l2:  # the per-batch sum l2·Σ_rows |p_u|² as a mean-loss term over the positive pairs
                rows_per_batch = model.batch_size * model.n_negatives
                loss = loss + 2 * rows_per_batch * model.l2 * p_rows[~is_negative].square().sum()
            return loss
        u, i, j = users[terms], positives[terms], negatives[terms]
        if self.kind == "lightgcn":
            final = propagate(self.adjacency, torch.cat([p, q]), model.n_layers)
            user_final, item_final = final[: model.n_users], final[model.n_users:]
        else:
            user_final, item_final = p, q
        eu = user_final[u]
        loss = F.softplus((eu * item_final[j]).sum(1) - (eu * item_final[i]).sum(1)).sum()
        if model.l2:
            loss = loss + 0.5 * model.l2 * (p[u].square().sum() + q[i].square().sum() + q[j].square().sum())
        return loss

    def objective(self, theta: torch.Tensor, part: str = "all") -> torch.Tensor:
        """``(1/n) loss_sum(theta, part) + (l2/2)|theta|²``."""
        return self.loss_sum(theta, part) / self.n + 0.5 * self.l2 * theta.square().sum()


# --- the influence step ---------------------------------------------------------------------------

@dataclass
class InfluenceStep:
    """What :func:`influence_step` computed: the update ``delta`` of the selected parameters, |g|,
    |∇ objective(θ̂)|, the initial damping and how it was chosen, the CG attempts (one dict per
    damping tried) and the time split."""

    delta: torch.Tensor
    gradient_norm: float
    objective_gradient_norm: float
    damping: Damping
    attempts: list[dict]
    gradient_seconds: float
    cg_seconds: float


def influence_step(theta0: torch.Tensor, removed_loss_sum: Callable[[torch.Tensor], torch.Tensor],
                   objective: Callable[[torch.Tensor], torch.Tensor], n: int, *, form: str = "influence",
                   damping_rule: str = "relative", damping: float | None = None,
                   damping_fraction: float = DAMPING_FRACTION, damping_probes: int = DAMPING_PROBES,
                   probe_seed: int = 0, cg_iterations: int = 100, cg_tolerance: float = 1e-5,
                   damping_growth: float = 10.0, damping_attempts: int = 4, device=None) -> InfluenceStep:
    """The SCIF update of parameters ``theta0`` for a generic objective.

    ``objective(θ)`` is the function whose Hessian ``H`` is used (the full ``L`` for
    ``form="influence"``, the retained ``L_rest`` for ``"newton"``); ``removed_loss_sum(θ)`` is
    ``Σ_{z ∈ D_del} ℓ(z; θ)``. Returns ``delta`` solving ``(H + δI) delta = rhs`` by CG with
    ``rhs = ∇removed_loss_sum(θ̂) / n`` (influence) or ``rhs = -∇objective(θ̂)`` (newton), with the
    initial δ of :func:`choose_damping` (on ``H``) and the damping schedule of the module
    docstring; the new parameters are ``theta0 + delta``.
    """
    if form not in FORMS:
        raise ValueError(f"form must be one of {FORMS}, got {form!r}")
    check_damping(damping_rule, damping, damping_fraction, damping_probes)
    device = theta0.device if device is None else device
    synchronize(device)
    start = time.perf_counter()
    theta = theta0.detach().clone().requires_grad_(True)
    g = torch.autograd.grad(removed_loss_sum(theta), theta)[0]
    grad_objective = torch.autograd.grad(objective(theta), theta, create_graph=True)[0]
    rhs = g / n if form == "influence" else -grad_objective.detach()
    gradient_norm, objective_gradient_norm = float(g.norm()), float(grad_objective.detach().norm())
    synchronize(device)
    gradient_seconds = time.perf_counter() - start

    def hvp(vector: torch.Tensor) -> torch.Tensor:
        return torch.autograd.grad(grad_objective, theta, vector, retain_graph=True)[0]

    start = time.perf_counter()
    initial = choose_damping(hvp, rhs, damping_rule, damping, damping_fraction, damping_probes, probe_seed)
    attempts, current_damping = [], initial.damping
    for attempt in range(damping_attempts):
        solution = conjugate_gradient(hvp, rhs, current_damping, cg_iterations, cg_tolerance)
        attempts.append({"damping": current_damping, "iterations": solution.iterations,
                         "residual": solution.residual, "converged": solution.converged,
                         "negative_curvature": solution.negative_curvature})
        if solution.converged or attempt == damping_attempts - 1:
            break
        current_damping = current_damping * damping_growth if current_damping > 0 else 1e-6
    synchronize(device)
    cg_seconds = time.perf_counter() - start
    return InfluenceStep(solution.x.detach(), gradient_norm, objective_gradient_norm, initial, attempts,
                         gradient_seconds, cg_seconds)


# --- SCIF -----------------------------------------------------------------------------------------

@dataclass
class ScifResult:
    """The unlearned ``model`` and what the update did.

    ``update_norm`` = |θ_S,new - θ̂_S| (Frobenius); ``gradient_norm`` = |g| (sum of the removed
    terms' gradients); ``objective_gradient_norm`` = |∇_S L(θ̂)| of the objective the Hessian is
    taken of (0 at a minimiser of L: a stationarity diagnostic); ``cg_iterations`` counts the HVPs
    of all damping attempts, ``cg_residual``/``cg_converged``/``damping`` describe the last one;
    ``initial_damping`` is the rule's δ (``damping_rule``; relative: ``damping_fraction`` × the
    Hutchinson ``mean_eigenvalue`` ± ``mean_eigenvalue_stderr`` from ``damping_probes`` extra HVPs).
    """

    model: Recommender
    form: str = "influence"
    n_deleted_users: int = 0
    n_selected_items: int = 0
    n_parameters: int = 0
    n_terms: int = 0
    update_norm: float = 0.0
    gradient_norm: float = 0.0
    objective_gradient_norm: float = 0.0
    cg_iterations: int = 0
    cg_residual: float = 0.0
    cg_converged: bool = True
    damping: float = 0.0
    damping_attempts: int = 0
    damping_rule: str = "relative"
    damping_fraction: float | None = None
    damping_probes: int = 0
    mean_eigenvalue: float | None = None
    mean_eigenvalue_stderr: float | None = None
    initial_damping: float = 0.0
    attempts: list[dict] = field(default_factory=list)
    gradient_seconds: float = 0.0
    cg_seconds: float = 0.0
    update_seconds: float = 0.0

    @property
    def total_seconds(self) -> float:
        """Unlearning time: gradient + CG solve + update (evaluation excluded)."""
        return self.gradient_seconds + self.cg_seconds + self.update_seconds

    def as_dict(self) -> dict:
        """Every field but the model, plus ``total_seconds``."""
        out = {name: getattr(self, name) for name in self.__dataclass_fields__ if name != "model"}
        out["total_seconds"] = self.total_seconds
        return out


def copy_model(model: Recommender) -> Recommender:
    """A deep copy of ``model`` that shares (does not copy) a LightGCN's constant graph."""
    adjacency = getattr(model, "adjacency", None)
    memo = {} if adjacency is None else {id(adjacency): adjacency}
    return copy.deepcopy(model, memo)


def remove_users(data: TrainingData, users: torch.Tensor) -> TrainingData:
    """``data`` without the training rows of ``users`` (ids and table sizes unchanged), on its device."""
    users = torch.as_tensor(users, dtype=torch.long, device=data.device)
    keep = ~torch.isin(data.users, users)
    kept_users, kept_items = data.users[keep], data.items[keep]
    counts = torch.bincount(kept_users, minlength=data.n_users)
    indptr = torch.cat([counts.new_zeros(1), torch.cumsum(counts, 0)])
    return TrainingData(data.n_users, data.n_items, kept_users, kept_items, indptr, data.keys[keep])


def scif_unlearn(model: Recommender, data_all: TrainingData, deleted_users, *, damping_rule: str = "relative",
                 damping: float | None = None, damping_fraction: float = DAMPING_FRACTION,
                 damping_probes: int = DAMPING_PROBES, probe_seed: int = 0,
                 cg_iterations: int = 100, cg_tolerance: float = 1e-5, l2: float = 1e-4,
                 generator: torch.Generator | None = None, form: str = "influence",
                 damping_growth: float = 10.0, damping_attempts: int = 4, serve_graph: str = "retained",
                 inplace: bool = False) -> ScifResult:
    """Unlearn every training interaction of ``deleted_users`` from ``model`` (trained on
    ``data_all``) with one SCIF influence update of the rows of those users and their items.

    Returns a :class:`ScifResult` whose ``model`` is a modified **copy** (``inplace=False``, the
    default; the input model is untouched) or ``model`` itself (``inplace=True``). The update is
    ``θ_S ← θ̂_S + (H + δI)^{-1} g / n`` (see the module docstring for ``g``, ``H``, ``n``, the
    ``newton`` form and the damping rules: ``damping_rule="relative"`` with ``damping_fraction``
    and ``damping_probes`` / ``probe_seed``, or ``"absolute"`` with ``damping``). ``generator``
    draws the fixed negative sample of sampled losses (default: a generator seeded 0 on the model's
    device); ``data_all`` must be on the model's device. With no deleted users the returned model's
    parameters are bit-identical to the input's and every count is 0.
    """
    if form not in FORMS:
        raise ValueError(f"form must be one of {FORMS}, got {form!r}")
    if serve_graph not in SERVE_GRAPHS:
        raise ValueError(f"serve_graph must be one of {SERVE_GRAPHS}, got {serve_graph!r}")
    if not 1 <= cg_iterations <= 100_000 or damping_attempts < 1:
        raise ValueError("need cg_iterations >= 1 and damping_attempts >= 1")
    check_damping(damping_rule, damping, damping_fraction, damping_probes)
    model_kind(model)
    device = model.user_embedding.device
    if getattr(model, "n_blocks", 1) != 1 or getattr(data_all, "n_blocks", 1) != 1:
        raise ValueError("SCIF updates one model: blocked (sharded) models and datasets are not supported")
    if data_all.device != device:
        raise ValueError(f"data_all is on {data_all.device} but the model on {device}")
    deleted_users = torch.unique(torch.as_tensor(deleted_users, dtype=torch.long, device=device))
    target = model if inplace else copy_model(model)
    if len(deleted_users) == 0:
        return ScifResult(model=target, form=form, damping_rule=damping_rule)

    synchronize(device)
    start = time.perf_counter()
    objective = ScifObjective(target, data_all, deleted_users, generator, l2)
    build_seconds = time.perf_counter() - start
    part = "all" if form == "influence" else "retained"
    step = influence_step(objective.theta0, lambda theta: objective.loss_sum(theta, "deleted"),
                          lambda theta: objective.objective(theta, part), objective.n, form=form,
                          damping_rule=damping_rule, damping=damping, damping_fraction=damping_fraction,
                          damping_probes=damping_probes, probe_seed=probe_seed, cg_iterations=cg_iterations,
                          cg_tolerance=cg_tolerance, damping_growth=damping_growth,
                          damping_attempts=damping_attempts, device=device)

    start = time.perf_counter()
    delta = step.delta
    with torch.no_grad():
        new_rows = (objective.theta0 + delta).to(target.user_embedding.dtype)
        n_users_s = objective.n_users_s
        target.user_embedding.index_copy_(0, objective.users_s, new_rows[:n_users_s])
        target.item_embedding.index_copy_(0, objective.items_s, new_rows[n_users_s:])
    if isinstance(target, LightGCN) and serve_graph == "retained":
        target.set_graph(remove_users(data_all, deleted_users))
    synchronize(device)
    update_seconds = time.perf_counter() - start

    return ScifResult(
        model=target, form=form, n_deleted_users=len(deleted_users), n_selected_items=len(objective.items_s),
        n_parameters=objective.n_parameters, n_terms=objective.n, update_norm=float(delta.norm()),
        gradient_norm=step.gradient_norm, objective_gradient_norm=step.objective_gradient_norm,
        cg_iterations=sum(a["iterations"] for a in step.attempts), cg_residual=step.attempts[-1]["residual"],
        cg_converged=step.attempts[-1]["converged"], damping=step.attempts[-1]["damping"],
        damping_attempts=len(step.attempts), damping_rule=damping_rule, damping_fraction=step.damping.fraction,
        damping_probes=step.damping.probes, mean_eigenvalue=step.damping.mean_eigenvalue,
        mean_eigenvalue_stderr=step.damping.mean_eigenvalue_stderr, initial_damping=step.damping.damping,
        attempts=step.attempts,
        gradient_seconds=build_seconds + step.gradient_seconds, cg_seconds=step.cg_seconds,
        update_seconds=update_seconds)
