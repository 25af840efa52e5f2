"""Scenario-group quantile bound for the ``general`` block search.

Why
---
The per-scenario completion bound of :class:`~.search.BlockSearch`
lets every scenario pick its own completion. With independent draws per
(scenario, epoch, model) a scenario's own plan collects, epoch by epoch, the
best of the models' draws and times its switches to its lowest jumps, so the
(p+1)-th largest per-scenario optimum sits far below the cost of one plan for
all scenarios (on the cyclic AlexNet, K̄ = 100, ℓmax = 9: 1282 against an
optimum near 1750 at S = 100). The bound of this module forces *one*
completion on a whole group of scenarios.

The bound (proof)
-----------------
Fix a search node: k epochs done, last virtual model v, per-scenario losses
L_s. A completion c (possibly empty) has a linear weight W(c) ≥ 0 (the
λ-dual cost weights, ``general`` module docstring) and lowers scenario s's
loss by Δ_s(c) (improvements minus switch jumps), so its final loss is
L_s − Δ_s(c).

1. *One group.* Let G be a set of scenarios and π ∈ R^G, π ≥ 0. If c leaves
   every s ∈ G at or below ℓmax, then each term π_s (L_s − Δ_s(c) − ℓmax) is
   ≤ 0, so

       W(c) ≥ W(c) + Σ_{s∈G} π_s (L_s − Δ_s(c) − ℓmax)
            ≥ min_{c'} [W(c') − Σ_{s∈G} π_s Δ_s(c')] + Σ_{s∈G} π_s (L_s − ℓmax)
            = V^π(k, v) + π·(L_G − ℓmax),

   where the minimum runs over *all* completions from (k, v) (every allowed
   successor, every length, stopping included, at most kmax epochs in all),
   a superset of those the search enumerates. W(c) is linear in the epochs
   and Σ_s π_s Δ_s(c) is a sum of per-epoch and per-switch terms with the
   aggregated draws Σ_s π_s a_s and Σ_s π_s J_s, so V^π is one backward
   min-plus DP over (epoch, virtual model), exactly like the per-scenario
   table but on one "pseudo-scenario" per π. Any π gives a valid bound; the
   best π is the Lagrangian dual of "all of G satisfied", i.e. the LP
   relaxation of that path problem with |G| side constraints. Hence
   h_G := max(0, max_{π ∈ Π_G} [V^π(k, v) + π·(L_G − ℓmax)]) for any finite
   pool Π_G of multipliers.
2. *Quantile over groups.* Let G_1..G_r (r ≥ p+1) be disjoint. A completion
   that leaves at most p scenarios above ℓmax (the SAA constraint) has a
   violated member in at most p groups, so it satisfies every member of at
   least r − p groups and W(c) ≥ h_{G_j} for each of them; therefore W(c) is
   at least the (p+1)-th largest of h_{G_1}, .., h_{G_r}. With singleton
   groups this is the per-scenario bound of ``search`` (Luedtke
   2014's single-scenario subproblems, the order statistic of Xie & Ahmed
   2018's quantile cuts); with larger groups it is the scenario-grouping
   bound of Ahmed, Luedtke, Song & Xie (2017) and Deng et al. (2021), here
   with a Lagrangian (rather than an exact) group subproblem.

3. *Counting switches.* When every plan of fewer than B blocks of the
   assignment has already been evaluated exactly (``incumbent``),
   only completions that make a plan of at least B blocks need a bound: at a
   node with d blocks done they have at least c = max(0, B − d) switches
   (each further block starts with a change of virtual model). Step 1 holds
   verbatim with the minimum over that subset, and the subset is the
   language of a DP with one more state, the switches still required:
   V^π(k, v, c) = min(stay on v: V^π(k+1, v, c); switch to u: J + V^π(k+1,
   u, max(c−1, 0))) plus the epoch's weight and π-gain, and stopping only at
   c = 0 (``_path_blocks``, ``GroupTables._switch_layers``). This removes
   the relaxation's main weakness on the cyclic AlexNet: its LP solution
   mixes cheap infeasible two-block plans (e.g. i21–s25, violating 87 of 91
   scenarios of a group) with dear feasible three-block ones, which no
   longer qualify; the root bound rises from 1609 to 1796 against the
   optimum 1802.63 (S = 1000, ℓmax = 9, converged Kelley, one probe).

Kelley's iterates oscillate in the |G| ≈ 90-dimensional π space; each
query is smoothed towards the best π so far (in-out smoothing, Wentges
1997, ``GeneralSettings.kelley_smoothing`` = 0.5): within the same 40 iterations the switch-counting
root bound at S = 1000 rises from 1771 to 1790 (one probe). Any
query point is a valid multiplier, so this changes strength only.

No quantity in the argument depends on how the groups or the π are chosen,
so both are heuristics for strength only: we deal the scenarios, sorted by
their per-scenario root bound (hardest first), round-robin into r = p+1
groups (each group gets one of the p+1 hardest), and fill each pool by
Kelley's cutting-plane method on the dual at the root state (column
generation: each DP solution is a column; the LP over the columns gives the
next π; every iterate is kept, it is valid everywhere).

Bound values (deterministic): cyclic AlexNet K̄ = 100, ℓmax = 9,
root bound 1282 → 1596 at S = 100 and 1244 → 1578 at S = 1000 (per-scenario
→ group bound); with the ≤ 3-block plans covered and three switches
required (item 3), 1771 at S = 1000 within the pool's Kelley
budget, 1796 with Kelley converged, against the optimum 1802.63.

References
----------
J. Luedtke, Math. Prog. 146 (2014) 219–244; W. Xie, S. Ahmed, Math. Prog.
172 (2018) 621–646; S. Ahmed, J. Luedtke, Y. Song, W. Xie, "Nonanticipative
duality, relaxations, and formulations for chance-constrained stochastic
programs", Math. Prog. 162 (2017) 51–81; Y. Deng, H. Jia, S. Ahmed, J. Lee,
S. Shen, "Scenario grouping and decomposition algorithms for
chance-constrained programs", INFORMS J. Comput. 33 (2021) 757–773;
J. Kelley, J. SIAM 8 (1960); P. Wentges, "Weighted Dantzig–Wolfe
decomposition for linear mixed-integer programming", Int. Trans. Oper. Res.
4 (1997) 151–162 (in-out smoothing).
"""

