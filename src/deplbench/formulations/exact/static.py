"""The optimum of the true chance-constrained problem over static plans, bracketed deterministically.

What is solved
--------------
Problem (2)–(6) with constraint (3) on the *true* law of ℓ(K) (not an SAA),
on the structure of the sequence enumeration (:mod:`deplbench.formulations.milp.enumeration`): an
acyclic switch graph, one data class, non-negative improvements. A plan is a
path of models with one block length each; its violation probability
depends on the model sequence only and is bounded rigorously by
:mod:`deplbench.formulations.evaluation.exact_violation`.

Algorithm
---------
1. For every path and every choice of all but the last block length, scan
   the last block length c upwards; the lattice sums of the prefix are kept
   as FFT spectra (one product per added epoch, all terms discretised once
   per instance on a common lattice), and each scanned c is judged by the
   exact bounds. With non-negative improvements the true violation
   probability decreases in c, so
   * c_L = the first c not proven infeasible: every truly feasible
     completion of this prefix has c ≥ c_L (the earlier c are proven
     infeasible, directly or by monotonicity);
   * c_U = the first c proven feasible (p_hi ≤ 1 − ω).
2. Undominated count vectors of the (prefix, c_U) sequences form the set U,
   those of (prefix, c_L) the set L. The enumeration MILP
   (:class:`deplbench.formulations.milp.enumeration.EnumModel`: cluster counts, data and exact λ
   cuts; the plan is costed with the exact real-x allocation) picks the
   cheapest sequence of each: UB = the cheapest proven-feasible plan
   (a real plan, returned), LB = the MILP's proven bound over L.
3. Undecided sequences (p_lo ≤ 1 − ω < p_hi at the enumeration's lattice)
   that the L-optimum uses are refined on finer lattices and the MILPs
   re-solved, until the bracket is within ``gap`` or the rounds run out.

Stops and statuses
------------------
Each phase — the lattice (its memory estimated before anything is
allocated, :func:`deplbench.limits.check_memory` against ``memory_limit``),
the scan, the MILPs and the refinement — reads the
:func:`deplbench.limits.deadline` scope at every judged length, prefix,
master solve and refined sequence. A stop is status ``time_limit`` naming
the phase, with the bracket proven so far: an exhausted budget is never a
proof of infeasibility. ``infeasible`` means every sequence is *proven* to
violate (3) (or none of the rest fits Tmax); when the remaining sequences
are undecided at the precision (plans at the feasibility boundary) the
status is ``no_solution`` with the lower bound. The returned plan is proven
feasible by the decision ``evaluate --exact`` reads
(:func:`~deplbench.formulations.evaluation.exact_violation.plan_violation_bounds`), so the two
never differ.

Guarantee
---------
LB ≤ z* ≤ UB deterministically, where z* is the optimum over static plans
of the true chance-constrained problem: every truly feasible plan is
dominated (same or fewer epochs of every model; F is increasing in the
counts) by an L candidate, and the U plan is proven feasible. The width
comes from numerical precision and the MILP gap only. Assumes the
exact_violation allowance (module docstring there).

Longer than 600 lines because the lattice, the scan and the solve loop are
the three steps of one algorithm sharing the private prefix and state records
(_Prefix, _State) and the stop bookkeeping (_Bracket).

References
----------
DepL paper eqs. (2)–(8); Luedtke & Ahmed (2008) for the SAA it replaces.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import fft as sfft

from deplbench import limits
from deplbench.errors import SolverError
from deplbench.formulations.evaluation.exact_violation import (
    PROVEN_FEASIBLE,
    PROVEN_INFEASIBLE,
    UNDECIDED,
    ExactSettings,
    ExactUnavailable,
    Term,
    bounds_for_terms,
    discretise_all,
    fft_allowance,
    irwin_hall_cells,
    plan_violation_bounds,
    sequence_terms,
    term_cells,
    term_iqrs,
    violation_bounds,
)
from deplbench.formulations.milp.bounds import Bounds
from deplbench.formulations.milp.cutloop import cut_loop
from deplbench.formulations.milp.data import Data
from deplbench.formulations.milp.enumeration import EnumModel, dag_paths, pareto_sequences
from deplbench.formulations.milp.routes import make_backend
from deplbench.formulations.model.result import SolveResult
from deplbench.instances.distributions import Empirical, InverseGamma, LogNormal, PointMass
from deplbench.params import TIME_LIMIT, Param, resolve, trusted

#: Lattice steps per unit of the typical plan's spread (σ̂ / this = h).
STEPS_PER_SPREAD = 64
_EPS = float(np.finfo(float).eps)


def exact_static_applies(instance) -> tuple[bool, str]:
    """Whether :func:`solve_exact_static` applies, and why not."""
    if dag_paths(instance.allowed) is None:
        return False, ("the switch graph has a cycle (or too many paths): the exact static optimum needs the "
                       "sequence enumeration; use `deplbench certify` for a statistical bracket")
    datasets = instance.all_datasets
    if len(datasets) != 1:
        # one data class: with several datasets the data classes multiply
        return False, (f"{len(datasets)} datasets: the exact static optimum handles one data class (the DepL and "
                       "PACT paper sets); use `deplbench certify` for a statistical bracket")
    for m in instance.models:
        law = m.improvement
        ok = isinstance(law, (InverseGamma, LogNormal)) or (
            isinstance(law, PointMass) and law.value >= 0) or (
            isinstance(law, Empirical) and min(law.samples) >= 0)
        if not ok or m.loss_scale < 0:
            return False, (f"model {m.name!r}: improvements can be negative ({law.kind}), so a longer last block "
                           "is not always safer; use `deplbench certify` for a statistical bracket")
    return True, ""


@dataclass
class _Prefix:
    """One prefix's scan: the last block's model and lengths c_L ≤ c_U."""

    blocks: tuple
    path: tuple
    c_lo: int | None
    c_up: int | None
    undecided: list = field(default_factory=list)
    cmax: int = 0

    def seq(self, c: int) -> np.ndarray:
        return np.repeat(np.array(self.path, dtype=int), list(self.blocks) + [c])

    def counts(self, c: int, M: int) -> np.ndarray:
        """Epochs of each model of :meth:`seq` (c)."""
        return np.bincount(self.seq(c), minlength=M)


class SpectralLattice:
    """Every loss term of the instance discretised once on one lattice, as spectra.

    The run term of every (epoch k < k_max, model m) at data multiplier
    ``gamma`` and every switch jump is placed on the lattice hZ exactly as
    :func:`~deplbench.formulations.evaluation.exact_violation.discretise_all` does (L⁻ and L⁺ cells), h = σ̂/
    :data:`STEPS_PER_SPREAD` with σ̂ the spread of a k_max-epoch plan, and its
    two cell vectors are kept as real-FFT spectra of one common length N
    that holds every sum of ≤ k_max run terms and the jumps. A sequence's
    bounds are then a product of spectra and one tail sum: the same rigorous
    [p_lo, p_hi] as :func:`~deplbench.formulations.evaluation.exact_violation.violation_bounds` at this h,
    allowance included, without a library call or an FFT per sequence.

    Parameters
    ----------
    instance : Instance
    gamma : float
        Data multiplier γ of every epoch (one data class).
    k_max : int
        Longest sequence judged.
    settings : ExactSettings
        Its ``tail`` is the truncated mass, split over the terms of a plan.
    max_bytes : float, optional
        Refuse (:class:`ExactUnavailable`) before allocating spectra larger
        than this (default: no limit).

    Notes
    -----
    Memory: 2 · k_max · |M| spectra of N/2 + 1 complex numbers (about 120 MB
    for the realistic AlexNet family at k_max = 100).
    """

    def __init__(self, instance, gamma: float, k_max: int, settings: ExactSettings, max_bytes: float | None = None):
        self.inst = instance
        self.gamma = float(gamma)
        self.k_max = int(k_max)
        M = instance.n_models
        rs = instance.run_scale_for(k_max)
        terms = [[Term(instance.models[m].improvement, -gamma * float(rs[k, m]), 0.0) for m in range(M)]
                 for k in range(k_max)]
        self.det_run = np.array([[instance.models[m].improvement.is_deterministic or rs[k, m] == 0
                                  for m in range(M)] for k in range(k_max)])
        jumps = [Term(sw.jump, 1.0, 0.0) for sw in instance.switches]
        self.det_jump = [sw.jump.is_deterministic for sw in instance.switches]
        flat = [t for row in terms for t in row] + jumps
        rnd = [t for t, det in zip(flat, list(self.det_run.ravel()) + self.det_jump) if not det]
        self.scale = math.sqrt(np.median(np.square(term_iqrs(rnd))) * k_max) if rnd else 1.0
        self.h = h = self.scale / STEPS_PER_SPREAD
        self.n_max = k_max + M
        # tail budget: half to the ≤ k_max run terms, half to the ≤ M − 1 jumps of a
        # plan (heavy Student-t tails: a larger share keeps the lattice short)
        eps_run = settings.tail / (4.0 * k_max)
        eps_jump = settings.tail / (4.0 * max(M - 1, 1))
        T0 = float(instance.loss_max) - float(instance.initial_loss)
        self.tau0 = math.floor(T0 / h)
        self.phi = phi = T0 / h - self.tau0
        # the first epoch's terms carry the shift −φh that puts ℓmax on the lattice
        shifted = [Term(t.dist, t.a, t.b - phi * h) for t in terms[0]]
        dets = list(self.det_run.ravel()) + self.det_jump
        run_terms = [t for t, d in zip(shifted + flat[M:M * k_max], dets[:M * k_max]) if not d]
        jump_terms = [t for t, d in zip(jumps, self.det_jump) if not d]
        self.memory = self._estimate(run_terms, jump_terms, eps_run, eps_jump, M)
        if max_bytes is not None and self.memory > max_bytes:
            raise ExactUnavailable(f"the lattice's spectra would need {self.memory / 2**20:.0f} MiB "
                                   f"(> {max_bytes / 2**20:.0f} MiB)")
        if max_bytes is None:
            # before any cell vector or spectrum exists (a long horizon needs gigabytes)
            limits.check_memory(self.memory, f"milp-exact's lattice spectra (k_max = {k_max} epochs × "
                                f"{M} models, about {self.memory_N:.3g} lattice points)",
                                "use a smaller horizon (or Tmax), or `deplbench certify` for a statistical "
                                "bracket")
        limits.check_time("exact lattice: discretisation")
        it = iter(discretise_all(run_terms, h, eps_run) + discretise_all(jump_terms, h, eps_jump))
        self.run = [[None if self.det_run[k, m] else next(it) for m in range(M)] for k in range(k_max)]
        self.jump = [None if d else next(it) for d in self.det_jump]
        widest = sum(max((c[1].size for c in row if c is not None), default=0) for row in self.run)
        widest += sum(sorted((c[1].size for c in self.jump if c is not None), reverse=True)[:M])
        self.N = N = 2 * sfft.next_fast_len((widest + self.n_max + 3) // 2 + 1, real=True)   # even
        # tail sums straight from the spectrum (no inverse FFT): see tail()
        self._omega = np.exp(2j * np.pi * np.arange(N) / N)
        self._k = np.arange(1, N // 2)
        self._inv = 1.0 / (self._omega[1:N // 2] - 1.0)
        self.allowance = fft_allowance(N, self.n_max + 1, N) + 4 * (self.n_max + 3) * 1.2e-16 * (math.log(N) + 1)
        self._ih: dict = {}
        # spectra on first use (one rfft each): a caller judging a few sequences
        # (depl-proven) needs only the (epoch, model) terms they contain
        self._run_spec: dict = {}
        self.jump_spec = [self._spec(c) for c in self.jump]

    def _estimate(self, run_terms, jump_terms, eps_run: float, eps_jump: float, M: int) -> float:
        """Peak bytes of the lattice and of a scan over it, before anything is allocated.

        The cells of every term are counted from its quantiles (one ppf per
        law, :func:`~deplbench.formulations.evaluation.exact_violation.term_cells`), so the length N is the one
        ``__init__`` will choose; the spectra are two per random term, two per
        scanned state (≤ k_max + 2 alive), one Irwin–Hall spectrum per term
        count, plus the tail functional's three length-N arrays."""
        h = self.h
        cells_run = term_cells(run_terms, h, eps_run) if run_terms else np.zeros(0)
        cells_jump = term_cells(jump_terms, h, eps_jump) if jump_terms else np.zeros(0)
        per_k = np.zeros(self.k_max)
        it = iter(cells_run.tolist())
        for k in range(self.k_max):
            for m in range(M):
                if not self.det_run[k, m]:
                    per_k[k] = max(per_k[k], next(it))
        widest = float(per_k.sum()) + float(np.sort(cells_jump)[::-1][:M].sum())
        N = 2 * sfft.next_fast_len(int(widest + self.n_max + 3) // 2 + 1, real=True)
        self.memory_N = N
        spectrum = (N // 2 + 1) * 16.0
        n_spectra = 2 * (len(run_terms) + len(jump_terms)) + 2 * (self.k_max + 2) + (self.n_max + 1)
        cells = float(cells_run.sum() + cells_jump.sum())
        return n_spectra * spectrum + 3 * N * 16.0 + 6 * 8.0 * cells

    def _spec(self, cell):
        if cell is None:
            return None
        o_lo, lo, o_up, up, above, _ = cell
        return (o_lo, sfft.rfft(lo, self.N), o_up, sfft.rfft(up, self.N), math.log1p(-min(above, 1 - 1e-300)))

    def tail(self, X: np.ndarray, i0: int) -> float:
        """Σ_{i ≥ i0} x[i] for x = irfft(X, N), as (1/N)[X₀(N − i0) + 2 Re Σ_k X_k (1 − ω^{k·i0})/(ω^k − 1)
        + Nyquist term]: a linear functional of the spectrum, O(N) with no FFT (ω = e^{2πi/N})."""
        N = self.N
        if i0 <= 0:
            return float(X[0].real)
        if i0 >= N:
            return 0.0
        g = (1.0 - self._omega[(self._k * i0) % N]) * self._inv
        x = X[1:N // 2]
        # real arithmetic: a complex np.dot goes through BLAS, whose call overhead dominates this short sum
        total = X[0].real * (N - i0) + 2.0 * float((x.real * g.real - x.imag * g.imag).sum())
        if i0 % 2:                               # Nyquist term: (1 − (−1)^{i0})/(−2) = −1 for odd i0
            total -= X[N // 2].real
        return total / N

    def ih(self, n: int):
        if n not in self._ih:
            self._ih[n] = sfft.rfft(irwin_hall_cells(n), self.N)
        return self._ih[n]

    def run_term(self, k: int, m: int, st: "_State") -> "_State":
        """``st`` times epoch k's run term of model m (a constant when deterministic)."""
        limits.check_time("exact lattice: spectra products")
        if self.run[k][m] is not None:
            if (k, m) not in self._run_spec:
                self._run_spec[(k, m)] = self._spec(self.run[k][m])
            return st.times(self._run_spec[(k, m)], None)
        # a deterministic first epoch carries the lattice shift −φh the random ones carry
        shift = self.phi * self.h if k == 0 else 0.0
        law = self.inst.models[m].improvement
        out = st.times(None, -self.gamma * float(self.inst.run_scale_for(k + 1)[k, m]) * float(law.mean()) - shift)
        out.shift = st.shift + shift
        return out

    def jump_term(self, p: int, st: "_State") -> "_State":
        """``st`` times the jump of switch p (a constant when deterministic)."""
        spec = self.jump_spec[p]
        return st.times(spec, float(self.inst.switches[p].jump.mean()) if spec is None else None)

    def start(self) -> "_State":
        one = np.ones(self.N // 2 + 1, dtype=complex)
        return _State(one, one)

    def verdict(self, models) -> str:
        """Verdict of a whole model sequence (≤ k_max epochs) at this lattice.

        Rigorous like :func:`~deplbench.formulations.evaluation.exact_violation.violation_bounds` (same cells,
        same allowance); ``"undecided"`` when the lattice is too coarse."""
        st = self.start()
        models = [int(m) for m in models]
        for k, m in enumerate(models):
            if k and models[k - 1] != m:
                p = self.inst.switch_index.get((models[k - 1], m))
                if p is not None:          # a forbidden switch contributes nothing, as in the evaluator
                    st = self.jump_term(p, st)
            st = self.run_term(k, m, st)
        return _judge(self, st, 1.0 - float(self.inst.omega))


@dataclass
class _State:
    """Running product of a prefix's spectra."""

    lo: np.ndarray
    up: np.ndarray
    off_lo: int = 0
    off_up: int = 0
    n: int = 0
    det: float = 0.0
    log_keep: float = 0.0
    shift: float = 0.0    # the −φh a deterministic first epoch put into ``det``

    def times(self, spec, det_value: float | None) -> "_State":
        if spec is None:
            return _State(self.lo, self.up, self.off_lo, self.off_up, self.n, self.det + det_value, self.log_keep,
                          self.shift)
        o_lo, s_lo, o_up, s_up, lk = spec
        return _State(self.lo * s_lo, self.up * s_up, self.off_lo + o_lo, self.off_up + o_up, self.n + 1,
                      self.det, self.log_keep + lk, self.shift)


def _judge(lat: SpectralLattice, st: _State, risk: float) -> str:
    """Verdict of a full sequence from its running product (module docstring)."""
    if st.n == 0:
        # every term a constant: the first epoch then carried the lattice shift −φh
        # in ``det`` (run_term); the true final loss is without it
        loss = float(lat.inst.initial_loss) + st.det + st.shift
        loss_max = float(lat.inst.loss_max)
        # No tolerance: a final loss above ℓmax violates (3) with probability 1.
        # The sum here is taken in another order than the sequence's own
        # (sequence_terms); within its rounding the lattice does not decide,
        # the shared decision (violation_bounds, strict comparison) does.
        band = 64 * _EPS * (abs(float(lat.inst.initial_loss)) + abs(st.det) + abs(st.shift) + abs(loss_max))
        if abs(loss - loss_max) <= band:
            return UNDECIDED
        return PROVEN_INFEASIBLE if loss > loss_max else PROVEN_FEASIBLE
    ih = lat.ih(st.n)
    t = lat.tau0 - st.det / lat.h
    t_hi, t_lo = math.floor(t + 1e-12), math.ceil(t - 1e-12)   # deterministic terms: round conservatively
    p_hi = lat.tail(st.up * ih, t_hi - st.off_up) + (-math.expm1(st.log_keep)) + lat.allowance
    if p_hi <= risk:
        return PROVEN_FEASIBLE
    p_lo = lat.tail(st.lo * ih, t_lo - st.off_lo) - lat.allowance
    return PROVEN_INFEASIBLE if p_lo > risk else UNDECIDED


def enumerate_exact(instance, gamma: float, k_max: int, settings: ExactSettings = ExactSettings(),
                    lattice: SpectralLattice | None = None):
    """Step 1 of the module docstring: the scan of every prefix. Returns (prefixes, lattice).

    Reads the :func:`deplbench.limits.deadline` scope at every judged length
    and every prefix (raises :class:`~deplbench.limits.TimeLimitReached`)."""
    lat = lattice if lattice is not None else SpectralLattice(instance, gamma, k_max, settings)
    risk = 1.0 - float(instance.omega)
    paths = dag_paths(instance.allowed)
    out: list[_Prefix] = []
    guess: dict = {}
    run_term = lat.run_term

    def last_block(path, blocks, st, start):
        """c_L and c_U of one prefix: walk from the previous prefix's c_U (a
        good guess) down to a proven-infeasible length or up past them."""
        m = path[-1]
        cmax = k_max - start
        if cmax < 1:
            return
        states, verdicts = [st], {}

        def v(c):
            if c not in verdicts:
                limits.check_time("milp-exact: scan of the last block lengths")
                while len(states) <= c:      # states[c]: the prefix and c epochs of model m
                    states.append(run_term(start + len(states) - 1, m, states[-1]))
                verdicts[c] = _judge(lat, states[c], risk)
            return verdicts[c]

        c = min(max(1, guess.get(path, 1)), cmax)
        if v(c) == PROVEN_INFEASIBLE:
            while c < cmax and v(c) == PROVEN_INFEASIBLE:
                c += 1
            if v(c) == PROVEN_INFEASIBLE:
                return                       # every length proven infeasible
        else:
            while c > 1 and v(c - 1) != PROVEN_INFEASIBLE:
                c -= 1
        # c − 1 is proven infeasible (or c = 1): by monotonicity so is every shorter block
        c_lo, c_up, und = c, None, []
        for c in range(c_lo, cmax + 1):
            if v(c) == PROVEN_FEASIBLE:
                c_up = c
                break
            if v(c) == UNDECIDED:
                und.append(c)
        if c_up is not None:
            guess[path] = c_up
        out.append(_Prefix(tuple(blocks), tuple(path), c_lo, c_up, und, cmax))

    def extend(path, depth, blocks, st, start):
        if depth == len(path) - 1:
            last_block(path, blocks, st, start)
            return
        m, nxt = path[depth], path[depth + 1]
        p = instance.switch_index[(m, nxt)]
        remaining = len(path) - depth - 1
        cur = st
        for a in range(1, k_max - start - remaining + 1):
            limits.check_time("milp-exact: scan of the prefixes")
            cur = run_term(start + a - 1, m, cur)
            jumped = lat.jump_term(p, cur)
            extend(path, depth + 1, blocks + [a], jumped, start + a)

    for path in paths:
        extend(tuple(path), 0, [], lat.start(), 0)
    return out, lat


def _cheapest(data: Data, k_max: int, seqs, gap: float) -> SolveResult | None:
    """The enumeration MILP over ``seqs`` (exact real-x cost, λ cuts); its
    master solves get what is left of the :func:`deplbench.limits.deadline` scope."""
    seqs, counts = pareto_sequences(seqs, data.M)
    if not seqs:
        return None
    limits.check_time("milp-exact: MILP over the enumerated sequences")
    bounds = Bounds(k_min=1, k_max=k_max, bigm=None, incumbent=None, lam=data.lam_reference(1))
    model = EnumModel(data, bounds, seqs, counts)
    be, _ = make_backend(model, "highs", 1, 0, False, "highs")
    return cut_loop(data, model, be, None, gap, {}, {}, time.perf_counter())


class _Bracket:
    """What the solve has proven so far: the bracket a stop reports."""

    def __init__(self, t0: float):
        self.t0 = t0
        self.phase = "lattice spectra"
        self.lb: float | None = None
        self.ub: float | None = None
        self.plan = None
        self.diag: dict = {}

    def result(self, status: str, message: str) -> SolveResult:
        self.diag["phase"] = self.phase
        self.diag["total_s"] = time.perf_counter() - self.t0
        lb = self.lb if self.ub is None or self.lb is None else min(self.lb, self.ub)
        if status == "infeasible":
            self.ub = lb = None
        return SolveResult(algorithm="milp-exact", status=status, plan=self.plan if self.ub is not None else None,
                           cost=self.ub, lower_bound=lb, gap=SolveResult.relative_gap(self.ub, lb),
                           diagnostics=self.diag, message=message)


#: The options of one exact static solve, declared once: the ``milp-exact``
#: solver declares this table as its parameters and :func:`solve_exact_static`'s
#: keywords are checked against it (the suite's one validation path,
#: :mod:`deplbench.params`).
EXACT_STATIC_PARAMETERS: dict[str, Param] = {
    "time_limit": TIME_LIMIT.but(default=300.0),
    # a bracket wider than half its upper end proves little about z*: refused, not reported as optimal
    "gap": Param(1e-4, float, "relative bracket width (UB − LB)/UB at which to stop refining", low=0.0,
                 low_inclusive=False, high=0.5),
    "memory_limit": limits.MEMORY_LIMIT_PARAM,
    "rounds": Param(20, int, "refinement rounds (re-solves of the two MILPs) at most", low=1),
}


@dataclass(frozen=True)
class ExactStaticSettings:
    """Every option of one exact static solve, checked once and passed down whole.

    Built by :meth:`from_params` (keywords, as :func:`solve_exact_static`
    passes them), by :meth:`from_resolved` (values already checked by
    :func:`deplbench.params.resolve`, as :func:`deplbench.solvers.run.solve`
    gives them) or directly (every field checked, strictly). The fields are
    those of :data:`EXACT_STATIC_PARAMETERS` and ``lattice``, the precision
    of the enumeration's lattice (:class:`ExactSettings`).
    """

    time_limit: float | None = 300.0
    gap: float = 1e-4
    memory_limit: float = limits.MEMORY_BUDGET_GIB
    rounds: int = 20
    lattice: ExactSettings = field(default_factory=ExactSettings)

    def __post_init__(self) -> None:
        given = {name: getattr(self, name) for name in EXACT_STATIC_PARAMETERS}
        for name, value in resolve(EXACT_STATIC_PARAMETERS, given, owner="solve_exact_static",
                                   strict=True).items():
            object.__setattr__(self, name, value)
        _check_lattice(self.lattice)

    @classmethod
    def from_params(cls, given: Mapping[str, Any], lattice: ExactSettings | None = None, *,
                    strict: bool = False) -> ExactStaticSettings:
        """The settings from options (``strict``: typed values only) and the lattice precision.

        Raises
        ------
        SolverError
            One line naming the first unknown or invalid option.
        """
        values = resolve(EXACT_STATIC_PARAMETERS, given, owner="solve_exact_static", strict=strict)
        return cls.from_resolved({**values, "lattice": ExactSettings() if lattice is None else lattice})

    @classmethod
    def from_resolved(cls, resolved: Mapping[str, Any]) -> ExactStaticSettings:
        """The settings from values :func:`deplbench.params.resolve` already checked
        against :data:`EXACT_STATIC_PARAMETERS` (nothing is converted again)."""
        settings = trusted(cls, resolved)
        _check_lattice(settings.lattice)
        return settings

    def record(self) -> dict[str, Any]:
        """The options as a result's ``params`` record them."""
        return {name: getattr(self, name) for name in EXACT_STATIC_PARAMETERS}


def _check_lattice(lattice) -> None:
    if not isinstance(lattice, ExactSettings):
        raise SolverError(f"settings: expected an ExactSettings (the lattice precision), got "
                          f"{type(lattice).__name__}")


def solve_exact_static(instance, time_limit: float | None = 300.0, gap: float = 1e-4, rounds: int = 20,
                       settings: ExactSettings = ExactSettings(), memory_limit: float = limits.MEMORY_BUDGET_GIB
                       ) -> SolveResult:
    """Deterministic bracket LB ≤ z* ≤ UB on the true static optimum (module docstring).

    The keywords are a front: they are checked once
    (:data:`EXACT_STATIC_PARAMETERS`, the ``milp-exact`` solver's table) into
    an :class:`ExactStaticSettings`, which :func:`run_exact_static` reads.

    Parameters
    ----------
    instance : Instance
    time_limit : float or None, default 300
        Wall-clock seconds (> 0; None: no limit); nested inside any
        enclosing :func:`deplbench.limits.deadline` scope (the earlier
        deadline wins).
    gap : float, default 1e-4
        Relative bracket width at which to stop, in (0, 0.5].
    rounds : int, default 20
        Refinement rounds (re-solves of the two MILPs) at most, ≥ 1.
    settings : ExactSettings
        Precision of the enumeration's lattice (its ``tail``).
    memory_limit : float, default 2
        GiB the lattice may take (estimated before it is allocated).

    Returns
    -------
    SolveResult
        ``cost`` and ``plan``: the cheapest plan proven feasible by the shared
        decision
        (:func:`~deplbench.formulations.evaluation.exact_violation.plan_violation_bounds`,
        the one ``evaluate --exact`` reads), the UB; ``lower_bound``: LB. Status

        * ``optimal``: the bracket is within ``gap``;
        * ``feasible``: a proven-feasible plan, the bracket wider than ``gap``
          after the rounds;
        * ``infeasible``: every model sequence within Tmax is *proven* to
          violate (3), or none of the sequences not proven to violate it
          fits Tmax;
        * ``no_solution``: no sequence is proven feasible and not all are
          proven infeasible at this precision (plans at the feasibility
          boundary): LB still holds;
        * ``time_limit``: the deadline fell in a phase (named in the message
          and ``diagnostics["phase"]``), with the bracket proven so far;
        * ``error``: it does not apply, or the lattice would exceed the
          memory budget ``memory_limit``.

    Raises
    ------
    SolverError
        For an invalid option, one line naming it; never for an instance.
    """
    run = ExactStaticSettings.from_params(
        {"time_limit": time_limit, "gap": gap, "rounds": rounds, "memory_limit": memory_limit}, settings,
        strict=True)
    return run_exact_static(instance, run)


def run_exact_static(instance, settings: ExactStaticSettings) -> SolveResult:
    """:func:`solve_exact_static` with options checked once (:class:`ExactStaticSettings`).

    Opens the deadline of ``settings.time_limit`` and the memory budget of
    ``settings.memory_limit``; inside a caller's
    :func:`deplbench.limits.deadline` (``milp-exact`` under
    :func:`deplbench.solvers.run.solve`) the earlier deadline is kept, so the
    solve has one clock.
    """
    if not isinstance(settings, ExactStaticSettings):
        raise SolverError(f"settings: expected an ExactStaticSettings, got {type(settings).__name__}")
    with limits.deadline(settings.time_limit), limits.memory_budget(settings.memory_limit):
        return _run(instance, settings)


def _run(instance, settings: ExactStaticSettings) -> SolveResult:
    """:func:`run_exact_static` inside its deadline and memory budget."""
    t0 = time.perf_counter()
    ok, why = exact_static_applies(instance)
    if not ok:
        return SolveResult(algorithm="milp-exact", status="error", message=why)
    run = _Bracket(t0)
    try:
        return _solve(instance, settings.gap, settings.rounds, settings.lattice, run)
    except limits.TimeLimitReached as exc:
        where = str(exc).split("; no plan")[0]
        kept = ("no bound yet" if run.lb is None and run.ub is None else
                "the bracket proven so far is kept" if run.ub is not None else
                "no plan proven feasible yet, the lower bound holds")
        return run.result("time_limit", f"{where}, in the {run.phase} phase; {kept} (a stop is not a proof "
                          "of infeasibility)")
    except (ExactUnavailable, limits.MemoryLimitExceeded) as exc:
        return run.result("error", str(exc))


def _solve(instance, gap: float, rounds: int, settings: ExactSettings, run: _Bracket) -> SolveResult:
    """:func:`run_exact_static` inside the deadline scope; ``run`` keeps the bracket."""
    data = Data(instance, 1, 0)
    data.lmax = math.inf     # the quantile is decided by the exact bounds, not by scenarios
    fastest = data.fastest
    if not math.isfinite(fastest):
        return run.result("infeasible", f"no configuration fits Tmax = {data.T:g}")
    k_max = (data.K if fastest * data.K <= data.T
             else min(data.K, int(math.floor(data.T / fastest * (1 + 1e-12) + 1e-9))))
    gamma = float(data.gam[0])
    lat = SpectralLattice(instance, gamma, k_max, settings)
    run.diag.update(k_max=k_max, lattice_bytes=lat.memory, lattice_points=lat.N)
    run.phase = "scan"
    prefixes, lat = enumerate_exact(instance, gamma, k_max, settings, lattice=lat)
    diag = run.diag
    diag.update({"prefixes": len(prefixes), "lattice_step": lat.h, "lattice_points": lat.N, "k_max": k_max,
                 "lattice_bytes": lat.memory, "undecided_after_scan": sum(len(p.undecided) for p in prefixes),
                 "refined": 0, "refinements_exhausted": 0, "confirmations": 0,
                 "enumerate_s": time.perf_counter() - run.t0})
    risk = 1.0 - float(instance.omega)
    proven_none = ("every model sequence within Tmax is proven to violate the quantile (3): "
                   f"P(ℓ(K) > ℓmax) > 1 − ω = {risk:g}")
    refined: dict = {}
    # the enumeration's lattice left these undecided: start 4× finer (h/4 decides nearly all of them)
    fine = ExactSettings(target_width=settings.target_width / 100, tail=settings.tail, max_work=settings.max_work,
                         decide=True, start_steps=4 * STEPS_PER_SPREAD, settle=False)

    def verdict(seq) -> str:
        key = tuple(seq.tolist())
        if key not in refined:
            try:
                b = bounds_for_terms(*sequence_terms(instance, seq, gamma), float(instance.loss_max),
                                     float(instance.omega), fine)
                # a feasibility proof counts only where the shared decision agrees (one verdict per plan)
                refined[key] = UNDECIDED if b.verdict == PROVEN_FEASIBLE and not decided(key) else b.verdict
                diag["refinements_exhausted"] += int(b.exhausted and b.verdict == UNDECIDED)
            except ExactUnavailable:
                refined[key] = UNDECIDED
                diag["refinements_exhausted"] += 1
            diag["refined"] += 1
        return refined[key]

    shared: dict = {}

    def decided(seq, plan=None) -> bool:
        """Whether the shared decision proves ``seq`` (or ``plan``) feasible: the same function
        and settings ``evaluate --exact`` uses
        (:func:`~deplbench.formulations.evaluation.exact_violation.plan_violation_bounds`),
        so a returned plan has one verdict."""
        key = tuple(int(m) for m in seq)
        if key not in shared:
            diag["confirmations"] += 1
            try:
                b = (plan_violation_bounds(instance, plan) if plan is not None
                     else violation_bounds(instance, list(key), gamma))
                shared[key] = b.verdict == PROVEN_FEASIBLE
            except ExactUnavailable:
                shared[key] = False
        return shared[key]

    solved: dict = {}

    def cheapest(seqs):
        # a refinement round moves one prefix's c_L or c_U: the other set's MILP is unchanged
        key = tuple(sorted(tuple(s.tolist()) for s in seqs))
        if key not in solved:
            solved[key] = _cheapest(data, k_max, seqs, gap / 4)
        return solved[key]

    for _ in range(rounds):
        prefixes = [p for p in prefixes if p.c_lo is not None]
        if not prefixes:
            return run.result("infeasible", proven_none)
        run.phase = "MILP"
        res_lo = cheapest([p.seq(p.c_lo) for p in prefixes])
        if res_lo.status == "infeasible":
            # every truly feasible plan is dominated by an L sequence (module docstring): none fits
            return run.result("infeasible", "no model sequence not proven to violate the quantile (3) fits Tmax = "
                              f"{data.T:g} (the rest are proven to violate it: P(ℓ(K) > ℓmax) > 1 − ω = {risk:g})")
        if res_lo.lower_bound is not None:
            run.lb = res_lo.lower_bound if run.lb is None else max(run.lb, res_lo.lower_bound)
        if res_lo.status == "time_limit":
            raise limits.TimeLimitReached(f"time limit reached ({res_lo.message})")
        res_up = cheapest([p.seq(p.c_up) for p in prefixes if p.c_up is not None])
        if res_up is not None and res_up.plan is not None and res_up.cost is not None:
            seq = _sequence_of(res_up.plan, instance)
            if not decided(seq, res_up.plan):
                # proven on the enumeration's lattice, not by the shared decision: the
                # length goes back to the undecided ones and the next proven one is sought
                run.phase = "refinement"
                for p in prefixes:
                    if p.c_up == seq.size - sum(p.blocks) and np.array_equal(p.seq(p.c_up), seq):
                        _demote(p, decided)
                continue
            if run.ub is None or res_up.cost < run.ub:
                run.ub, run.plan = res_up.cost, res_up.plan
        if res_up is not None and res_up.status == "time_limit":
            raise limits.TimeLimitReached(f"time limit reached ({res_up.message})")
        lb, ub = run.lb, run.ub
        if ub is not None and lb is not None and (ub - lb) <= gap * ub:
            break
        # refine every undecided length whose cost floor is below UB (only those
        # can raise LB or lower UB), the L-optimum's sequence among them; re-solve
        run.phase = "refinement"
        cutoff = math.inf if ub is None else ub * (1 - gap)
        target = _sequence_of(res_lo.plan, instance) if res_lo.plan is not None else None
        hit = [p for p in prefixes if p.undecided and (
            data.count_floor(p.counts(p.undecided[0], data.M)) < cutoff
            or (target is not None and np.array_equal(p.seq(p.c_lo), target)))]
        if not hit:
            break
        for p in hit:
            limits.check_time("milp-exact: refinement of undecided lengths")
            _refine(p, verdict, lambda c, p=p, cut=cutoff: data.count_floor(p.counts(c, data.M)) < cut)
    prefixes = [p for p in prefixes if p.c_lo is not None]
    if run.ub is None:
        if not prefixes:
            return run.result("infeasible", proven_none)
        return run.result("no_solution", (
            "no sequence proven feasible and not all proven infeasible at this precision (plans at the "
            "feasibility boundary, " + f"{sum(len(p.undecided) for p in prefixes)} lengths undecided); "
            "the lower bound still holds"))
    lb, ub = run.lb, run.ub
    status = "optimal" if lb is not None and ub - lb <= gap * ub else "feasible"
    return run.result(status, "" if status == "optimal" else "bracket wider than gap after the refinement rounds")


def _sequence_of(plan, instance) -> np.ndarray:
    return np.array([instance.model_index[e.model] for e in plan.epochs], dtype=int)


def _refine(p: _Prefix, verdict, worth=lambda c: True) -> None:
    """Re-judge the prefix's undecided lengths on finer lattices; move c_L / c_U.

    Lengths are taken in increasing order while ``worth(c)`` (their cost
    floor is below the incumbent: the floor grows with c, so none after).
    Every length of the prefix not undecided is proven (infeasible below
    c_U, feasible from c_U on), so when c_L is proven infeasible and no
    undecided length or c_U is left, every length is: ``c_lo`` becomes
    None and the prefix leaves the enumeration."""
    for c in list(p.undecided):
        if c != p.c_lo and not worth(c):
            break
        limits.check_time("milp-exact: refinement of undecided lengths")
        v = verdict(p.seq(c))
        p.undecided.remove(c)
        if v == PROVEN_INFEASIBLE and p.c_lo == c:
            later = [x for x in p.undecided if x > c]
            p.c_lo = later[0] if later else p.c_up
            if p.c_lo is None:
                return
        elif v == PROVEN_FEASIBLE and (p.c_up is None or c < p.c_up):
            p.c_up = c
            p.undecided = [x for x in p.undecided if x < c]
            break


def _demote(p: _Prefix, decided) -> None:
    """c_U of ``p`` is not proven by the shared decision: it becomes undecided and the
    next longer lengths are judged by that decision until one is proven (or none is)."""
    c = p.c_up
    p.undecided = sorted(set(p.undecided) | {c})
    p.c_up = None
    for c2 in range(c + 1, p.cmax + 1):
        limits.check_time("milp-exact: confirmation of proven lengths")
        seq = p.seq(c2)
        if decided(seq):
            p.c_up = c2
            return
        p.undecided.append(c2)



__all__ = ["exact_static_applies", "solve_exact_static", "run_exact_static", "enumerate_exact", "SpectralLattice",
           "STEPS_PER_SPREAD", "EXACT_STATIC_PARAMETERS", "ExactStaticSettings"]
