"""DepL stage 1: dataset selection by submodular minimisation (Sec. IV-A).

The objective
-------------
DepL picks the datasets D̂ ⊆ D first, assuming the least restrictive later
choices: the most complex model m* (largest compute c_m) trains every epoch
on the most capable cluster n* (largest capacity r) at full capacity. With
the data law of ``instances.datalaw`` (V = Σσ_d, U = Σ u_d σ_d):

* T̂(D̂) = c_{m*} · V(D̂) / r(n*) + s(m*)/b(n*)  — epoch time, linear in data;
* K̂(D̂) = the number of epochs after which the *expected* loss of m* reaches
  ℓmax, i.e. the solution of γ(D̂)·A·E[X]·G(K) = ℓ(0) − ℓmax with
  G(K) = Σ_{k≤K} decay(k). We use the expectation, not the quantile, on
  purpose: stage 1 is a proxy for learning time (the paper says so), the
  quantile is enforced by stage 2, and the expectation keeps K̂ a smooth
  function of γ. K̂ is made *fractional* by linear interpolation of G
  between integers (the integer K̂ would make the objective a step function
  and break submodularity artificially), and G is continued beyond K̄ with
  its integral 2(sqrt(K + B + ½) − …) so that K̂ stays finite for every
  non-empty D̂ (feasibility against K̄ and Tmax is stage 2's job).

f(D̂) = K̂(D̂)·T̂(D̂) (eq. (7)). The empty set is infeasible — no data, no
learning (γ(∅) = 0, K̂ = ∞): we define f(∅) = +∞ and never evaluate it.
Instead the non-empty family is split into the |D| sub-families "contains
d_i, excludes d_1..d_{i−1}" (Lawler's partition), each of which is a
*contraction* g(S) = f(I ∪ S) on the free elements — submodular whenever f
is submodular on non-empty sets — and each is minimised exactly.

The algorithm
-------------
Each sub-problem is solved with the Fujishige–Wolfe minimum-norm-point
algorithm: the minimum-norm point x* of the base polytope B(F) of the
normalised F(S) = g(S) − g(∅) gives a minimiser {i : x*_i < 0} (Fujishige
1980); Wolfe's algorithm finds x* using only the greedy linear-optimisation
oracle over B(F) (Edmonds' greedy on the order of the weights). For
robustness against round-off we evaluate every prefix of x* in increasing
order and keep the best (the minimiser is one of them when x* is exact).

Is f submodular?
----------------
The paper asserts it; under our data law it is generally false. K̂ ∝
1/γ = ln 2/ln(1 + U) (times a further convex map for the 1/sqrt(k) decay) is
a *convex* decreasing function of the modular U(D̂): the time a useful
dataset saves shrinks as the set grows, so its (negative) marginal
f(A∪{i}) − f(A) *increases* with A — the opposite of the diminishing
returns submodularity needs. The product with the linear T̂ is closer to
supermodular than to submodular (measured: most triples of the
``datasets`` family violate it).
:func:`submodularity_check` counts violated diminishing-returns triples
f(A∪{i}) − f(A) ≥ f(B∪{i}) − f(B), ∅ ≠ A ⊆ B, i ∉ B — exhaustively for
small |D|, on a seeded random sample otherwise — and DepL reports the count
in its diagnostics. Where f is not submodular, minimum-norm-point is a
heuristic; :func:`exhaustive_minimum` cross-checks it for small |D|.

Backtracking (Fig. 3) needs the next-best dataset choice once one is
blacklisted: :class:`SubsetRanker` enumerates sets in increasing f by
Lawler–Murty partitioning, each sub-family solved by the same
minimum-norm-point routine (exact ranking when f is submodular).

References
----------
DepL paper Sec. IV-A, eq. (7) and Property 2; S. Fujishige, "Lexicographically
optimal base of a polymatroid with respect to a weight vector", Math. OR 5
(1980); P. Wolfe, "Finding the nearest point in a polytope", Math. Prog. 11
(1976); D. Chakrabarty, P. Jain, P. Kothari, "Provable submodular
minimization using Wolfe's algorithm", NeurIPS 2014; E. L. Lawler, "A
procedure for computing the K best solutions to discrete optimization
problems", Management Science 18 (1972).
"""

from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from deplbench.errors import InstanceError
from deplbench.instances.datalaw import compute_need

#: Exhaustive submodularity check / minimisation up to this many datasets
#: (3^10 · 10 ≈ 6·10^5 triples, 2^16 subsets).
EXHAUSTIVE_CHECK_MAX = 10
EXHAUSTIVE_MIN_MAX = 16