from __future__ import annotations

import math

import numpy as np

from deplbench import limits
from deplbench.formulations.general.minplus import backward_minplus
from deplbench.formulations.model.scenarios import loss_threshold

#: Rows per group read first by ``GroupTables.group_bounds`` when it may skip candidates.
SCREEN_ROWS = 4

#: Kelley iterations per group by default (each is one DP and one small LP); the
#: solve's budgets are ``GeneralSettings.*_kelley_iterations``, the loop's stopping
#: tolerance, smoothing and π box ``kelley_rel_tol``, ``kelley_smoothing``, ``pi_box``.
MAX_ITERS = 40


class GroupPool:
    """Scenario groups and the pool of multipliers π, shared by every search.

    A π is valid for every configuration, λ and node (module docstring), so
    the pool is filled once (and may grow) and each
    :class:`~.search.BlockSearch` only builds its DP tables from it.

    Parameters
    ----------
    prob : Problem
    order : ndarray
        Scenarios, hardest first; dealt round-robin into p + 1 groups.
    """

    #: the best Lagrangian value of the last Kelley search (set by it)
    last_best: float

    def __init__(self, prob, order: np.ndarray):
        self.prob = P = prob
        self.r = P.p + 1
        self.groups = [np.sort(order[j::self.r]) for j in range(self.r)]
        self.pis: list[list[np.ndarray]] = [[] for _ in self.groups]    # per group, π on G
        self.columns: list[np.ndarray] = []      # root sequences found by the DP (plans)
        self.version = 0
        self._pack()

    def _pack(self) -> None:
        """Dense (R, S) pool, group owner per row, and the aggregated draws."""
        P = self.prob
        rows, owner = [], []
        for g, G in enumerate(self.groups):
            for pi in self.pis[g]:
                full = np.zeros(P.S)
                full[G] = pi
                rows.append(full)
                owner.append(g)
        self.Pi = np.array(rows).reshape(-1, P.S)
        self.owner = np.array(owner, dtype=int)
        # every group is present once filled; reduceat needs the first row of each
        self.starts = np.searchsorted(self.owner, np.arange(self.r))
        self.complete = all(len(x) > 0 for x in self.pis)
        self.a = np.einsum("rs,skm->rkm", self.Pi, P.a)          # (R, K̄, M)
        self.J = np.einsum("rs,skp->rkp", self.Pi, P.J)          # (R, K̄, P)
        self.version += 1

    def extend(self, search, k0: int = 0, v0: int = -1, L=None,
               iters: int = MAX_ITERS) -> None:
        """Kelley's method on every group's dual at node (k0, v0, L) of ``search``; keep every iterate."""
        for g, G in enumerate(self.groups):
            pi0 = self.pis[g][-1] if self.pis[g] else None
            self.pis[g].extend(_kelley(self, search, G, k0, v0, L, pi0, iters,
                                       need=_root_need(search) if v0 < 0 else 0))
        self._pack()

    def probe(self, search) -> list:
        """Plans from the DP paths of the last π of every group on ``search``'s assignment."""
        if self.Pi.shape[0] == 0 or search.kmax < 1:
            return []
        jidx = search.jump_index()
        ends = list(self.starts[1:] - 1) + [self.Pi.shape[0] - 1]
        seqs = [_path(search, jidx, self.a[r], self.J[r])[1] for r in ends]
        return self.feasible_columns(search, seqs)

    def feasible_columns(self, search, seqs) -> list:
        """Distinct shortest SAA-feasible prefixes of DP sequences (incumbent candidates)."""
        P, s = self.prob, search
        out, seen = [], set()
        for seq in seqs:
            if seq.size == 0 or seq.max() >= s.nv:
                continue
            m = s.vm[seq]
            k = np.arange(seq.size)
            step = -(s.vgamma[seq][None, :] * P.a[:, k, m])
            for e in range(1, seq.size):
                if m[e] != m[e - 1]:
                    step[:, e] += P.J[:, e, P.switch_index[(int(m[e - 1]), int(m[e]))]]
            traj = P.l0 + np.cumsum(step, axis=1)
            ok = np.count_nonzero(traj > loss_threshold(P.lmax), axis=0) <= P.p
            if ok.any():
                pre = seq[: int(np.argmax(ok)) + 1]
                key = tuple(pre.tolist())
                if key not in seen:
                    seen.add(key)
                    out.append(pre)
        return out


