"""The adaptive lower bound against an independent exact optimum with communication time
and a binding capacity.

The reference enumerates every closed-loop policy of a tiny instance as a tree (K̄ = 2,
two models with a switch, two clusters, two-point empirical improvement laws, so every
loss is exact in fractions) and, per tree, solves the convex allocation min Σ p·κc/t
over the epochs' compute times t ≥ c/r with every root-to-leaf path's Σ (t + s) ≤ Tmax
(scipy SLSQP, made feasible): an achievable cost, so at least the tree's optimum. The
optimum at ω is the best tree reaching ω or the best mix of two (Beutler–Ross). It
shares nothing with the chain, its grids or its DP, so every bound (priced, carried on
fine and coarse time grids) must stay at or below it.
"""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import minimize

from deplbench.formulations import adaptive as A
from deplbench.formulations.model.allocation import TIME_RTOL
from deplbench.instances.datalaw import compute_need
from deplbench.instances.model import parse_instance


def make(a, b, K, clusters, sizes, tm, omega):
    return {"name": "tree", "initial_loss": 1.0, "loss_max": 0.25, "omega": omega, "time_max": tm, "horizon": K,
            "models": [
                {"name": "a", "size": sizes[0], "compute": 2.0, "loss_scale": 0.25, "loss_offset": 0.0,
                 "decay": "none", "improvement": {"kind": "empirical", "samples": list(a)}},
                {"name": "b", "size": sizes[1], "compute": 1.0, "loss_scale": 0.125, "loss_offset": 0.0,
                 "decay": "none", "improvement": {"kind": "empirical", "samples": list(b)}}],
            "switches": [{"from_model": "a", "to_model": "b", "jump": {"kind": "point", "value": 0.125}}],
            "clusters": [{"name": f"C{i}", "capacity": r, "unit_cost": k, "bandwidth": bw}
                         for i, (k, r, bw) in enumerate(clusters)],
            "datasets": [{"name": "d0", "size": 1.0, "usefulness": 1.0}]}


def trees(inst):
    """Every policy tree with its exact P(success): (p, tree), tree None (stop) or (m, n, children)."""
    _, gamma = inst.data_effect(inst.all_datasets)
    lmax, K, M, N = Fraction(inst.loss_max), inst.horizon, len(inst.models), inst.n_clusters
    step = [Fraction(gamma) * Fraction(m.loss_scale) for m in inst.models]
    atoms = [[Fraction(v) for v in m.improvement.samples] for m in inst.models]
    names = [m.name for m in inst.models]
    jump = {(sw.from_model, sw.to_model): Fraction(sw.jump.value) for sw in inst.switches}

    def rec(k, m, loss):
        out = [(Fraction(1) if loss <= lmax else Fraction(0), None)]
        if k == K:
            return out
        for m2 in range(M):
            sw = m is not None and m2 != m
            if sw and (names[m], names[m2]) not in jump:
                continue
            j = jump[(names[m], names[m2])] if sw else 0
            kids = [rec(k + 1, m2, loss - step[m2] * x + j) for x in atoms[m2]]
            p = Fraction(1, len(atoms[m2]))
            for n2 in range(N):
                for combo in itertools.product(*kids):
                    out.append((sum(p * c[0] for c in combo), (m2, n2, [c[1] for c in combo])))
        return out

    return rec(0, None, Fraction(inst.initial_loss))