# --------------------------------------------------------------------------- objective
@dataclass(frozen=True)
class DataObjective:
    """f(D̂) = K̂(D̂) · T̂(D̂) of eq. (7), vectorised over subsets.

    Attributes
    ----------
    sizes, usefulness : ndarray, shape (|D|,)
        σ_d and u_d.
    compute : float
        c_{m*} of the most complex model.
    capacity, comm_time : float
        r(n*) and s(m*)/b(n*) of the most capable cluster.
    cum_decay : ndarray, shape (K̄ + 1,)
        G(K) = Σ_{k ≤ K} decay(k), G(0) = 0.
    offset : float
        B of m* (for the continuation of G beyond K̄); ``None`` for no decay.
    rate : float
        A_{m*}·E[X_{m*}]: expected loss drop per unit of γ·decay.
    gap : float
        ℓ(0) − ℓmax.
    """

    sizes: np.ndarray
    usefulness: np.ndarray
    compute: float
    capacity: float
    comm_time: float
    cum_decay: np.ndarray
    offset: float | None
    rate: float
    gap: float
    model: str = ""
    cluster: str = ""
    #: Work counter: subsets evaluated by :meth:`values` so far,
    #: one "oracle call" of the submodular minimisation each. A one-element
    #: list so the frozen dataclass can count.
    calls: list = field(default_factory=lambda: [0], compare=False, repr=False)

    @classmethod
    def from_instance(cls, instance) -> "DataObjective":
        """The stage-1 objective of an instance (least restrictive choices).

        Raises
        ------
        InstanceError
            If the most complex model does not improve the loss on average.
        """
        comp = np.array([m.compute for m in instance.models])
        size = np.array([m.size for m in instance.models])
        # Most complex model: largest compute; ties broken by larger size.
        m_star = int(np.lexsort((-size, -comp))[0])
        cap = np.array([c.capacity for c in instance.clusters])
        bw = np.array([c.bandwidth for c in instance.clusters])
        n_star = int(np.lexsort((-bw, -cap))[0])
        model = instance.models[m_star]
        mean_x = float(model.improvement.mean())
        if not (math.isfinite(mean_x) and mean_x > 0):
            raise InstanceError(
                f"models[{m_star}].improvement: dataset selection needs a positive finite mean "
                f"improvement for the most complex model, got {mean_x}"
            )
        decay = np.asarray(instance.decay_matrix[:, m_star], dtype=float)
        return cls(
            sizes=np.array([d.size for d in instance.datasets], dtype=float),
            usefulness=np.array([d.usefulness for d in instance.datasets], dtype=float),
            compute=float(model.compute),
            capacity=float(cap[n_star]),
            comm_time=float(model.size / bw[n_star]),
            cum_decay=np.concatenate([[0.0], np.cumsum(decay)]),
            offset=float(model.loss_offset) if model.decay == "inv_sqrt" else None,
            rate=float(model.loss_scale) * mean_x,
            gap=float(instance.initial_loss - instance.loss_max),
            model=model.name,
            cluster=instance.clusters[n_star].name,
        )

    @property
    def n(self) -> int:
        return int(self.sizes.size)

    def epochs_needed(self, gamma) -> np.ndarray:
        """Fractional K̂ for an array of γ > 0 (inf for γ = 0)."""
        gamma = np.asarray(gamma, dtype=float)
        with np.errstate(divide="ignore"):
            need = np.where(gamma > 0, self.gap / (self.rate * np.where(gamma > 0, gamma, 1.0)), np.inf)
        G = self.cum_decay
        kbar = G.size - 1
        # Inside the horizon: invert the piecewise-linear interpolation of G.
        idx = np.searchsorted(G, need, side="left")  # first K with G(K) >= need
        inside = (idx <= kbar) & np.isfinite(need)
        k = np.where(inside, idx, 1).clip(1, kbar)
        lo, hi = G[k - 1], G[k]
        frac = np.where(hi > lo, (need - lo) / np.where(hi > lo, hi - lo, 1.0), 1.0)
        out = np.where(inside, k - 1 + frac, np.inf)
        # Beyond the horizon: continue G with its integral.
        beyond = ~inside & np.isfinite(need)
        if beyond.any():
            extra = need[beyond] - G[-1]
            if self.offset is None:
                out[beyond] = kbar + extra  # decay 1: one unit per epoch
            else:
                base = math.sqrt(kbar + self.offset + 0.5)
                with np.errstate(over="ignore"):  # a hopeless γ needs +inf epochs, not a warning
                    out[beyond] = (base + extra / 2.0) ** 2 - self.offset - 0.5
        return np.where(need <= 0, 0.0, out)

    def epoch_time(self, volume) -> np.ndarray:
        """T̂ for an array of data volumes."""
        with np.errstate(over="ignore"):
            return compute_need(self.compute, np.asarray(volume, dtype=float)) / self.capacity + self.comm_time

    def values(self, masks) -> np.ndarray:
        """f for a boolean array of subsets, shape (..., |D|); +inf for ∅."""
        masks = np.asarray(masks, dtype=bool)
        self.calls[0] += int(masks.size // max(1, masks.shape[-1])) if masks.ndim else 0
        vol = masks @ self.sizes
        useful = masks @ (self.sizes * self.usefulness)
        gamma = np.log1p(useful) / math.log(2.0)
        k = self.epochs_needed(gamma)
        t = self.epoch_time(vol)
        with np.errstate(invalid="ignore"):  # ∅: inf·0, masked just below
            return np.where(masks.any(axis=-1), k * t, np.inf)

    def value(self, subset) -> float:
        """f of one subset given as indices."""
        mask = np.zeros(self.n, dtype=bool)
        mask[list(subset)] = True
        return float(self.values(mask[None, :])[0])


def all_masks(n: int) -> np.ndarray:
    """Boolean (2^n, n) array: row b is the subset with bitmask b."""
    b = np.arange(1 << n, dtype=np.int64)[:, None]
    return ((b >> np.arange(n, dtype=np.int64)) & 1).astype(bool)


# --------------------------------------------------------------------- min-norm point
def _affine_minimiser(S: np.ndarray) -> np.ndarray:
    """Coefficients α (Σα = 1) of the min-norm point of the affine hull of rows S."""
    r = S.shape[0]
    G = S @ S.T
    A = np.zeros((r + 1, r + 1))
    A[:r, :r] = G
    A[:r, r] = 1.0
    A[r, :r] = 1.0
    b = np.zeros(r + 1)
    b[r] = 1.0
    sol = np.linalg.lstsq(A, b, rcond=None)[0]
    return sol[:r]


def min_norm_point(F, n: int, tol: float = 1e-10, max_iter: int = 1000) -> tuple[np.ndarray, int]:
    """Wolfe's minimum-norm point of the base polytope B(F).

    Parameters
    ----------
    F : callable
        F(masks) -> values for a boolean array (r, n) of subsets; normalised
        so that F(∅) = 0.
    n : int
        Ground-set size.
    tol : float
        Relative tolerance of Wolfe's optimality test ⟨x, x⟩ ≤ ⟨x, q⟩ + tol·|x|².
    max_iter : int
        Major-cycle limit.

    Returns
    -------
    x : ndarray, shape (n,)
    iterations : int
    """

    def greedy(w):
        # Edmonds' greedy: the vertex of B(F) minimising ⟨w, ·⟩.
        order = np.argsort(w, kind="stable")
        prefixes = np.zeros((n + 1, n), dtype=bool)
        for t in range(n):
            prefixes[t + 1:, order[t]] = True
        vals = F(prefixes)
        q = np.empty(n)
        q[order] = np.diff(vals)
        return q

    x = greedy(np.zeros(n))
    S = [x.copy()]
    lam = np.array([1.0])
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 - after the loop, the iterations run
        q = greedy(x)
        xx = float(x @ x)
        if xx - float(x @ q) <= tol * max(xx, 1.0):
            break
        if any(np.allclose(q, s, rtol=0, atol=1e-14 * max(1.0, np.abs(q).max())) for s in S):
            break  # no progress possible (round-off)
        S.append(q)
        lam = np.append(lam, 0.0)
        while True:  # minor cycles
            Smat = np.array(S)
            alpha = _affine_minimiser(Smat)
            if np.all(alpha > 1e-12):
                lam = alpha
                x = alpha @ Smat
                break
            neg = alpha <= 1e-12
            with np.errstate(divide="ignore", invalid="ignore"):
                ratios = lam[neg] / (lam[neg] - alpha[neg])
            ratios = ratios[np.isfinite(ratios)]
            theta = float(np.clip(ratios.min(), 0.0, 1.0)) if ratios.size else 0.0
            lam = theta * alpha + (1.0 - theta) * lam
            x = lam @ Smat
            keep = lam > 1e-12
            if keep.all():  # numerical stall: drop the smallest weight
                keep[int(np.argmin(lam))] = False
            S = [s for s, k in zip(S, keep) if k]
            lam = lam[keep]
            lam = lam / lam.sum()
            if len(S) == 1:
                x = S[0].copy()
                lam = np.array([1.0])
                break
    return x, it


@dataclass
class SubproblemResult:
    subset: tuple
    value: float
    iterations: int


def minimize_restricted(obj: DataObjective, include, exclude) -> SubproblemResult:
    """min f(I ∪ S) over S ⊆ D ∖ (I ∪ E), I non-empty, by minimum-norm point.

    Parameters
    ----------
    obj : DataObjective
    include, exclude : iterable of int
        Forced-in (non-empty) and forced-out dataset indices.

    Returns
    -------
    SubproblemResult
        The best set found and its value.
    """
    include = sorted(set(include))
    exclude = set(exclude)
    free = [i for i in range(obj.n) if i not in exclude and i not in include]
    base = np.zeros(obj.n, dtype=bool)
    base[include] = True
    base_val = float(obj.values(base[None, :])[0])
    if not free:
        return SubproblemResult(tuple(include), base_val, 0)
    free_idx = np.array(free)

    def lift(masks):
        full = np.broadcast_to(base, masks.shape[:-1] + (obj.n,)).copy()
        full[..., free_idx] = masks
        return full

    def F(masks):
        return obj.values(lift(masks)) - base_val

    x, iters = min_norm_point(F, len(free))
    order = np.argsort(x, kind="stable")
    prefixes = np.zeros((len(free) + 1, len(free)), dtype=bool)
    for t in range(len(free)):
        prefixes[t + 1:, order[t]] = True
    vals = obj.values(lift(prefixes))
    best = int(np.argmin(vals))
    chosen = sorted(include + [free[i] for i in np.nonzero(prefixes[best])[0]])
    return SubproblemResult(tuple(chosen), float(vals[best]), iters)


def minimize_min_norm(obj: DataObjective) -> SubproblemResult:
    """min over non-empty D̂ of f, via the |D| contractions (see module docstring)."""
    best = None
    iters = 0
    for i in range(obj.n):
        r = minimize_restricted(obj, include=[i], exclude=range(i))
        iters += r.iterations
        if best is None or r.value < best.value - 1e-12 * abs(best.value):
            best = r
    best = cast(SubproblemResult, best)         # obj.n ≥ 1: the loop ran
    best.iterations = iters
    return best


def exhaustive_minimum(obj: DataObjective) -> SubproblemResult:
    """Brute force over all 2^|D| − 1 non-empty subsets (|D| ≤ 16).

    Raises
    ------
    InstanceError
        If |D| is too large for enumeration.
    """
    if obj.n > EXHAUSTIVE_MIN_MAX:
        raise InstanceError(f"datasets: exhaustive search needs |D| <= {EXHAUSTIVE_MIN_MAX}, got {obj.n}")
    masks = all_masks(obj.n)
    vals = obj.values(masks)
    b = int(np.argmin(vals))
    return SubproblemResult(tuple(np.nonzero(masks[b])[0].tolist()), float(vals[b]), 0)


# ------------------------------------------------------------------ submodularity
def submodularity_check(obj: DataObjective, rng: np.random.Generator | None = None,
                        samples: int = 20_000, rtol: float = 1e-9) -> dict:
    """Count violated diminishing-returns triples of f on non-empty sets.

    A triple (A, B, i) with ∅ ≠ A ⊆ B ⊆ D, i ∉ B violates submodularity when
    f(A∪{i}) − f(A) < f(B∪{i}) − f(B) − rtol·scale.

    Parameters
    ----------
    obj : DataObjective
    rng : numpy.random.Generator, optional
        Used when |D| > :data:`EXHAUSTIVE_CHECK_MAX` (sampled check).
    samples : int
        Sampled triples.
    rtol : float
        Relative tolerance (scale = max |f| over the checked sets).

    Returns
    -------
    dict
        ``checked``, ``violated``, ``max_violation`` (absolute),
        ``exhaustive`` (bool), ``submodular`` (no violation found).
    """
    n = obj.n
    i: Any                  # an element below, an array of sampled elements further down
    if n <= EXHAUSTIVE_CHECK_MAX:
        vals = obj.values(all_masks(n))
        # Every (A, B) pair with A ⊆ B: each element is out of B (0), in B∖A
        # (1) or in A (2) — 3^n codes.
        codes = (np.arange(3**n, dtype=np.int64)[:, None] // (3 ** np.arange(n, dtype=np.int64)) % 3).astype(np.int8)
        weights = (1 << np.arange(n, dtype=np.int64))
        a_bits = (codes == 2) @ weights
        b_bits = (codes >= 1) @ weights
        checked = violated = 0
        max_v = 0.0
        finite = vals[np.isfinite(vals)]
        scale = float(np.abs(finite).max()) if finite.size else 1.0
        for i in range(n):
            rows = (codes[:, i] == 0) & (a_bits > 0) & (a_bits != b_bits)
            if not rows.any():
                continue
            A, B = a_bits[rows], b_bits[rows]
            gain_a = vals[A | (1 << i)] - vals[A]
            gain_b = vals[B | (1 << i)] - vals[B]
            viol = gain_b - gain_a
            checked += int(rows.sum())
            bad = viol > rtol * scale
            violated += int(bad.sum())
            if bad.any():
                max_v = max(max_v, float(viol[bad].max()))
        return {"checked": checked, "violated": violated, "max_violation": max_v,
                "exhaustive": True, "submodular": violated == 0}
    rng = rng if rng is not None else np.random.default_rng(0)
    # Random triples: i uniform; B random subset without i; A a random
    # non-empty proper... subset of B (resampled if empty).
    i = rng.integers(0, n, samples)
    B = rng.random((samples, n)) < 0.5
    B[np.arange(samples), i] = False
    A = B & (rng.random((samples, n)) < 0.5)
    ok = A.any(axis=1) & (A != B).any(axis=1)
    i, A, B = i[ok], A[ok], B[ok]
    Ai, Bi = A.copy(), B.copy()
    Ai[np.arange(i.size), i] = True
    Bi[np.arange(i.size), i] = True
    fa, fai, fb, fbi = (obj.values(x) for x in (A, Ai, B, Bi))
    viol = (fbi - fb) - (fai - fa)
    scale = float(np.abs(np.concatenate([fa, fai, fb, fbi])).max()) if i.size else 1.0
    bad = viol > rtol * scale
    return {"checked": int(i.size), "violated": int(bad.sum()),
            "max_violation": float(viol[bad].max()) if bad.any() else 0.0,
            "exhaustive": False, "submodular": not bad.any()}


# ------------------------------------------------------------------------- ranking
@dataclass(order=True)
class _Node:
    value: float
    tie: int
    subset: tuple = field(compare=False)
    include: tuple = field(compare=False)
    exclude: tuple = field(compare=False)


class SubsetRanker:
    """Dataset choices in increasing f (Lawler–Murty partitioning), for backtracking.

    ``next()`` returns (subset, value) or None when exhausted. The first call
    returns the minimum-norm-point minimiser over non-empty sets. When f is
    submodular the order is exact; otherwise it is a heuristic order.
    """

    def __init__(self, obj: DataObjective):
        self.obj = obj
        self._heap: list[_Node] = []
        self._tie = itertools.count()
        self.iterations = 0
        for i in range(obj.n):
            self._push((i,), tuple(range(i)))

    def _push(self, include, exclude):
        r = minimize_restricted(self.obj, include, exclude)
        self.iterations += r.iterations
        heapq.heappush(self._heap, _Node(r.value, next(self._tie), r.subset, tuple(include), tuple(exclude)))

    def next(self):
        if not self._heap:
            return None
        node = heapq.heappop(self._heap)
        # Partition the node's family minus its solution X: the j-th child
        # agrees with X on the first j−1 free elements and differs on the j-th.
        fixed_in, fixed_out = set(node.include), set(node.exclude)
        chosen = set(node.subset)
        free = [i for i in range(self.obj.n) if i not in fixed_in and i not in fixed_out]
        for e in free:
            if e in chosen:
                self._push(tuple(sorted(fixed_in)), tuple(sorted(fixed_out | {e})))
                fixed_in.add(e)
            else:
                self._push(tuple(sorted(fixed_in | {e})), tuple(sorted(fixed_out)))
                fixed_out.add(e)
        return node.subset, node.value


def stage_one_applies(instance) -> tuple[bool, str]:
    """Whether the decision loop's stage 1 (Sec. IV-A) applies to ``instance``, and if not, why.

    Stage 1 sizes the training by the most complex model's mean improvement E[X]
    (:meth:`DataObjective.from_instance`); where that is not positive and finite (a valid instance
    whose training never lowers the loss on average) there is nothing to size it by. DepL and
    best-exp, which share the loop, then decline the instance (status ``skipped``) with this reason
    rather than fail.
    """
    try:
        DataObjective.from_instance(instance)
    except InstanceError as exc:
        return False, f"the decision loop's dataset selection (Sec. IV-A) does not apply: {exc}"
    return True, ""


__all__ = [
    "DataObjective",
    "stage_one_applies",
    "min_norm_point",
    "minimize_restricted",
    "minimize_min_norm",
    "exhaustive_minimum",
    "submodularity_check",
    "SubsetRanker",
    "all_masks", "EXHAUSTIVE_MIN_MAX"]