def _path(search, jidx, a: np.ndarray, J: np.ndarray, k0: int = 0, v0: int = -1, need: int = 0):
    """min_c W(c) − Σ π_s Δ_s(c) over completions from (k0, v0), with the
    aggregated draws ``a`` (K, M) and ``J`` (K, P) of one π; and the sequence.

    From the root (v0 = −1) a completion has at least one epoch; from a node
    it may be empty (value 0, empty sequence). With ``need`` > 0 only
    completions with at least ``need`` switches count (:func:`_path_blocks`).
    """
    if need > 0:
        return _path_blocks(search, jidx, a, J, k0, v0, need)
    s = search
    K, nv = s.kmax, s.nv
    if k0 >= K:
        return 0.0, np.zeros(0, dtype=int)
    gain = s.vgamma[None, :] * a[:K, s.vm]                    # (K, nv)
    V = np.zeros((K + 1, nv))
    ch = np.full((K + 1, nv), -1)
    rows = np.arange(nv)
    for k in range(K - 1, k0, -1):
        Jx = np.concatenate([J[k], [0.0, np.inf]])[jidx]   # (nv_from, nv_to)
        tot = Jx + (s.w - gain[k] + V[k + 1])[None, :]
        u = tot.argmin(axis=1)
        val = tot[rows, u]
        stop = val >= 0
        V[k] = np.where(stop, 0.0, val)
        ch[k] = np.where(stop, -1, u)
    enter = s.w - gain[k0] + V[k0 + 1]
    if v0 >= 0:
        enter = enter + np.concatenate([J[k0], [0.0, np.inf]])[jidx[v0]]
    v = int(enter.argmin())
    if v0 >= 0 and enter[v] >= 0:
        return 0.0, np.zeros(0, dtype=int)
    seq = [v]
    k = k0 + 1
    while k < K and ch[k, v] >= 0:
        v = int(ch[k, v])
        seq.append(v)
        k += 1
    return float(enter[seq[0]]), np.array(seq)


