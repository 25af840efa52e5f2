"""The scan of the exact static optimum: every prefix's last block judged on one spectral lattice.

What is solved
--------------
Step 1 of :mod:`deplbench.formulations.exact.static` (``milp-exact``): for
problem (2)–(6) with constraint (3) on the *true* law of ℓ(K) (not an SAA),
on the structure of the sequence enumeration
(:mod:`deplbench.formulations.milp.enumeration`: an acyclic switch graph,
one data class, non-negative improvements), the verdict of every model
sequence within the horizon: proven feasible (p_hi ≤ 1 − ω), proven
infeasible (p_lo > 1 − ω) or undecided at the lattice's precision. A
sequence's violation probability P(ℓ(K) > ℓmax) depends on the model
sequence only.

Algorithm
---------
* **Lattice** (:class:`SpectralLattice`): every run term (epoch, model) and
  every switch jump is discretised once per instance on one lattice hZ, as
  :func:`~deplbench.formulations.evaluation.exact_violation.discretise_all`
  does (L⁻ and L⁺ cells), and kept as real-FFT spectra of one length; a
  sequence's bounds [p_lo, p_hi] are a product of spectra and one tail sum
  (the judge), allowance included.
* **Scan** (:func:`enumerate_exact`): a node is a prefix — a path of the
  switch graph and every block length but the last — held as the running
  product of its spectra (one product per added epoch). Branching: the next
  block length, depth-first along each path, lengths in increasing order.
  The last block length c is scanned from the previous prefix's c_U (a good
  guess) down to a proven-infeasible length or up past c_L and c_U. With
  non-negative improvements the true violation probability decreases in c,
  so

  * c_L = the first c not proven infeasible: every truly feasible
    completion of the prefix has c ≥ c_L (the earlier c are proven
    infeasible, directly or by monotonicity);
  * c_U = the first c proven feasible; the lengths in between are
    proven infeasible or undecided.

* **Refinement** (:func:`refine_prefix`, :func:`demote_prefix`): the solve
  loop re-judges a prefix's undecided lengths with finer bounds, in
  increasing order while their cost floor is below the incumbent, and
  moves c_L and c_U; a c_U the shared decision does not confirm becomes
  undecided and the longer lengths are judged by that decision.

Guarantee
---------
Every verdict is rigorous: the lattice's [p_lo, p_hi] encloses the true
violation probability as
:func:`~deplbench.formulations.evaluation.exact_violation.violation_bounds`
at the same step does (same cells, same allowance), so "proven" is never
contradicted by finer bounds. After the scan and every refinement, every
length of a prefix below c_L is proven infeasible, c_U is proven feasible
and every length between them not undecided is proven infeasible; a prefix
whose every length is proven infeasible leaves the enumeration. Assumes the
exact_violation allowance (module docstring there).

Notes
-----
Memory: 2 · k_max · |M| spectra of N/2 + 1 complex numbers, estimated
before anything is allocated and checked against the memory budget
(:func:`deplbench.limits.check_memory`). Every judged length, prefix and
refined length reads the :func:`deplbench.limits.deadline` scope.

References
----------
DepL paper eqs. (2)–(8); the bounds are those of
:mod:`deplbench.formulations.evaluation.exact_violation`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import cast

import numpy as np
from scipy import fft as sfft

from deplbench import limits
from deplbench.formulations.evaluation.exact_violation import (
    PROVEN_FEASIBLE,
    PROVEN_INFEASIBLE,
    UNDECIDED,
    ExactSettings,
    ExactUnavailable,
    Term,
    discretise_all,
    fft_allowance,
    irwin_hall_cells,
    term_cells,
    term_iqrs,
)
from deplbench.formulations.milp.enumeration import dag_paths

#: Lattice steps per unit of the typical plan's spread (σ̂ / this = h).
STEPS_PER_SPREAD = 64
_EPS = float(np.finfo(float).eps)


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
        omega = np.exp(2j * np.pi * np.arange(N) / N)
        self._one_minus = 1.0 - omega
        # k·i0 < N²/2: int32 where that fits, whose floor division by a scalar (libdivide) is cheap
        self._k = np.arange(1, N // 2, dtype=np.int32 if N * N // 2 < 2**31 else np.int64)
        self._inv = 1.0 / (omega[1:N // 2] - 1.0)
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
        j = self._k * i0                         # 0 < i0 < N: no overflow (see __init__)
        j -= (j // N) * N                        # (k·i0) mod N
        g = self._one_minus[j] * self._inv
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
            return _State(self.lo, self.up, self.off_lo, self.off_up, self.n, self.det + cast(float, det_value),
                          self.log_keep, self.shift)
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

    # an acyclic switch graph (exact_static_applies): dag_paths gives the paths
    for path in cast("list[tuple[int, ...]]", paths):
        extend(tuple(path), 0, [], lat.start(), 0)
    return out, lat


def refine_prefix(p: _Prefix, verdict, worth=lambda c: True) -> None:
    """Re-judge the prefix's undecided lengths on finer lattices; move c_L / c_U.

    Lengths are taken in increasing order while ``worth(c)`` (their cost
    floor is below the incumbent: the floor grows with c, so none after).
    Every length of the prefix not undecided is proven (infeasible below
    c_U, feasible from c_U on), so when c_L is proven infeasible and no
    undecided length or c_U is left, every length is: ``c_lo`` becomes
    None and the prefix leaves the enumeration.

    Parameters
    ----------
    p : prefix record of :func:`enumerate_exact`
        Changed in place (``c_lo``, ``c_up``, ``undecided``).
    verdict : callable
        Model sequence → verdict of finer bounds (``"proven feasible"``,
        ``"proven infeasible"`` or ``"undecided"``).
    worth : callable, optional
        Length c → whether refining it can move the bracket (default: every
        length).

    Raises
    ------
    TimeLimitReached
        When the :func:`deplbench.limits.deadline` scope runs out (read
        before every length).
    """
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


def demote_prefix(p: _Prefix, decided) -> None:
    """c_U of ``p`` is not proven by the shared decision: it becomes undecided and the
    next longer lengths are judged by that decision until one is proven (or none is).

    Parameters
    ----------
    p : prefix record of :func:`enumerate_exact`
        Changed in place: ``c_up`` (the first longer length proven, or None)
        and ``undecided``.
    decided : callable
        Model sequence → whether the shared decision
        (:func:`~deplbench.formulations.evaluation.exact_violation.violation_bounds`)
        proves it feasible.

    Raises
    ------
    TimeLimitReached
        When the :func:`deplbench.limits.deadline` scope runs out (read
        before every length).
    """
    c = p.c_up
    p.undecided = sorted(set(p.undecided) | {c})
    p.c_up = None
    for c2 in range(cast(int, c) + 1, p.cmax + 1):
        limits.check_time("milp-exact: confirmation of proven lengths")
        seq = p.seq(c2)
        if decided(seq):
            p.c_up = c2
            return
        p.undecided.append(c2)


__all__ = ["SpectralLattice", "enumerate_exact", "refine_prefix", "demote_prefix", "STEPS_PER_SPREAD"]
