"""Closed-loop simulation: an algorithm judged as it runs, epoch by epoch.

The static evaluator (:mod:`deplbench.formulations.evaluation.evaluate`) judges a *plan*
drawn up before training. PACT (PACT paper Sec. V, Algs. 1–3) and any
receding-horizon method instead observe the realised loss ℓ(k) after every
epoch and choose the next action from it. This module simulates such a
*policy* on many seeded runs and reports what the runs achieved.

The policy interface
--------------------
A :class:`ClosedLoopPolicy` fixes the datasets z(d, n) once before training
(:meth:`~ClosedLoopPolicy.datasets`: eq. (6) and the one-time transfer of
eq. (2) are decisions made before the first epoch) and then, at every epoch,
sees a :class:`PolicyState` — the epochs done k, the current model and
cluster, and per run the realised loss ℓ(k), elapsed time T(k), spent cost
and a small integer ``tag`` the policy may use as its own memory — and
returns a :class:`Decision` per run: the next (model, cluster, allocation x)
or :data:`STOP`. A fixed plan is the policy that ignores what it observes
(:class:`FixedPlanPolicy`), so every algorithm of the suite can be simulated
here and compared in one table.

Batching
--------
All runs advance together, one epoch per step. At each step the active runs
are grouped by (model, cluster, tag) and the policy is called once per group
with arrays of the group's losses, times and costs, so a fixed plan costs
one call per epoch and a re-planning policy can memoise its decision on a
discretised state inside :meth:`~ClosedLoopPolicy.decide` (the PACT and
receding-DepL policies of :mod:`deplbench.solvers` do; their discretisation
is stated in their docstrings).

Random draws (common random numbers)
------------------------------------
Run s of seed σ uses exactly the draws of trajectory s of the static
evaluator with the same seed along the policy's ``reference_plan`` (stream
``default_rng([σ, 1])``, the same calls in the same order and the same
blocks of :data:`BLOCK` runs as
:func:`~deplbench.formulations.evaluation.evaluate.simulate_trajectories`): at epoch k a
run that trains the reference plan's model of epoch k takes that epoch's
improvement draw X, and a run that makes the reference plan's switch of
epoch k takes its jump draw. Any other term is drawn fresh from the
independent stream ``default_rng([σ, 1, 2])``, vectorised per model and per
switch pair in index order. Every term a run uses is drawn once and
independently of everything the run has seen, so each run has the law of
the loss model (eq. (8)) under the policy; the coupling only makes runs of
different policies comparable path by path. Consequences, both tested:

* a fixed plan (its own reference) gives *exactly* the static evaluator's
  final losses, hence the same ω-quantile, for the same seed and number of
  runs;
* a policy that follows a plan and stops early sees the plan's own draws,
  so "stop as soon as ℓ ≤ ℓmax" can be compared with the plan run to the
  end run by run.

What a run achieves
-------------------
A run *succeeds* when it stops with ℓ(K) ≤ ℓmax, T(K) ≤ Tmax (eq. (4)) and
K ≤ K̄. Its cost is Σ κ(n) x (eq. (2)) of the epochs it ran plus the
transfers of its datasets (once, or once per epoch under the printed
eq. (2)). A run whose elapsed time passes Tmax is aborted there (the
orchestrator cannot use a late model): it fails and spends nothing more —
for a plan that violates (4) this differs from the static evaluator, which
reports the violation and simulates the loss anyway. A run still active
after ``max_epochs`` epochs is stopped and counted in ``horizon_hit``.

Statistics
----------
P(success) with a two-sided Clopper–Pearson interval at level
``confidence`` (each side one-sided at 1 − (1 − confidence)/2;
:mod:`deplbench.formulations.evaluation.binomial`); the ω-quantile of the final loss
with the same distribution-free order-statistic interval as the static
evaluator; P(ℓ(K) > ℓmax) with its one-sided Clopper–Pearson upper bound;
mean and quantiles of cost, epochs and time.

References
----------
DepL paper eqs. (1)–(8); PACT paper Sec. III-C (state s(k) = (k, ℓ(k), T(k),
m, n)), Sec. V (one action per epoch from the observed state).
docs/DESIGN.md, "Closed-loop evaluation", relates this to problem (2)–(6).
"""

from __future__ import annotations

import math
import time as _time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from deplbench.errors import PlanError
from deplbench.formulations.evaluation.binomial import clopper_pearson_lower, clopper_pearson_upper

