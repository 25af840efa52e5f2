"""DepL stage 1 (solvers/depl/dataset_selection.py): Fujishige–Wolfe minimum-norm
point vs exhaustive search, the submodularity audit, Lawler ranking, K̂."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from deplbench.instances.generators import generate
from deplbench.solvers.depl.dataset_selection import (
    DataObjective,
    SubsetRanker,
    all_masks,
    exhaustive_minimum,
    min_norm_point,
    minimize_min_norm,
    minimize_restricted,
    submodularity_check,
)


class CutPlusModular:
    """A random submodular function: graph cut + modular term (+inf on ∅,
    like the dataset objective)."""

    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        a = rng.uniform(0, 1, (n, n)) * (rng.random((n, n)) < 0.6)
        self.W = np.triu(a, 1) + np.triu(a, 1).T
        self.c = rng.normal(0.0, 1.2, n)
        self.n = n

    def values(self, masks):
        x = np.asarray(masks, dtype=float)
        cut = np.einsum("...i,ij,...j->...", x, self.W, 1.0 - x)
        out = cut + x @ self.c
        return np.where(np.asarray(masks).any(axis=-1), out, np.inf)


class ConcaveOfModular:
    """sqrt(Σ a_i) − Σ b_i over chosen i: submodular."""

    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.a = rng.uniform(0.1, 3.0, n)
        self.b = rng.uniform(0.0, 0.6, n)
        self.n = n

    def values(self, masks):
        x = np.asarray(masks, dtype=float)
        out = 3.0 * np.sqrt(x @ self.a) - x @ self.b
        return np.where(np.asarray(masks).any(axis=-1), out, np.inf)


class Supermodular:
    """−sqrt(Σ a_i): supermodular, to check that the audit sees violations."""

    def __init__(self, n):
        self.a = np.linspace(1.0, 2.0, n)
        self.n = n

    def values(self, masks):
        x = np.asarray(masks, dtype=float)
        return np.where(np.asarray(masks).any(axis=-1), -np.sqrt(x @ self.a), np.inf)


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("cls", [CutPlusModular, ConcaveOfModular])
def test_min_norm_matches_exhaustive_on_submodular_functions(cls, seed):
    n = 4 + seed % 6
    f = cls(n, seed)
    check = submodularity_check(f)
    assert check["exhaustive"] and check["submodular"], check
    mn = minimize_min_norm(f)
    ex = exhaustive_minimum(f)
    assert mn.value == pytest.approx(ex.value, rel=1e-9, abs=1e-9)
    assert float(f.values(np.isin(np.arange(n), mn.subset)[None, :])[0]) == pytest.approx(mn.value)


def test_min_norm_point_is_in_base_polytope_and_optimal():
    """x* lies in B(F) (x(D) = F(D), x(S) <= F(S)) and its negative set minimises F."""
    f = CutPlusModular(6, 3)
    masks = all_masks(6)
    # Normalised F on the full lattice (F(∅) = 0) for the unrestricted problem.
    vals = np.asarray(f.values(masks), dtype=float)
    vals[0] = np.nan
    cut_val = np.einsum("bi,ij,bj->b", masks.astype(float), f.W, 1.0 - masks.astype(float)) + masks @ f.c

    def F(m):
        x = np.asarray(m, dtype=float)
        return np.einsum("...i,ij,...j->...", x, f.W, 1.0 - x) + x @ f.c

    x, _ = min_norm_point(F, 6)
    assert x.sum() == pytest.approx(cut_val[-1], abs=1e-8)
    assert np.all(masks @ x <= cut_val + 1e-8)
    neg = x < -1e-9
    assert F(neg[None, :])[0] == pytest.approx(cut_val.min(), abs=1e-8)


def test_restricted_minimisation_respects_include_exclude():
    f = ConcaveOfModular(7, 1)
    r = minimize_restricted(f, include=[2], exclude=[0, 1])
    assert 2 in r.subset and 0 not in r.subset and 1 not in r.subset
    best = min(
        float(f.values(np.isin(np.arange(7), (2,) + extra)[None, :])[0])
        for k in range(5) for extra in itertools.combinations([3, 4, 5, 6], k)
    )
    assert r.value == pytest.approx(best, rel=1e-9)


def test_ranker_enumerates_every_nonempty_set_in_order_when_submodular():
    f = CutPlusModular(4, 11)
    ranker = SubsetRanker(f)
    seen, values = [], []
    while (item := ranker.next()) is not None:
        seen.append(item[0])
        values.append(item[1])
    assert len(seen) == 15 and len(set(seen)) == 15 and () not in seen
    assert all(b >= a - 1e-9 for a, b in zip(values, values[1:]))


def test_audit_counts_violations():
    sup = submodularity_check(Supermodular(5))
    assert sup["exhaustive"] and sup["violated"] > 0 and not sup["submodular"]
    # Sampled mode (|D| > 10) on a submodular and a supermodular function.
    big = submodularity_check(ConcaveOfModular(12, 0), rng=np.random.default_rng(0), samples=4000)
    assert not big["exhaustive"] and big["checked"] > 1000 and big["submodular"]
    bad = submodularity_check(Supermodular(12), rng=np.random.default_rng(0), samples=4000)
    assert bad["violated"] > 0


def test_dataset_objective_matches_its_definition():
    inst = generate("datasets", n_datasets=4, seed=2, horizon=1000, loss_max=9.0)
    obj = DataObjective.from_instance(inst)
    assert obj.values(np.zeros((1, 4), dtype=bool))[0] == math.inf  # no data, no learning
    m_star = [m.name for m in inst.models].index(obj.model)
    assert inst.models[m_star].compute == max(m.compute for m in inst.models)
    G = np.concatenate([[0.0], np.cumsum(inst.decay_matrix[:, m_star])])
    for subset in [(0,), (1, 3), (0, 1, 2, 3)]:
        names = [inst.datasets[i].name for i in subset]
        volume, gamma = inst.data_effect(names)
        k = obj.epochs_needed(np.array([gamma]))[0]
        assert 0 < k < inst.horizon
        # K̂ solves γ·A·E[X]·G(K) = ℓ0 − ℓmax, G interpolated between integers
        lo = int(math.floor(k))
        g_at_k = G[lo] + (k - lo) * (G[lo + 1] - G[lo])
        assert gamma * obj.rate * g_at_k == pytest.approx(obj.gap, rel=1e-9)
        assert obj.value(subset) == pytest.approx(k * obj.epoch_time(volume), rel=1e-12)


def test_epochs_needed_is_decreasing_in_gamma_and_finite_beyond_horizon():
    inst = generate("datasets", n_datasets=3, seed=0, horizon=10)
    obj = DataObjective.from_instance(inst)
    g = np.geomspace(0.01, 10, 50)
    k = obj.epochs_needed(g)
    assert np.all(np.isfinite(k)) and np.all(np.diff(k) < 0)
    assert k[0] > inst.horizon  # continued beyond K̄ with the integral of the decay


def test_dataset_objective_audit_and_cross_check_on_generated_instances():
    """The paper's submodularity claim is audited, not assumed: the generated
    instances violate it; where the audit finds no violation, min-norm point
    must match exhaustive search; otherwise it can only be worse or equal."""
    violated_any = False
    for seed in range(4):
        inst = generate("datasets", n_datasets=5, seed=seed)
        obj = DataObjective.from_instance(inst)
        check = submodularity_check(obj)
        mn, ex = minimize_min_norm(obj), exhaustive_minimum(obj)
        assert mn.value >= ex.value - 1e-9 * abs(ex.value)
        if check["submodular"]:
            assert mn.value == pytest.approx(ex.value, rel=1e-9)
        violated_any |= check["violated"] > 0
    assert violated_any
    # Two datasets: no triple with ∅ ≠ A ⊊ B exists, the function is
    # (vacuously) submodular and min-norm must be exact.
    for seed in range(3):
        obj = DataObjective.from_instance(generate("datasets", n_datasets=2, seed=seed))
        assert submodularity_check(obj)["submodular"]
        assert minimize_min_norm(obj).value == pytest.approx(exhaustive_minimum(obj).value, rel=1e-9)