def switch_tables(search, V_next: np.ndarray, enter: np.ndarray, Jx: np.ndarray) -> tuple:
    """One backward step of the block-counting DP, vectorised over a leading axis.

    ``V_next`` (..., nv, C): values at the next epoch with c = 0..C−1 switches
    still required; ``enter`` (..., nv): weight minus gain of training v at
    this epoch; ``Jx`` (..., nv_from, nv_to): the switch's jump (+∞ where not
    allowed; the diagonal, staying, is replaced by +∞ here). Returns (values
    (..., nv, C) before stopping is allowed, the argmin target per c).
    """
    nv = enter.shape[-1]
    C = V_next.shape[-1]
    off = np.where(np.eye(nv, dtype=bool), np.inf, Jx)                  # a switch changes the virtual model
    shift = np.maximum(np.arange(C) - 1, 0)                              # c → c − 1 (0 stays 0)
    stay = enter[..., None] + V_next                                     # (..., nv, C)
    tgt = enter[..., None] + V_next[..., shift]                          # (..., nv_to, C)
    sw = off[..., :, :, None] + tgt[..., None, :, :]                     # (..., from, to, C)
    u = sw.argmin(axis=-2)                                               # (..., from, C)
    best_sw = sw.min(axis=-2)
    take = best_sw < stay
    out = np.where(take, best_sw, stay)
    arg = np.where(take, u, np.arange(nv)[:, None])
    return out, arg


def _path_blocks(search, jidx, a: np.ndarray, J: np.ndarray, k0: int, v0: int, need: int):
    """:func:`_path` restricted to completions with at least ``need`` switches.

    State (k, v, c): k epochs done, current virtual model v, c more switches
    required (c decreases at each switch and stays 0); stopping is allowed
    only at c = 0. From the root the first block is entered at epoch k0 with
    ``need`` switches still required after it.
    """
    s = search
    K, nv = s.kmax, s.nv
    C = need + 1
    if k0 >= K:
        return math.inf, np.zeros(0, dtype=int)
    gain = s.vgamma[None, :] * a[:K, s.vm]
    V = np.full((K + 1, nv, C), np.inf)
    V[K, :, 0] = 0.0
    ch = np.full((K + 1, nv, C), -1)
    for k in range(K - 1, k0, -1):
        Jx = np.concatenate([J[k], [0.0, np.inf]])[jidx]
        val, arg = switch_tables(s, V[k + 1], s.w - gain[k], Jx)
        stop = val[:, 0] >= 0
        val[:, 0] = np.where(stop, 0.0, val[:, 0])
        arg[:, 0] = np.where(stop, -1, arg[:, 0])
        V[k], ch[k] = val, arg
    enter = s.w - gain[k0]
    if v0 < 0:
        tot = enter + V[k0 + 1, :, need]
        v = int(tot.argmin())
        value, c = float(tot[v]), need
    else:
        Jx = np.concatenate([J[k0], [0.0, np.inf]])[jidx]
        val, arg = switch_tables(s, V[k0 + 1][None], enter[None], Jx[None])
        value, v, c = float(val[0, v0, need]), int(arg[0, v0, need]), need
        if v != v0:
            c = max(c - 1, 0)
        if need == 0 and value >= 0:
            return 0.0, np.zeros(0, dtype=int)
    if not math.isfinite(value):
        return math.inf, np.zeros(0, dtype=int)
    seq = [v]
    k = k0 + 1
    while k < K and ch[k, v, c] >= 0:
        u = int(ch[k, v, c])
        if u != v:
            c = max(c - 1, 0)
        v = u
        seq.append(v)
        k += 1
    return value, np.array(seq)