# the evaluator's own interval and index mapping: a fixed plan's numbers must
# be the static evaluator's, bit for bit
from deplbench.formulations.evaluation.evaluate import plan_indices
from deplbench.formulations.evaluation.quantile_ci import (
    finite_mean,
    order_statistic_ci,
    sample_quantile,
    standard_error,
)
from deplbench.formulations.evaluation.settings import CONFIDENCE, RUNS, SEED, check_closed_loop
from deplbench.formulations.model.allocation import TIME_RTOL
from deplbench.formulations.model.plan import Plan
from deplbench.formulations.model.scenarios import OUT_OF_SAMPLE, loss_threshold, quantile_rank
from deplbench.instances.datalaw import compute_need
from deplbench.jsonio import number_text

#: The model index of a decision that ends the run.
STOP = -1
#: Runs simulated per block (equal to the static evaluator's block, so the
#: reference draws are the same calls on the same generator).
BLOCK = 25_000
#: The independent stream of the terms the reference plan does not cover.
FRESH_STREAM = 2
#: Quantiles of cost, epochs and time reported.
QUANTILES = (0.1, 0.5, 0.9, 0.99)


# --------------------------------------------------------------------------
# the policy interface
# --------------------------------------------------------------------------


@dataclass
class PolicyState:
    """What a policy observes for one group of runs before epoch ``epoch + 1``.

    Attributes
    ----------
    instance : Instance
    epoch : int
        Epochs done, k (0 before the first).
    model, cluster : int or None
        Current model and cluster indices (None before the first epoch).
    tag : int
        The policy's own memory, shared by the group (0 at the start).
    loss, time, cost : ndarray, shape (n,)
        Realised ℓ(k), elapsed time T(k) and spent cost per run.
    runs : ndarray of int
        Run indices within the block (stable identifiers for the policy).
    """

    instance: object
    epoch: int
    model: int | None
    cluster: int | None
    tag: int
    loss: np.ndarray
    time: np.ndarray
    cost: np.ndarray
    runs: np.ndarray

    @property
    def size(self) -> int:
        return int(self.loss.size)


@dataclass
class Decision:
    """A policy's answer for one group: per run the next action or :data:`STOP`.

    Attributes
    ----------
    model, cluster : ndarray of int, shape (n,)
        Indices of the next epoch's model and cluster (``model == STOP``
        ends the run; its cluster is ignored).
    allocation : ndarray of float, shape (n,)
        x(k, n) of the next epoch, in (0, r(n)].
    tag : ndarray of int, shape (n,), optional
        New memory per run (default: unchanged).
    """

    model: np.ndarray
    cluster: np.ndarray
    allocation: np.ndarray
    tag: np.ndarray | None = None

    @classmethod
    def constant(cls, n: int, model: int, cluster: int = 0, allocation: float = 1.0,
                 tag: int | None = None) -> "Decision":
        """The same action (or :data:`STOP`) for all n runs of a group."""
        return cls(np.full(n, int(model)), np.full(n, int(cluster)), np.full(n, float(allocation)),
                   None if tag is None else np.full(n, int(tag)))


class ClosedLoopPolicy(ABC):
    """An orchestrator that chooses each epoch's action from the observed state.

    Subclasses implement :meth:`datasets` and :meth:`decide`; ``name`` labels
    the results and ``reference_plan`` (optional) is the plan whose draws the
    runs share (module docstring, "Random draws").
    """

    name: str = "policy"
    reference_plan: Plan | None = None

    @abstractmethod
    def datasets(self) -> dict[str, list[str]]:
        """z(d, n): the datasets each cluster holds for the whole run."""

    @abstractmethod
    def decide(self, state: PolicyState) -> Decision:
        """The next action of every run of a group (see :class:`Decision`)."""

    def describe(self) -> dict:
        """JSON-able facts about the policy's work (e.g. re-plans made)."""
        return {}


class FixedPlanPolicy(ClosedLoopPolicy):
    """A plan drawn up before training: the same actions whatever happens.

    Parameters
    ----------
    instance : Instance
    plan : Plan
    name : str, default "fixed plan"
    """

    reference_plan: Plan      # always set: the plan is the policy

    def __init__(self, instance, plan: Plan, name: str = "fixed plan"):
        self.name = name
        self.reference_plan = plan
        self._models, self._clusters, _ = plan_indices(instance, plan)
        self._x = np.array(plan.allocations, dtype=float)

    def datasets(self) -> dict[str, list[str]]:
        return {c: list(d) for c, d in self.reference_plan.datasets.items()}

    def decide(self, state: PolicyState) -> Decision:
        k = state.epoch
        if k >= self._models.size:
            return Decision.constant(state.size, STOP)
        return Decision.constant(state.size, self._models[k], self._clusters[k], self._x[k])


