"""The adaptive reference, part 1: the rounded loss chain and its DP (with its rounding bound).

What is solved and guaranteed is in the package docstring
(:mod:`deplbench.formulations.adaptive`): the optimistic chain's Lagrangian
value V₀(λ, μ) − μ(1 − ω) − λ·Tmax is a proven lower bound on the adaptive
optimum for every λ, μ ≥ 0; :func:`dp` computes V₀ by backward induction
with batched FFT correlations; the searches
(:mod:`~deplbench.formulations.adaptive.search`) only choose good multipliers.
The pessimistic chain (⌈·⌉) gives the tables of the certified policy
(:mod:`deplbench.formulations.adaptive.certify`). Here the deadline is
priced (E[T] ≤ Tmax); :mod:`~deplbench.formulations.adaptive.timed` carries
it on the same chain.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from deplbench.errors import PlanError
from deplbench.formulations.adaptive.correlation import (  # noqa: F401 - correlate, fft_error re-exported
    UNIT,
    Kernel,
    correlate,
    correlate_rows,
    fft_error,
)
from deplbench.formulations.model.allocation import TIME_RTOL
from deplbench.instances.datalaw import compute_need
from deplbench.instances.distributions import Empirical, PointMass
from deplbench.limits import check_time

#: Tail mass of a continuous run term (X) binned at the safe end of its kernel.
#: The level of the binary64 check (``instances.magnitudes.TAIL``), but its
#: own choice: the kernels' accuracy, not the validation line.
TAIL = 1e-9
#: The same for a switch jump (Student's t tails are long: a smaller tail
#: would make the kernel, hence every FFT, several times longer).
TAIL_JUMP = 1e-5
#: Most buckets one kernel or the chain may span. A law whose tails span
#: more (a heavy tail, or a loss term huge against ℓ(0) − ℓmax) would need
#: arrays beyond memory and FFTs beyond any time limit: refused, naming it.
MAX_CELLS = 2**21
#: Rounding tolerance in buckets (an atom within it of a grid point is on it).
EPS = 1e-9
#: Stacked quantities of a DP pass: Lagrangian value, P(fail), then the
#: expected remaining time (one row; or compute, communication and the
#: second moment of compute when the policy tables are kept).
V, F = 0, 1


def applies(instance) -> tuple[bool, str]:
    """Whether :func:`~deplbench.formulations.adaptive.bracket.adaptive_bounds` (and the
    ``adaptive-opt`` solver) handle ``instance`` (module docstring, Scope)."""
    if len(instance.datasets) != 1:
        return False, "the adaptive DP handles one dataset (z(d, n) is then fixed: every cluster holds it)"
    if np.any(instance.transfer_matrix != 0):
        return False, "the adaptive DP assumes free transfers (β = 0)"
    if instance.data_rule != "intended":
        return False, "the adaptive DP needs the intended data rule (eq. (6) as printed fixes the cluster)"
    if instance.initial_loss <= instance.loss_max:
        return False, "ℓ(0) already meets ℓmax: the optimum is to stop (cost 0)"
    return True, ""


# --------------------------------------------------------------------------
# the instance's per-action quantities
# --------------------------------------------------------------------------


@dataclass
class Setting:
    """γ, compute, communication, κ, r per (model, cluster); run scale per epoch."""

    gamma: np.ndarray        # (N,)
    compute: np.ndarray      # (M, N)
    comm: np.ndarray         # (M, N)
    kappa: np.ndarray        # (N,)
    cap: np.ndarray          # (N,)
    scale: np.ndarray        # (K, M): A_m decay_m(k)
    usable: np.ndarray       # (M, N) bool
    allowed: np.ndarray      # (M, M) bool, diagonal True
    time_max: float

    @classmethod
    def of(cls, instance) -> Setting:
        held = instance.all_datasets
        volume, gamma = instance.data_effect(held)
        N = instance.n_clusters
        compute = compute_need(instance.model_compute[:, None], np.full((1, N), volume))
        comm = instance.model_size[:, None] / instance.bandwidth[None, :]
        usable = (compute > 0) & (instance.capacity[None, :] > 0)
        return cls(np.full(N, gamma), compute, comm, instance.unit_cost.astype(float),
                   instance.capacity.astype(float), instance.run_scale_for(instance.horizon),
                   usable, instance.allowed.copy(), float(instance.time_max) * (1 + TIME_RTOL))

    def cost_scale(self) -> float:
        """The instance's cost scale: K̄ epochs, each filling its share Tmax/K̄ of the
        deadline (x = min(r, c·K̄/Tmax)), on the dearest usable (model, cluster) pair.

        The failure price and the caps of the multiplier search are set relative to it, so
        that their behaviour does not depend on the unit of cost (κ) or on an idle, huge
        capacity r. 1 when it is not positive and finite (every κ = 0)."""
        K = self.scale.shape[0]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            x = np.minimum(self.cap[None, :], self.compute * K / self.time_max)
            c = np.where(self.usable, self.kappa[None, :] * x, 0.0)
            out = float(K * c.max()) if c.size else 0.0
        return out if math.isfinite(out) and out > 0 else 1.0

    def fastest_epoch(self) -> float:
        """The least time any epoch can take: c/r + s/b over the usable (model, cluster) pairs."""
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            t = np.where(self.usable, self.compute / self.cap[None, :] + self.comm, np.inf)
        return float(t.min()) if t.size else math.inf

    def priced(self, lam: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per (m, n) at time price λ: allocation x*, compute time c/x*, money κx*.

        x* = argmin_{0<x≤r} κx + λ c/x = min(r, sqrt(λ c/κ)) (r when κ = 0)."""
        k = self.kappa[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            x = np.where(k > 0, np.sqrt(lam * self.compute / np.where(k > 0, k, 1.0)), np.inf)
        x = np.minimum(x, self.cap[None, :])
        x = np.where(self.usable, np.maximum(x, 1e-300), 1.0)
        return x, self.compute / x, k * x


# --------------------------------------------------------------------------
# kernels: the distribution of a rounded loss term, in buckets
# --------------------------------------------------------------------------


def kernel(dist, factor: float, h: float, optimistic: bool, tail: float = TAIL) -> Kernel:
    """The law of ⌊factor·D/h⌋ (optimistic) or ⌈factor·D/h⌉ (pessimistic).

    Atoms (point mass, empirical) are rounded exactly; a continuous law is
    binned with its c.d.f. between the quantiles TAIL and 1 − TAIL, the
    tails going to the safe end (module docstring).
    """
    if isinstance(dist, (PointMass, Empirical)):
        vals = np.array([dist.value] if isinstance(dist, PointMass) else dist.samples, dtype=float)
        s = factor * vals / h
        t = np.floor(s + EPS) if optimistic else np.ceil(s - EPS)
        t = t.astype(np.int64)
        lo = int(t.min())
        p = np.bincount(t - lo, minlength=int(t.max()) - lo + 1).astype(float) / t.size
        return Kernel(lo, p)
    q_lo, q_hi = dist.tails(tail)
    a, b = sorted((factor * q_lo / h, factor * q_hi / h))
    lo, hi = math.floor(a), math.ceil(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        cdf = np.asarray(dist.cdf(np.arange(lo, hi + 1, dtype=float) * h / factor), dtype=float)
    if factor < 0:
        cdf = 1.0 - cdf                # P(factor·D ≤ e) = P(D ≥ e/factor) (continuous law)
    mass = np.diff(cdf)                # mass[j]: step s in (lo + j, lo + j + 1] buckets
    below, above = float(cdf[0]), float(1.0 - cdf[-1])
    if optimistic:                     # ⌊s⌋ = lo + j on [lo + j, lo + j + 1)
        return Kernel(lo, np.concatenate([mass, [above]]))   # above: ⌊s⌋ ≥ hi; below: −∞, left out
    p = np.concatenate([[below], mass])                       # ⌈s⌉ = lo + j + 1; below: ⌈s⌉ ≤ lo
    if factor < 0 and float(dist.ppf(0.0)) >= 0:
        # the run term: s < 0 always, so the upper tail rounds up to at most 0
        p = np.concatenate([p, np.zeros(max(0, -hi))])
        p[-lo] += above
        return Kernel(lo, p)
    return Kernel(lo, p, p_inf=above)


# --------------------------------------------------------------------------
# the chain and its DP
# --------------------------------------------------------------------------


class Chain:
    """The rounded loss chain of one instance: grid, kernels, start bucket.

    Parameters
    ----------
    instance : Instance
    buckets : int
        Buckets between ℓmax and ℓ(0) (h = (ℓ(0) − ℓmax)/buckets).
    optimistic : bool
        ⌊·⌋ rounding for the lower bound, ⌈·⌉ for the certified policy.
    """

    def __init__(self, instance, buckets: int, optimistic: bool):
        self.instance = instance
        self.st = Setting.of(instance)
        self.optimistic = bool(optimistic)
        span = instance.initial_loss - instance.loss_max
        self.h = span / int(buckets)
        self.K, (self.M, self.N) = instance.horizon, self.st.compute.shape
        why = chain_refused(instance, buckets, self.st)
        if why:
            raise PlanError(why)
        rise = jump_rise(instance, self.M)
        self.L = int(buckets) + math.ceil(rise / self.h) + 1
        self.i0 = int(buckets)
        self.pairs = {(a, b): instance.switches[p].jump for (a, b), p in instance.switch_index.items()}
        self.kx = [[[kernel(instance.models[m].improvement, -self.st.gamma[n] * self.st.scale[k, m],
                            self.h, optimistic) for n in range(self.N)] for m in range(self.M)]
                   for k in range(self.K)]
        self.kj = {ab: kernel(d, 1.0, self.h, optimistic, TAIL_JUMP) for ab, d in self.pairs.items()}

    def grid(self) -> dict:
        """The loss grid as a result names it: buckets between ℓmax and ℓ(0), step h, states."""
        return {"buckets": int(self.i0), "loss_step": float(self.h), "states": int(self.K * self.M * (self.L + 1))}

    def bucket(self, loss) -> np.ndarray:
        """The observed loss's bucket in this chain (0 = success), clipped to L."""
        s = (np.asarray(loss, dtype=float) - self.instance.loss_max) / self.h
        b = np.floor(s + EPS) if self.optimistic else np.ceil(s - EPS)
        return np.clip(b, 0, self.L).astype(np.int64)


def build_chain(instance, buckets: int, optimistic: bool) -> Chain:
    """:class:`Chain` after checking the deadline (:func:`deplbench.limits.check_time`).

    Every grid the bracket builds goes through here, so a stop that passed while
    the previous step ran is seen before the kernels are built. The build itself
    is K̄·|M|·|N| kernels of at most :data:`MAX_CELLS` cells, short against a DP
    pass on the same grid (docs/adaptive.md, "The time limit"), so it is not
    checked between its epochs.
    """
    kind = "optimistic" if optimistic else "pessimistic"
    check_time(f"adaptive-opt, before building the {kind} loss grid of {int(buckets)} buckets")
    return Chain(instance, buckets, optimistic)


def _reach(dist, factor: float, h: float, tail: float) -> float:
    """Buckets from 0 to the farther end of :func:`kernel`'s support (the law's
    tails, nothing allocated; an atomic law's are its extreme atoms): the
    kernel's length and the padding :func:`correlate` adds."""
    q_lo, q_hi = dist.tails(tail)
    return abs(factor) * max(abs(q_lo), abs(q_hi)) / h


#: Switch laws read between two deadline checks of :func:`jump_rise` (none before the first
#: stride: an instance of a few hundred switches stops where it did, before its first grid).
JUMP_CHECK_STRIDE = 256


def jump_rise(instance, n_models: int) -> float:
    """How far the chain reaches above ℓ(0): the largest 1 − 1e-4 jump quantiles of M − 1 switches.

    Parameters
    ----------
    instance : Instance
    n_models : int
        M: a run switches at most M − 1 times.

    Returns
    -------
    float
        The loss headroom above ℓ(0) that :class:`Chain` grids (and
        :func:`~deplbench.formulations.adaptive.bracket.memory_estimate` counts).
    """
    n = len(instance.switches)
    rises = []
    for p, sw in enumerate(instance.switches):
        if p and p % JUMP_CHECK_STRIDE == 0:
            check_time(f"adaptive-opt's jump headroom, switch {p} of {n}")
        rises.append(max(0.0, float(sw.jump.ppf(1 - 1e-4))))
    return sum(sorted(rises, reverse=True)[:n_models - 1])


def chain_refused(instance, buckets: int, st: Setting | None = None) -> str:
    """Why :class:`Chain` cannot grid ``instance`` at ``buckets``, naming the law, or "".

    A kernel reaching beyond :data:`MAX_CELLS` buckets (or not finite), or
    jumps raising the chain beyond it, would need arrays beyond memory."""
    st = Setting.of(instance) if st is None else st
    h = (instance.initial_loss - instance.loss_max) / int(buckets)
    factor = np.max(np.abs(st.scale), axis=0) * float(np.max(np.abs(st.gamma)))   # largest |γ A_m decay_m(k)|
    laws = [(f"models[{m}].improvement", m_.improvement, float(factor[m]), TAIL)
            for m, m_ in enumerate(instance.models)]
    laws += [(f"switches[{p}].jump", sw.jump, 1.0, TAIL_JUMP) for p, sw in enumerate(instance.switches)]
    for where, dist, scale, tail in laws:
        cells = _reach(dist, scale, h, tail)
        if not cells <= MAX_CELLS:
            return (f"{where}: its {tail:g} to 1 − {tail:g} quantiles reach {cells:.3g} loss buckets "
                    f"(h = (ℓ(0) − ℓmax)/buckets = {h:.3g}), beyond the {MAX_CELLS} the adaptive DP "
                    "grids (a tail that heavy, or a loss term that large against ℓ(0) − ℓmax)")
    rise = jump_rise(instance, len(instance.models))
    if not rise / h <= MAX_CELLS:
        return (f"switches: the jumps' 1 − 1e-4 quantiles add {rise:.3g} to the loss, {rise / h:.3g} buckets "
                f"of h = {h:.3g}: beyond the {MAX_CELLS} the adaptive DP grids")
    return ""


@dataclass
class Pass:
    """One DP pass at (λ, μ): root values and, when kept, the policy tables."""

    lam: float
    mu: float
    value: float          # V₀: Lagrangian value at the start (as computed)
    p_fail: float         # P(fail) of the pass's policy (chain)
    time: float           # its E[T] (chain)
    cost: float           # its E[money cost] (chain)
    action: np.ndarray | None = None   # (K, M+1, L+1) int: m'·N + n', −1 stop
    remaining: np.ndarray | None = None  # (K, M+1, L+1, 3): E[Tc], E[Ts], E[Tc²] from there (incl. this epoch)
    err: float = 0.0      # proven bound on |computed V₀ − exact V₀| (rounding, :func:`dp`)
    err_fail: float = 0.0  # the same for P(fail)
    #: The loss grid of the chain the pass ran on (:meth:`Chain.grid`; a carried pass adds its time points).
    grid: dict = field(default_factory=dict)

    def bound(self, omega: float, time_max: float) -> float:
        """V₀ − μ(1 − ω) − λ Tmax, less the rounding of the pass and of this
        expression: a valid lower bound for the pass's chain at every ω (weak
        duality) in the arithmetic actually done."""
        risk = self.mu * (1.0 - omega)
        raw = self.value - risk - self.lam * time_max
        return raw - self.err - 4.0 * UNIT * (abs(self.value) + risk + self.lam * time_max)


def dp(chain: Chain, lam: float, mu: float, keep: bool = False) -> Pass:
    """Backward DP of the chain MDP priced at (λ, μ) (module docstring).

    Carries, per state, the Lagrangian value V, P(fail) F and the expected
    remaining time; when ``keep`` (the certified policy's tables) compute and
    communication apart plus the second moment of the remaining compute
    time, for the policy's time rescaling. The money cost is V − λT − μF.

    Each epoch correlates one next-state row per distinct (model, kernel)
    (:func:`distinct_rows`: one per model when γ does not depend on the
    cluster) and every action (m', n') reads its row's result; the switch
    jumps are correlated once per distinct row too. The outputs are those of
    one correlation per action, bit for bit (each row is transformed on its
    own, over the same padded kernel span; the tests compare the two).

    Rounding: alongside, a bound E_k (per quantity) on the sup over states of
    |computed − exact| is carried backwards. The terminal values (0, μ, 1)
    are exact; a correlation maps an error E to at most E·(‖p‖₁ + p_inf)
    and adds its own (:func:`fft_error`); adding the epoch's cost adds
    u·(|expectation| + |stage|) plus 8u·|stage| for the stage cost itself
    (x* = sqrt(λc/κ) computed to a few ulps: the cost is stationary there,
    so only its evaluation counts); the minimum over actions and the stop
    is 1-Lipschitz in the sup norm and adds nothing. :attr:`Pass.err` is
    E₀ for V and :meth:`Pass.bound` subtracts it.

    The deadline (:func:`deplbench.limits.check_time`) is read before every
    epoch: a pass on a fine grid takes seconds, and an outer stop comes within
    one epoch of it.
    """
    st, M, N, L1 = chain.st, chain.M, chain.N, chain.L + 1
    _, tc, money = st.priced(lam)
    ts = np.broadcast_to(st.comm, (M, N))
    stage = lam * (tc + ts) + money                       # (M, N)
    Q = 5 if keep else 3
    fail = np.zeros(Q)
    fail[V], fail[F] = mu, 1.0
    nxt = np.zeros((M, Q, L1))
    nxt[:, :, 1:] = fail[None, :, None]                    # k = K̄: must stop
    top = None if chain.optimistic else fail
    act = np.full((chain.K, M + 1, L1), -1, dtype=np.int32) if keep else None
    rem = np.zeros((chain.K, M + 1, L1, 3), dtype=np.float32) if keep else None
    big = np.where(st.usable, 0.0, np.inf)
    times = [tc, ts, np.zeros((M, N))] if keep else [tc + ts]
    here = np.stack([stage + big, np.zeros((M, N)), *times], axis=-1)   # (M, N, Q)
    # rounding of adding the epoch: 9u·|stage| (its own evaluation and the sum), usable pairs only
    here_err = 9.0 * UNIT * np.where(np.isfinite(here), np.abs(here), 0.0)
    usable = st.usable.reshape(M * N)
    stop = np.zeros((Q, L1))
    stop[:, 1:] = fail[:, None]
    err = np.zeros(Q)                                      # sup-norm error of nxt, per quantity
    for k in range(chain.K - 1, -1, -1):
        check_time(f"adaptive-opt's DP pass on {chain.i0} buckets, backward step {chain.K - k} of {chain.K}")
        tops = nxt[:, :, -1] if top is None else np.broadcast_to(top, (M, Q))
        models, kers, index = distinct_rows(chain, k)
        ex_u, err_u = correlate_rows(nxt[models], kers, tops[models], err)
        sw, err_sw = switch_values(chain, ex_u, top, err_u, index)
        ex, err_ex = ex_u[index], err_u[index]             # rows (m', n'): (M·N, Q, L1)
        # the epoch's own cost and time after the expectations (mass sent to
        # −∞ is left out of a kernel, but its epoch is still paid); unusable
        # pairs priced out after the FFTs (an inf would spoil them)
        e_new = np.max(np.where(usable[:, None], err_ex + UNIT * np.abs(ex).max(axis=-1)
                                + here_err.reshape(M * N, Q), 0.0), axis=0)
        for (a, b), e in err_sw.items():
            e_sw = e + UNIT * np.abs(sw[(a, b)]).max(axis=-1) + here_err[b]
            e_new = np.maximum(e_new, np.max(np.where(st.usable[b][:, None], e_sw, 0.0), axis=0))
        err = e_new
        ex = _add_epoch(ex, here.reshape(M * N, Q), keep)
        for (a, b) in sw:
            sw[(a, b)] = _add_epoch(sw[(a, b)], here[b], keep)
        cur = np.empty((M + 1, Q, L1))
        for m in range(M + 1):                             # m = M: no model yet (k = 0)
            cand, ids = _candidates(chain, ex, sw, m, N)
            best = np.argmin(cand[:, V], axis=0)           # (L1,)
            choice = np.take_along_axis(cand, best[None, None, :], axis=0)[0]
            go = choice[V] < stop[V]
            go[0] = False                                  # bucket 0: success, stop
            cur[m] = np.where(go[None, :], choice, stop)
            if keep:
                act[k, m] = np.where(go, ids[best], -1)
                rem[k, m] = cur[m, 2:5].T
        if k == 0:
            root = cur[M, :, chain.i0]
        nxt = cur[:M]
    t_root = float(root[2:4].sum() if keep else root[2])
    return Pass(lam, mu, float(root[V]), float(root[F]), t_root,
                float(root[V] - lam * t_root - mu * root[F]), act, rem, float(err[V]), float(err[F]), chain.grid())


def best_success(chain: Chain) -> tuple[float, float]:
    """The chain's highest P(success) over all policies, deadline and cost ignored,
    with a bound on its rounding error: (p, err).

    Backward DP on P(fail) alone (same kernels, same correlations as :func:`dp`,
    one per distinct row).
    On the optimistic chain every true policy is matched by a chain policy
    succeeding at least as often (package docstring, relaxation 1), so a
    target ω above p + err is reached by no policy of the instance.

    It is the bracket's first pass, before any bound exists, and as long as a
    priced pass's correlations: the deadline (:func:`deplbench.limits.check_time`)
    is checked before every epoch, so a stop is not passed by a whole pass.
    """
    M, N, L1 = chain.M, chain.N, chain.L + 1
    usable = chain.st.usable
    nxt = np.ones((M, 1, L1))
    nxt[:, :, 0] = 0.0
    stop = nxt[0].copy()
    top = None if chain.optimistic else np.ones(1)
    err = np.zeros(1)
    for k in range(chain.K - 1, -1, -1):
        check_time(f"adaptive-opt's reachability pass on {chain.i0} buckets, backward step {chain.K - k} "
                   f"of {chain.K}")
        tops = nxt[:, :, -1] if top is None else np.broadcast_to(top, (M, 1))
        models, kers, index = distinct_rows(chain, k)
        ex_u, err_u = correlate_rows(nxt[models], kers, tops[models], err)
        sw, err_sw = switch_values(chain, ex_u, top, err_u, index)
        ex, err_ex = ex_u[index], err_u[index]
        ex[~usable.reshape(M * N)] = np.inf
        for (a, b) in sw:
            sw[(a, b)][~usable[b]] = np.inf
        err = np.maximum(err_ex.max(axis=0), max((e.max(axis=0) for e in err_sw.values()), default=np.zeros(1)))
        cur = np.empty((M + 1, 1, L1))
        for m in range(M + 1):
            cand, _ = _candidates(chain, ex, sw, m, N)
            cur[m] = np.minimum(cand.min(axis=0), stop)
        if k == 0:
            root = float(cur[M, 0, chain.i0])
        nxt = cur[:M]
    return 1.0 - root, float(err[0]) + UNIT


def _add_epoch(ex: np.ndarray, here: np.ndarray, keep: bool) -> np.ndarray:
    """Add this epoch's cost and time (``here``, (R, Q)) to the expectations
    over the next state (``ex``, (R, Q, L1)); with ``keep`` row 4 is the second
    moment of the remaining compute time U = a + U′: E[U²] = E[U′²] + 2a E[U′] + a²
    (a = this epoch's compute time, row 2 of ``here``)."""
    if keep:
        a = here[:, 2, None]
        ex[:, 4] += a * (2.0 * ex[:, 2] + a)
    ex[:, :4 if keep else 3] += here[:, :4 if keep else 3, None]
    return ex


def _kernel_key(k: Kernel) -> tuple:
    """A kernel's content (start, mass at +∞, probabilities): equal keys, equal correlations."""
    return (k.lo, k.p_inf, k.p.shape, k.p.tobytes())


def distinct_rows(chain: Chain, k: int) -> tuple[np.ndarray, list[Kernel], np.ndarray]:
    """The distinct (model m', run-term kernel) pairs of epoch ``k``: the correlations a DP step needs.

    Every action (m', n') correlates the next state's row of model m' with the kernel
    ``chain.kx[k][m'][n']``; clusters whose kernels are equal in value (γ(n) equal for every
    n, as :meth:`Setting.of` sets it) need the correlation only once. Rows are in model order,
    each model's in cluster order of first appearance.

    Returns
    -------
    models : (R,) int
        The model m' of each distinct row (the next-state row it reads).
    kernels : list of R :class:`Kernel`
        Its kernel.
    index : (M·N,) int
        For every action row m'·N + n', its distinct row: the expectations of all
        actions are ``ex[index]`` when ``ex`` holds the R distinct ones.
    """
    M, N = chain.M, chain.N
    of: dict[tuple, int] = {}
    models: list[int] = []
    kernels: list[Kernel] = []
    index = np.empty(M * N, dtype=np.intp)
    for m in range(M):
        for n in range(N):
            kx = chain.kx[k][m][n]
            j = of.setdefault((m, _kernel_key(kx)), len(models))
            if j == len(models):
                models.append(m)
                kernels.append(kx)
            index[m * N + n] = j
    return np.array(models, dtype=np.intp), kernels, index


def switch_values(chain, ex, top, err_ex, index=None, per_cluster=True, workers=1):
    """E over the switch jump of the run-term expectation: {(m, m'): (N, Q, L1)},
    and the bound on their rounding error, {(m, m'): (N, Q)}.

    ``ex``, ``err_ex``: the run-term expectations and their error bounds, one row per
    (m', n') (M·N rows), or with ``index`` (:func:`distinct_rows`) one per distinct row,
    ``index`` giving each (m', n')'s. Each distinct row is correlated once: clusters
    reading the same row get the same values. ``per_cluster`` False: one row per distinct
    row of model m' instead of one per cluster (in the order of their ids). ``workers``: the
    FFTs' threads (:func:`~deplbench.formulations.adaptive.correlation.correlate`: the same
    values for any number)."""
    N = chain.N
    if index is None:
        index = np.arange(chain.M * N)
    out, err = {}, {}
    for (a, b), kj in chain.kj.items():
        uniq, back = np.unique(index[b * N:(b + 1) * N], return_inverse=True)
        rows = ex[uniq]
        # above the grid: optimistic = the clamped top row; pessimistic = failure
        t = rows[:, :, -1] if top is None else np.broadcast_to(top, (uniq.size, rows.shape[1]))
        e_in = err_ex[uniq].max(axis=0)
        o, e = correlate_rows(rows, [kj] * uniq.size, t, e_in, workers=workers)
        out[(a, b)], err[(a, b)] = (o[back], e[back]) if per_cluster else (o, e)
    return out, err


def _candidates(chain, ex, sw, m, N):
    """Candidate actions from model m (M = none): stay / allowed switches; ids m'·N + n'."""
    M = chain.M
    blocks, ids = [], []
    for b in range(M):
        if m == M or b == m:
            blocks.append(ex[b * N:(b + 1) * N])
        elif (m, b) in sw:
            blocks.append(sw[(m, b)])
        else:
            continue
        ids.extend(b * N + n for n in range(N))
    return np.concatenate(blocks, axis=0), np.array(ids, dtype=np.int32)


__all__ = [
    "MAX_CELLS",
    "build_chain",
    "chain_refused",
    "jump_rise",
    "EPS",
    "TAIL",
    "TAIL_JUMP",
    "Chain",
    "F",
    "Kernel",
    "Pass",
    "Setting",
    "UNIT",
    "V",
    "applies",
    "best_success",
    "correlate",
    "distinct_rows",
    "switch_values",
    "dp",
    "fft_error",
    "kernel",
]