def _delta(prob, search, seq: np.ndarray, G: np.ndarray, k0: int = 0, v0: int = -1) -> np.ndarray:
    """Δ_s of a completion ``seq`` from (k0, v0) for s ∈ G (loss decrease)."""
    P, s = prob, search
    if seq.size == 0:
        return np.zeros(G.size)
    full = np.concatenate([[v0], seq]) if v0 >= 0 else seq
    m = s.vm[full]
    off = 1 if v0 >= 0 else 0
    k = k0 + np.arange(seq.size)
    d = (s.vgamma[seq][None, :] * P.a[G][:, k, s.vm[seq]]).sum(axis=1)
    for e in range(1, full.size):
        if m[e] != m[e - 1]:
            d -= P.J[G, k0 + e - off, P.switch_index[(int(m[e - 1]), int(m[e]))]]
    return d


def _root_need(search) -> int:
    """Switches a plan of ``search`` still needs after its first block: plans with
    fewer than ``search.min_blocks`` blocks are already covered (``incumbent``)."""
    return max(0, int(getattr(search, "min_blocks", 1)) - 1)


def _kelley(pool: GroupPool, search, G: np.ndarray, k0: int = 0, v0: int = -1, L=None,
            pi0=None, iters: int = MAX_ITERS, need: int = 0) -> list:
    """Cutting-plane ascent on max_π V^π(k0, v0) + π·(L_G − ℓmax), π ≥ 0 on G,
    over completions with at least ``need`` switches.

    Returns every iterate π (each gives a valid bound everywhere)."""
    P, s = pool.prob, search
    opts = P.settings
    g = G.size
    jidx = s.jump_index()
    box = opts.pi_box * max(s.mu_ref, 1e-12)
    slack = (np.full(g, P.l0) if L is None else L[G]) - P.lmax
    pi = np.full(g, max(s.mu_ref, 1e-12) / g) if pi0 is None else pi0.copy()
    aG, JG = P.a[G], P.J[G]
    master = KelleyMaster(np.ones((1, g)), box)
    out: list = []
    best = -math.inf
    for _ in range(iters):
        val, seq = _path(s, jidx, np.einsum("s,skm->km", pi, aG), np.einsum("s,skp->kp", pi, JG), k0, v0, need)
        out.append(pi.copy())
        if not math.isfinite(val):      # no completion at all: every π proves it
            best = math.inf
            break
        if val + float(pi @ slack) > best:
            best, center = val + float(pi @ slack), pi.copy()
        if k0 == 0 and v0 < 0:
            pool.columns.append(seq)
        d = _delta(P, s, seq, G, k0, v0)
        master.add_cuts(np.zeros(1, dtype=int), (slack - d)[None], [float(s.w[seq].sum())])
        if limits.expired():
            break
        solved = master.solve()
        if solved is None:
            break
        top, x = float(solved[0][0]), solved[1][0]
        pi = np.clip(x, 0.0, box)
        if top - best <= opts.kelley_rel_tol * max(abs(best), 1e-12):
            out.append(pi.copy())
            break
        if opts.kelley_smoothing > 0:
            # in-out smoothing (Wentges 1997): query between the best π so far and the
            # LP's; damps Kelley's oscillation, any π stays a valid multiplier
            pi = opts.kelley_smoothing * center + (1.0 - opts.kelley_smoothing) * pi
    pool.last_best = best
    return out