class StopAtTarget(ClosedLoopPolicy):
    """Another policy, stopped as soon as the observed loss meets ℓmax.

    The observed ℓ(k) ≤ ℓmax is final success (the orchestrator sees it), so
    training on can only add cost. Used for fixed plans ("the plan, stopped
    early") and by the re-planning policies.
    """

    def __init__(self, inner: ClosedLoopPolicy, loss_max: float, name: str | None = None):
        self.inner = inner
        self.loss_max = float(loss_max)
        self.name = name or f"{inner.name}, stopped at ℓmax"
        self.reference_plan = inner.reference_plan

    def datasets(self) -> dict[str, list[str]]:
        return self.inner.datasets()

    def decide(self, state: PolicyState) -> Decision:
        keep = ~reached(state.loss, self.loss_max)
        out = Decision.constant(state.size, STOP)
        if keep.any():
            sub = _subset(state, keep)
            d = self.inner.decide(sub)
            out.model[keep], out.cluster[keep], out.allocation[keep] = d.model, d.cluster, d.allocation
            if d.tag is not None:
                out.tag = np.zeros(state.size, dtype=np.int64) + state.tag
                out.tag[keep] = d.tag
        return out

    def describe(self) -> dict:
        return self.inner.describe()


def reached(loss, loss_max: float) -> np.ndarray:
    """ℓ ≤ ℓmax with the static evaluator's tolerance
    (:func:`~deplbench.formulations.model.scenarios.loss_threshold`)."""
    return np.asarray(loss) <= loss_threshold(loss_max)


def _subset(state: PolicyState, keep: np.ndarray) -> PolicyState:
    return PolicyState(state.instance, state.epoch, state.model, state.cluster, state.tag,
                       state.loss[keep], state.time[keep], state.cost[keep], state.runs[keep])


# --------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------


@dataclass
class ClosedLoopResult:
    """Per-run outcomes of :func:`simulate` and their summary (:meth:`summary`)."""

    policy: str
    runs: int
    seed: int
    confidence: float
    loss_max: float
    omega: float
    time_max: float
    final_loss: np.ndarray
    cost: np.ndarray
    epochs: np.ndarray
    time: np.ndarray
    success: np.ndarray
    deadline_missed: np.ndarray
    horizon_hit: np.ndarray
    invalid: np.ndarray
    policy_calls: int = 0
    wall_s: float = 0.0
    policy_info: dict = field(default_factory=dict)

    @property
    def successes(self) -> int:
        return int(self.success.sum())

    def summary(self) -> dict:
        """JSON-ready summary: success probability with its interval, the
        ω-quantile of ℓ(K), mean and quantiles of cost, epochs and time."""
        n = self.runs
        k = self.successes
        conf = self.confidence
        side = 1.0 - (1.0 - conf) / 2.0
        finals = np.sort(self.final_loss)
        rank = quantile_rank(self.omega, n)
        q_ci = order_statistic_ci(finals, self.omega, conf)
        viol = int(np.count_nonzero(~reached(self.final_loss, self.loss_max)))

        def dist(a):
            a = np.asarray(a, dtype=float)
            return {"mean": finite_mean(a), "min": float(a.min()), "max": float(a.max()),
                    **{f"q{round(100 * q):02d}": sample_quantile(a, q) for q in QUANTILES}}

        return {
            "policy": self.policy, "runs": n, "seed": self.seed, "confidence": conf,
            "loss_max": self.loss_max, "omega": self.omega, "time_max": self.time_max,
            "successes": k, "p_success": k / n,
            "p_success_ci": [clopper_pearson_lower(k, n, side), clopper_pearson_upper(k, n, side)],
            "p_success_method": f"Clopper–Pearson, two-sided, level {number_text(conf)}",
            # an end the runs are too few for is infinite, at the level of what is left
            "loss_quantile": float(finals[rank - 1]), "loss_quantile_ci": [q_ci.low, q_ci.high],
            "loss_quantile_ci_level": q_ci.level, "loss_quantile_method": q_ci.method,
            "loss": dist(self.final_loss),
            "violations": viol, "violation_ub": clopper_pearson_upper(viol, n, conf),
            "cost": dist(self.cost), "epochs": dist(self.epochs), "time": dist(self.time),
            # one run has no sample standard deviation: the standard error is not computable
            # (NaN, written null with "cost_sem_nonfinite": "nan"), never a certain 0
            "cost_sem": standard_error(self.cost) if n > 1 else math.nan,
            "deadline_missed": int(self.deadline_missed.sum()),
            "horizon_hit": int(self.horizon_hit.sum()), "invalid_actions": int(self.invalid.sum()),
            "policy_calls": int(self.policy_calls), "wall_s": float(self.wall_s),
            "policy_info": dict(self.policy_info),
        }


