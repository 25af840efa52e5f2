"""The first-order priced bound of ``perf/adaptive_slope_probe.py``: valid, and sharper than the floor.

Validity against independent references: the exact solver of
``tests/formulations/adaptive/exact_lattice.py`` (any closed-loop policy, exact arithmetic) on
the lattice instances at ω = the highest reachable P(success) and on the decaying (off-lattice)
ones; on tiny instances with continuous laws, where no exact solver exists, the priced value at
the same (λ, μ) is pinched between the floor chain and the pessimistic chain on a fine grid, and
the probe's lower and upper values must lie inside that pinch. Sharpness: on those continuous
instances the probe on 96 buckets is at least the floor on 768 (on 24, the floor on 96).
"""

from __future__ import annotations

import importlib.util
import math
import sys
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest

from deplbench.formulations import adaptive as A
from deplbench.formulations.adaptive.chain import dp
from deplbench.instances.model import parse_instance
from tests.formulations.adaptive.exact_lattice import LAWS, boundary_cases, exact_front, exact_optimum, lattice


def _probe():
    script = Path(__file__).resolve().parents[3] / "perf" / "adaptive_slope_probe.py"
    spec = importlib.util.spec_from_file_location("adaptive_slope_probe", script)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod                 # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


P = _probe()


def _both(inst, buckets):
    chain = A.Chain(inst, buckets, optimistic=True)
    best = A.lower_bound_search(chain, inst.omega, 6, 6).best
    tm = chain.st.time_max
    sp = P.slope_pass(chain, best.lam, best.mu)
    return best.bound(inst.omega, tm), sp.bound(inst.omega, tm), sp


@pytest.mark.slow
def test_probe_below_the_exact_optimum_on_the_lattice_boundary_cases():
    """Every law and scale at ω = the highest reachable P(success) and 1/8 below: on the grid-aligned
    6 buckets and the off-grid 7, floor ≤ probe ≤ the exact optimum."""
    n = 0
    for iw, _, opt in boundary_cases():
        for buckets in (6, 7):
            floor, probe, sp = _both(iw, buckets)
            assert math.isfinite(probe) and probe <= opt, (buckets, probe, opt)
            assert probe >= floor - 1e-9 * abs(floor)
            assert sp.value <= sp.upper
            n += 1
    assert n == 96


def test_probe_below_the_exact_optimum_with_a_decaying_run_term():
    """Eq. (8)'s 1/√(k + B) decay takes the atoms off the grid: the probe stays below the exact
    optimum and, landing inside the success cell read as V(0+), rises above the floor somewhere."""
    gain = 0.0
    for a, b, horizon in (LAWS[0][:2] + (3,), LAWS[5]):
        for offset in (0.5, 2.0):
            d = lattice(a, b, horizon, 1.0, 50.0)
            for m in d["models"]:
                m["decay"], m["loss_offset"] = "inv_sqrt", offset
            inst = parse_instance(d)
            pmax = max(p for p, _ in exact_front(inst))
            for w in sorted({pmax, min(pmax, Fraction(1, 2))}):
                opt = exact_optimum(inst, w)
                iw = inst.with_changes(omega=float(w))
                for buckets in (6, 24, 96):
                    floor, probe, _ = _both(iw, buckets)
                    assert Decimal(probe) <= opt and probe >= floor - 1e-9 * abs(floor), (offset, w, buckets)
                    gain = max(gain, probe / floor - 1.0)
    assert gain > 0.05


def _continuous(name: str, horizon: int, decay: str, omega: float):
    laws = {"invgamma": ({"kind": "inverse_gamma", "shape": 12.0, "scale": 22.0},
                         {"kind": "inverse_gamma", "shape": 6.0, "scale": 10.0}),
            "normal": ({"kind": "normal", "mean": 2.0, "std": 0.6}, {"kind": "normal", "mean": 2.5, "std": 1.0}),
            "lognormal": ({"kind": "lognormal", "mu": 0.6, "sigma": 0.3},
                          {"kind": "lognormal", "mu": 0.8, "sigma": 0.5})}
    d = lattice((1.0,), (1.0,), horizon, 1.0, 50.0, omega=omega)
    for m, law in zip(d["models"], laws[name]):
        m["improvement"], m["decay"], m["loss_offset"] = law, decay, 0.5
    d["switches"][0]["jump"] = {"kind": "student_t", "df": 4.0, "loc": 0.06, "scale": 0.03}
    return parse_instance(d)


@pytest.mark.parametrize("name", ["invgamma", "normal", "lognormal"])
@pytest.mark.parametrize("horizon, decay", [(3, "none"), (5, "inv_sqrt")])
def test_probe_inside_the_fine_grids_pinch_on_continuous_laws(name, horizon, decay):
    """At (λ, 3μ) of the floor search on 96 buckets (the root trains): on every grid the floor value
    ≤ the probe's ≤ the pessimistic chain's on 4096 buckets, and the probe's upper value ≥ the floor
    chain's on 4096; the probe on 24 buckets is at least the floor on 4 times more, on 96 on 8 times more."""
    inst = _continuous(name, horizon, decay, 0.9)
    best = A.lower_bound_search(A.Chain(inst, 96, optimistic=True), inst.omega, 6, 6).best
    lam, mu = best.lam, 3.0 * best.mu
    fine = 4096
    lo = dp(A.Chain(inst, fine, optimistic=True), lam, mu).value
    hi = dp(A.Chain(inst, fine, optimistic=False), lam, mu).value
    assert lo < hi < mu                                   # the root trains: the pinch is not the cap
    for buckets in (6, 24, 96, 384):
        chain = A.Chain(inst, buckets, optimistic=True)
        floor = dp(chain, lam, mu).value
        sp = P.slope_pass(chain, lam, mu)
        assert floor <= sp.value * (1 + 1e-12) and sp.value <= hi and sp.upper >= lo, (buckets, floor, sp, lo, hi)
        finer = {24: 4, 96: 8}.get(buckets)
        if finer:
            assert sp.value >= dp(A.Chain(inst, finer * buckets, optimistic=True), lam, mu).value, buckets