class KelleyMaster:
    """Kelley's master LP of r independent rows at once: max Σ t_i s.t. t_i ≤ b + c·π_i
    per cut of row i, 0 ≤ π_i ≤ box·mask_i (``mask`` (r, n) fixes padding members at 0),
    kept in one HiGHS model: a cut is one more row and the dual simplex restarts
    from the last basis. The rows share no variable, so the optimum is every
    row's own master optimum: one solve per iteration for a whole batch
    (``node_groups``), or r = 1 for one group (``_kelley``).
    (``scipy.optimize.linprog`` rebuilt and re-checked the whole LP every
    iteration: ~85 % of _kelley's time went to its wrapper, not to HiGHS, on a
    two-dataset instance at S = 1000.)

    ``presolve`` off suits the many small re-solves of a batch; it is kept on
    for the root pool, whose multipliers (LP vertices) every later bound uses.
    """

    def __init__(self, mask: np.ndarray, box: float, presolve: bool = True):
        import highspy

        from deplbench.formulations.milp.backends import quiet_stdout  # imported on use (HiGHS's banner)

        with quiet_stdout(discard=True):
            self.h = h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", 1)
        if not presolve:
            h.setOptionValue("presolve", "off")
        self.inf, self.ok = highspy.kHighsInf, highspy.HighsModelStatus.kOptimal
        self.r, self.n = mask.shape
        self.width = width = self.n + 1                       # per row: t_i, then π_i
        lower = np.zeros((self.r, width))
        lower[:, 0] = -self.inf
        upper = np.concatenate([np.full((self.r, 1), self.inf), float(box) * mask], axis=1)
        h.addVars(self.r * width, lower.ravel(), upper.ravel())
        h.changeColsCost(self.r, np.arange(self.r, dtype=np.int32) * width, np.full(self.r, -1.0))

    def add_cuts(self, rows: np.ndarray, grad: np.ndarray, b: np.ndarray | list[float]) -> None:
        """Cut t_i − grad·π_i ≤ b of every row i in ``rows`` (grad (len(rows), n))."""
        nc = rows.size
        vals = np.concatenate([np.ones((nc, 1)), -np.asarray(grad, dtype=float)], axis=1)
        index = (rows[:, None] * self.width + np.arange(self.width)[None, :]).astype(np.int32)
        starts = np.arange(nc, dtype=np.int32) * self.width
        self.h.addRows(nc, np.full(nc, -self.inf), np.asarray(b, dtype=float), nc * self.width,
                       starts, index.ravel(), vals.ravel())

    def solve(self):
        """(t (r,), π (r, n)) at the LP optimum, or None when HiGHS does not prove it."""
        self.h.run()
        if self.h.getModelStatus() != self.ok:
            return None
        x = np.asarray(self.h.getSolution().col_value, dtype=float).reshape(self.r, self.width)
        return x[:, 0], x[:, 1:]