# --------------------------------------------------------------------------
# the simulator
# --------------------------------------------------------------------------


def _validate(instance, runs, seed, confidence, max_epochs) -> tuple[int, int, int]:
    """Check :func:`simulate`'s arguments; raise PlanError naming the field
    (runs, seed, confidence: :func:`~deplbench.formulations.evaluation.settings.check_closed_loop`)."""
    runs, seed, _ = check_closed_loop(runs, seed, confidence)
    cap = instance.horizon if max_epochs is None else max_epochs
    if isinstance(cap, bool) or not float(cap).is_integer() or int(cap) < 1:
        raise PlanError(f"max_epochs: must be a positive integer, got {max_epochs!r}")
    return int(runs), int(seed), int(cap)


class _Setting:
    """Per-(model, cluster) quantities of the policy's fixed datasets."""

    def __init__(self, instance, datasets: dict[str, list[str]]):
        for c, held in datasets.items():
            if c not in instance.cluster_index:
                raise PlanError(f"datasets.{c}: unknown cluster {c!r}")
            for d in held:
                if d not in instance.dataset_index:
                    raise PlanError(f"datasets.{c}: unknown dataset {d!r}")
        N = instance.n_clusters
        volume, self.gamma = np.zeros(N), np.zeros(N)
        for j, cl in enumerate(instance.clusters):
            # the same call as evaluate.plan_indices, so γ is bit-identical
            held = datasets.get(cl.name, [])
            volume[j] = instance.data_effect(held)[0] if held else 0.0
            self.gamma[j] = instance.data_effect(held)[1]
        self.compute = compute_need(instance.model_compute[:, None], volume[None, :])   # (M, N)
        self.comm = instance.model_size[:, None] / instance.bandwidth[None, :]
        beta = instance.transfer_matrix
        self.transfer = float(sum(beta[instance.dataset_index[d], instance.cluster_index[c]]
                                  for c, held in datasets.items() for d in held))
        self.per_epoch = instance.transfer_cost_mode == "per_epoch"
        M = instance.n_models
        self.pair_table = np.full((M, M), -1, dtype=np.int64)
        for (a, b), p in instance.switch_index.items():
            self.pair_table[a, b] = p