def tree_cost(inst, tree, tau):
    """An achievable expected cost of ``tree`` within ``tau`` (inf when no allocation fits)."""
    if tree is None:
        return 0.0
    volume, _ = inst.data_effect(inst.all_datasets)
    c = [float(compute_need(m.compute, volume)) for m in inst.models]
    nodes, paths = [], []

    def walk(t, prob, path):
        if t is None:
            paths.append(path)
            return
        m2, n2, kids = t
        i = len(nodes)
        nodes.append((prob, m2, n2))
        for kd in kids:
            walk(kd, prob / len(kids), path + [i])

    walk(tree, 1.0, [])
    w = np.array([p * float(inst.unit_cost[n]) * c[m] for p, m, n in nodes])
    lo = np.array([c[m] / float(inst.capacity[n]) for p, m, n in nodes])
    ss = np.array([float(inst.model_size[m]) / float(inst.bandwidth[n]) for p, m, n in nodes])
    P = np.zeros((len(paths), len(nodes)))
    for r, pth in enumerate(paths):
        P[r, pth] = 1
    budget = tau - P @ ss
    if np.any(P @ lo > budget):
        return math.inf
    x0 = np.maximum(lo + (budget.min() - (P @ lo).max()) / (P.sum(1).max() + 1) * 0.999, lo)
    res = minimize(lambda t: float(np.sum(w / (t * tau))), x0 / tau, jac=lambda t: -w / (t * t * tau),
                   bounds=[(v / tau, None) for v in lo], method="SLSQP", options={"ftol": 1e-15, "maxiter": 1000},
                   constraints=[{"type": "ineq", "fun": lambda t: budget / tau - P @ t, "jac": lambda t: -P}])
    t = np.maximum(res.x * tau, lo)
    for _ in range(60):                                   # pull back inside the paths' budgets
        ex = P @ t - budget
        if ex.max() <= 0:
            break
        t = lo + (t - lo) * (1 - 1e-12 - ex.max() / max(1e-300, (P @ (t - lo)).max()))
    return float(np.sum(w / t)) if (P @ t - budget).max() <= 0 else math.inf


def exact_optimum(inst, omega):
    """The least achievable expected cost at P(success) ≥ ω (None: no tree reaches ω)."""
    tau = float(inst.time_max) * (1 + TIME_RTOL)
    pts = [(p, cst) for p, tr in trees(inst) if math.isfinite(cst := tree_cost(inst, tr, tau))]
    w = Fraction(omega)
    cands = [cst for p, cst in pts if p >= w]
    cands += [float(1 - (w - pa) / (pb - pa)) * ca + float((w - pa) / (pb - pa)) * cb
              for pa, ca in pts if pa < w for pb, cb in pts if pb > w]
    return min(cands) if cands else None


def _random_instances(n, seed):
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        a = tuple(rng.choice([0.0, 1.0, 2.0, 4.0]) for _ in range(2))
        b = tuple(rng.choice([0.0, 2.0, 4.0]) for _ in range(2))
        # cheap cluster tight (capacity binds), dear one roomier; communication time on model a
        cl = [(1.0, rng.choice([0.5, 1.0]), rng.choice([1.0, 2.0])),
              (3.0, rng.choice([1.0, 2.0]), rng.choice([2.0, 4.0]))]
        inst = parse_instance(make(a, b, 2, cl, (rng.choice([0.5, 1.0]), 0.0), rng.choice([3.0, 4.0, 6.0]),
                                   rng.choice([0.5, 0.75])))
        opt = exact_optimum(inst, inst.omega)
        if opt is not None and opt > 0:
            out.append((inst, opt))
    return out


@pytest.mark.slow
def test_bounds_below_the_tree_enumeration_optimum():
    checked = binding = 0
    for inst, opt in _random_instances(6, seed=3):
        chain = A.Chain(inst, 6, optimistic=True)
        priced = A.lower_bound_search(chain, inst.omega, 6, 6).bound()
        assert priced <= opt * (1 + 1e-9), (inst.models, priced, opt)
        for g in (2, 3, 5, 7, 32):                         # coarse time grids too
            carried = A.timed_search(chain, inst.omega, g).bound()
            assert carried <= opt * (1 + 1e-9), (g, carried, opt)
            checked += 1
        # the capacity binds: the cheap cluster's fastest epoch fills a real share of Tmax
        binding += float(inst.model_compute[0]) / float(inst.capacity[0]) >= 0.25 * float(inst.time_max)
    assert checked == 30 and binding >= 1