class GroupTables:
    """V^π(k, v) of every π of a :class:`GroupPool` for one search, and the bound."""

    def __init__(self, pool: GroupPool, search):
        self.pool, self.search = pool, search
        P = pool.prob
        K = search.kmax
        self.Pi, self.starts = pool.Pi, pool.starts
        R = self.Pi.shape[0]
        a, J = pool.a[:, :K], pool.J[:, :K]
        # The pool's draws as they are now, with Pi and starts: the switch
        # layers built later must use the same rows even if the pool grows.
        self._a, self._J = a, J
        enter = search.w[None, None, :] - search.vgamma[None, None, :] * a[:, :, search.vm]   # (R, K, nv)
        V = backward_minplus(search, enter, J)
        # (k, v) → (R,) contiguous for the node bound
        self.V = np.ascontiguousarray(V.transpose(0, 2, 1))            # (K+1, nv, R)
        if K >= 1:
            self.V_root = (search.w[None, :] - search.vgamma[None, :] * a[:, 0, search.vm] + V[1]).min(axis=1)
        else:
            self.V_root = np.full(R, math.inf)
        self.lmax = P.lmax
        # per group: its rows of the pool and its compact multipliers (the pool is
        # block-diagonal in the scenarios, so the product is done group by group)
        ends = list(self.starts[1:]) + [R]
        self.blocks = [(G, slice(int(a0), int(b0)), self.Pi[a0:b0][:, G]) for G, a0, b0 in
                       zip(pool.groups, self.starts, ends)]
        self._pack_blocks(ends)
        self._screen_order(P.l0)
        # (Vc (K+1, nv, C, R), root (C, R)): built on first use
        self._counted: tuple[np.ndarray, np.ndarray] | None = None

    def _pack_blocks(self, ends) -> None:
        """The blocks stacked for one batched product (``group_bound``): per group, its
        multipliers padded to (r, rows, members) with zeros, its scenarios padded with
        scenario 0 (a zero multiplier adds an exact 0 for a finite loss), and the
        column of each row in (C, R + 1), where column R is −∞ (padding rows never win the max)."""
        r, R = len(self.blocks), self.Pi.shape[0]
        nrow = max(int(b - a) for a, b in zip(self.starts, ends))
        nmem = max(G.size for G in self.pool.groups)
        self._Pi_pad = np.zeros((r, nrow, nmem))
        self._members: np.ndarray = np.zeros((r, nmem), dtype=np.intp)
        self._rowmap = np.full((r, nrow), R, dtype=np.intp)
        for g, (G, rows, PiG) in enumerate(self.blocks):
            n = rows.stop - rows.start
            self._Pi_pad[g, :n, :G.size] = PiG
            self._members[g, :G.size] = G
            self._rowmap[g, :n] = np.arange(rows.start, rows.stop)
        self._members = self._members.ravel()

    def _screen_order(self, l0: float) -> None:
        """Each group's rows sorted by their value at the search's root (all scenarios
        at ℓ0), best first, for the screen of :meth:`group_bounds` (a max over all
        rows does not depend on their order)."""
        root = self.V_root + self.Pi.sum(axis=1) * (l0 - self.lmax)                    # (R,)
        key = np.concatenate([root, [-np.inf]])[self._rowmap]                          # (r, rows)
        order = np.argsort(-key, axis=1, kind="stable")
        self._rowmap = np.take_along_axis(self._rowmap, order, axis=1)
        self._Pi_pad = np.take_along_axis(self._Pi_pad, order[:, :, None], axis=1)

    def group_bound(self, Vk: np.ndarray, L: np.ndarray) -> np.ndarray:
        """The smallest (= (p+1)-th largest of r = p + 1) group bound per candidate
        (:meth:`group_bounds`, then the smallest over the groups)."""
        return self.group_bounds(Vk, L).min(axis=0)

    def group_bounds(self, Vk: np.ndarray, L: np.ndarray, floor=None, skip=None) -> np.ndarray:
        """Every group's bound per candidate, (r, C).

        ``Vk`` (C, R): V^π of every pool row at the candidates' states, ``L`` (S, C):
        their losses. Per group G: h_G = max(0, max over its rows of
        V^π + π·(L_G − ℓmax)) (module docstring, item 1), all groups in one
        batched product instead of a Python loop over them. ``floor`` (r, C),
        optional: other valid group bounds, maxed in.

        ``skip(bound) -> bool mask``, optional: candidates that ``bound`` (the
        smallest over groups) already prunes. The ``SCREEN_ROWS`` rows of each
        group best at the search's root are read first (a max over fewer rows
        is a valid, weaker bound); the other rows only for candidates the screen
        leaves unpruned.
        """
        C = L.shape[1]
        LG = (L[self._members] - self.lmax).reshape(self._Pi_pad.shape[0], self._Pi_pad.shape[2], C)
        Vx = np.concatenate([Vk, np.full((C, 1), -np.inf)], axis=1)            # (C, R + 1)

        def bounds(nrow: int, cols) -> np.ndarray:
            prod = np.matmul(self._Pi_pad[:, :nrow], LG if cols is None else LG[:, :, cols])   # (r, rows, C)
            V = (Vx if cols is None else Vx[cols])[:, self._rowmap[:, :nrow]]                  # (C, r, rows)
            h = np.maximum((prod + V.transpose(1, 2, 0)).max(axis=1), 0.0)                    # (r, C)
            f = floor if floor is None or cols is None else floor[:, cols]
            return h if f is None else np.maximum(h, f, out=h)

        if skip is None or self._Pi_pad.shape[1] <= 2 * SCREEN_ROWS:
            return bounds(self._Pi_pad.shape[1], None)
        h = bounds(SCREEN_ROWS, None)
        todo = np.nonzero(~skip(h.min(axis=0)))[0]
        if todo.size:
            h[:, todo] = bounds(self._Pi_pad.shape[1], todo)
        return h

    def _switch_layers(self, C: int):
        """V^π(k, v, c) for c = 0..C−1 switches still required (``_path_blocks``
        for every π at once); c = 0 is ``self.V``. Built once, on first use."""
        if self._counted is not None and self._counted[0].shape[2] >= C:
            return self._counted
        search = self.search
        K, nv = search.kmax, search.nv
        R = self.Pi.shape[0]
        a, J = self._a, self._J
        jidx = search.jump_index()
        V = np.full((K + 1, R, nv, C), np.inf)
        V[K, :, :, 0] = 0.0
        tail = np.broadcast_to(np.array([[0.0, np.inf]]), (R, 2))
        for k in range(K - 1, -1, -1):
            Jx = np.concatenate([J[:, k, :], tail], axis=1)[:, jidx]
            enter = search.w[None, :] - search.vgamma[None, :] * a[:, k, search.vm]
            val, _ = switch_tables(search, V[k + 1], enter, Jx)
            val[..., 0] = np.minimum(val[..., 0], 0.0)
            V[k] = val
        if K >= 1:
            enter0 = search.w[None, :] - search.vgamma[None, :] * a[:, 0, search.vm]      # (R, nv)
            root = (enter0[:, :, None] + V[1]).min(axis=1).T                                # (C, R)
        else:
            root = np.full((C, R), math.inf)
        self._counted = (np.ascontiguousarray(V.transpose(0, 2, 3, 1)), root)
        return self._counted

    def bound(self, k: np.ndarray, v: int, L: np.ndarray, need: int = 0) -> np.ndarray:
        """(p+1)-th largest group bound per candidate; ``k`` (C,), ``L`` (S, C);
        ``need``: switches every counted completion still makes (0: all completions)."""
        # r = p + 1 groups: the (p+1)-th largest group bound is the smallest
        return self.group_bound(self.values(k, v, need), L)

    def values(self, k: np.ndarray, v, need: int = 0) -> np.ndarray:
        """V^π of every pool row at states (k, v) with ``need`` switches still required: (C, R)."""
        return self.V[k, v, :] if need == 0 else self._switch_layers(need + 1)[0][k, v, need, :]

    def root(self, need: int = 0) -> float:
        """Bound on every plan with at least ``need`` switches (need + 1 blocks)."""
        P = self.pool.prob
        vr = self.V_root if need == 0 else self._switch_layers(need + 1)[1][need]
        val = vr + self.Pi.sum(axis=1) * (P.l0 - P.lmax)
        return float(self._quantile(val[:, None])[0])

    def _quantile(self, val: np.ndarray) -> np.ndarray:
        # the pool is stored group by group: one max per group, then the quantile
        h = np.maximum(np.maximum.reduceat(val, self.starts, axis=0), 0.0)     # (r, C)
        return h.min(axis=0)      # r = p + 1 groups: the (p+1)-th largest is the smallest


__all__ = ["MAX_ITERS", "GroupPool", "GroupTables", "KelleyMaster", "switch_tables"]