def _reference_draws(instance, ref, n: int, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The reference plan's X and jump draws for n runs: the same generator
    calls, in the same order, as ``evaluate.simulate_trajectories``."""
    models, pair = ref
    K = models.size
    X = np.zeros((n, K))
    J = np.zeros((n, K))
    for m in np.unique(models):
        cols = np.nonzero(models == m)[0]
        X[:, cols] = instance.models[m].improvement.sample(rng, (n, cols.size))
    for p in sorted(set(int(v) for v in pair if v >= 0)):
        cols = np.nonzero(pair == p)[0]
        J[:, cols] = instance.switches[p].jump.sample(rng, (n, cols.size))
    return X, J, models, pair


def simulate(instance, policy: ClosedLoopPolicy, runs: int = RUNS, seed: int = SEED,
             confidence: float = CONFIDENCE, max_epochs: int | None = None) -> ClosedLoopResult:
    """Run a policy on ``runs`` seeded simulated trainings.

    Parameters
    ----------
    instance : Instance
    policy : ClosedLoopPolicy
    runs : int, default 10000
        2 to :data:`deplbench.limits.MAX_RUNS`
        (:mod:`~deplbench.formulations.evaluation.settings`, as every front).
    seed : int, default 0
        Seed σ of the draws (module docstring: the static evaluator's stream
        ``[σ, 1]`` along the reference plan, ``[σ, 1, 2]`` otherwise).
    confidence : float, default 0.95
        Level of the intervals in :meth:`ClosedLoopResult.summary`.
    max_epochs : int, optional
        Hard cap on the epochs of a run (default K̄, or the reference plan's
        length when longer).

    Returns
    -------
    ClosedLoopResult

    Raises
    ------
    PlanError
        Bad arguments, or a decision naming a model/cluster the instance
        lacks or of the wrong shape (a policy bug). Broken constraints
        (a forbidden switch, x above capacity, a cluster without data) are
        not errors: the run is marked ``invalid`` and fails.
    """
    runs, seed, cap = _validate(instance, runs, seed, confidence, max_epochs)
    t0 = _time.perf_counter()
    st = _Setting(instance, policy.datasets())
    ref = None
    if policy.reference_plan is not None and policy.reference_plan.n_epochs:
        models, _, _ = plan_indices(instance, policy.reference_plan)
        pair = np.full(models.size, -1)
        for k in range(1, models.size):
            if models[k] != models[k - 1]:
                pair[k] = instance.switch_index.get((int(models[k - 1]), int(models[k])), -1)
        ref = (models, pair)
        if max_epochs is None:
            cap = max(cap, int(models.size))
    rs = instance.run_scale_for(cap)
    rng = np.random.default_rng([seed, OUT_OF_SAMPLE])
    fresh = np.random.default_rng([seed, OUT_OF_SAMPLE, FRESH_STREAM])
    parts, calls = [], 0
    for start in range(0, runs, BLOCK):
        size = min(BLOCK, runs - start)
        draws = _reference_draws(instance, ref, size, rng) if ref is not None else None
        out, c = _simulate_block(instance, policy, st, size, draws, fresh, rs, cap)
        parts.append(out)
        calls += c
    cat = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    return ClosedLoopResult(
        policy=policy.name, runs=runs, seed=seed, confidence=float(confidence),
        loss_max=float(instance.loss_max), omega=float(instance.omega), time_max=float(instance.time_max),
        final_loss=cat["loss"], cost=cat["cost"], epochs=cat["epochs"], time=cat["time"],
        success=cat["success"], deadline_missed=cat["late"], horizon_hit=cat["cap"], invalid=cat["invalid"],
        policy_calls=calls, wall_s=_time.perf_counter() - t0, policy_info=policy.describe())


def _decide_all(instance, policy, idx, k, model, cluster, tag, loss, time, cost):
    """Group the active runs by (model, cluster, tag) and ask the policy once per group."""
    nm = np.empty(idx.size, dtype=np.int64)
    nc = np.empty(idx.size, dtype=np.int64)
    nx = np.empty(idx.size)
    nt = tag[idx].copy()
    # one integer key per (model, cluster, tag): np.unique on 1-D is fast
    M1, N1 = instance.n_models + 1, instance.n_clusters + 1
    keys = (tag[idx] * M1 + (model[idx] + 1)) * N1 + (cluster[idx] + 1)
    uniq, inverse = np.unique(keys, return_inverse=True)
    inverse = inverse.reshape(-1)
    for g, key in enumerate(uniq):
        c, rest = int(key % N1) - 1, int(key // N1)
        m, t = rest % M1 - 1, rest // M1
        sel = np.nonzero(inverse == g)[0]
        rid = idx[sel]
        state = PolicyState(instance, k, None if m < 0 else int(m), None if c < 0 else int(c), int(t),
                            loss[rid], time[rid], cost[rid], rid)
        d = policy.decide(state)
        arrays = [np.asarray(d.model), np.asarray(d.cluster), np.asarray(d.allocation)]
        if any(a.shape != (sel.size,) for a in arrays) or (d.tag is not None and np.shape(d.tag) != (sel.size,)):
            raise PlanError(f"policy {policy.name!r}: decision arrays must have shape ({sel.size},)")
        nm[sel], nc[sel], nx[sel] = arrays
        if d.tag is not None:
            nt[sel] = d.tag
    return nm, nc, nx, nt, len(uniq)


def _simulate_block(instance, policy, st: _Setting, n: int, draws, fresh, rs, cap: int):
    M, N = instance.n_models, instance.n_clusters
    l0 = float(instance.initial_loss)
    cum, time, cost = np.zeros(n), np.zeros(n), np.zeros(n)
    epochs = np.zeros(n, dtype=np.int64)
    model = np.full(n, -1, dtype=np.int64)
    cluster = np.full(n, -1, dtype=np.int64)
    tag = np.zeros(n, dtype=np.int64)
    active = np.ones(n, dtype=bool)
    late = np.zeros(n, dtype=bool)
    hit = np.zeros(n, dtype=bool)
    invalid = np.zeros(n, dtype=bool)
    tmax = instance.time_max * (1 + TIME_RTOL)
    calls = 0
    for k in range(cap + 1):
        idx = np.nonzero(active)[0]
        if idx.size == 0:
            break
        nm, nc, nx, nt, c = _decide_all(instance, policy, idx, k, model, cluster, tag, cum + l0, time, cost)
        calls += c
        stop = nm == STOP
        if k == cap:
            hit[idx[~stop]] = True
            stop[:] = True
        active[idx[stop]] = False
        go, nm, nc, nx, nt = idx[~stop], nm[~stop], nc[~stop], nx[~stop], nt[~stop]
        if go.size == 0:
            continue
        if (nm < 0).any() or (nm >= M).any() or (nc < 0).any() or (nc >= N).any():
            raise PlanError(f"policy {policy.name!r}: decision names a model or cluster the instance lacks "
                            f"(epoch {k + 1})")
        prev = model[go]
        switching = (prev >= 0) & (prev != nm)
        pairs = np.where(switching, st.pair_table[np.maximum(prev, 0), nm], -1)
        bad = (~(nx > 0)) | (nx > instance.capacity[nc] * (1 + 1e-12)) | (st.compute[nm, nc] <= 0)
        bad |= switching & (pairs < 0)
        invalid[go[bad]] = True
        step = _draw_steps(instance, st, draws, fresh, rs, k, go, nm, nc, pairs)
        cum[go] = cum[go] + step
        with np.errstate(divide="ignore", invalid="ignore"):
            dt = np.where(nx > 0, st.compute[nm, nc] / np.where(nx > 0, nx, 1.0), np.inf) + st.comm[nm, nc]
        time[go] += dt
        with np.errstate(over="ignore"):    # κ·x past binary64: the run's cost is inf, summarised as such
            cost[go] += instance.unit_cost[nc] * np.maximum(nx, 0.0)
        epochs[go] += 1
        model[go], cluster[go], tag[go] = nm, nc, nt
        over = go[time[go] > tmax]
        late[over] = True
        active[over] = False
    transfer = st.transfer * (epochs if st.per_epoch else 1)
    loss = cum + l0
    ok = reached(loss, instance.loss_max) & ~late & ~hit & ~invalid & (epochs <= instance.horizon)
    return ({"loss": loss, "cost": cost + transfer, "epochs": epochs, "time": time, "success": ok,
             "late": late, "cap": hit, "invalid": invalid}, calls)


def _draw_steps(instance, st, draws, fresh, rs, k, go, nm, nc, pairs) -> np.ndarray:
    """Loss change of epoch k+1 for runs ``go``: −γ A_m decay_m(k) X (+ jump).

    Reference draws where the run matches the reference plan at this epoch
    (module docstring), fresh ones otherwise, per model / pair in index order.
    """
    X = np.empty(go.size)
    J = np.zeros(go.size)
    if draws is not None and k < draws[2].size:
        Xr, Jr, rmodels, rpair = draws
        xc = nm == rmodels[k]
        X[xc] = Xr[go[xc], k]
        jc = (pairs >= 0) & (pairs == rpair[k])
        J[jc] = Jr[go[jc], k]
    else:
        xc = np.zeros(go.size, dtype=bool)
        jc = np.zeros(go.size, dtype=bool)
    for m in np.unique(nm[~xc]):
        sel = np.nonzero((nm == m) & ~xc)[0]
        X[sel] = instance.models[int(m)].improvement.sample(fresh, (sel.size,))
    need = (pairs >= 0) & ~jc
    for p in np.unique(pairs[need]):
        sel = np.nonzero(need & (pairs == p))[0]
        J[sel] = instance.switches[int(p)].jump.sample(fresh, (sel.size,))
    scale = st.gamma[nc] * rs[k, nm]
    step = -(scale * X)
    sw = pairs >= 0
    step[sw] = step[sw] + J[sw]
    return step


__all__ = ["STOP", "BLOCK", "PolicyState", "Decision", "ClosedLoopPolicy", "FixedPlanPolicy",
           "StopAtTarget", "ClosedLoopResult", "simulate", "reached"]
