"""The water-filling measurement of docs/adaptive.md ("Further routes"), checked.

``perf/adaptive_waterfill_probe.py`` carries the deadline exactly through the
support function of each state's (W, F) pairs. Its numbers are quoted as a
measurement; these tests keep what the docs say of it true: on tiny lattice
instances it never exceeds the independent exact optimum of
``tests/formulations/adaptive/exact_lattice.py`` and is at least the priced
bound there, and the communication tangent lies below an epoch's money.
"""

from __future__ import annotations

import importlib.util
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from deplbench.formulations import adaptive as A
from deplbench.instances.generators import generate
from tests.formulations.adaptive.exact_lattice import LAWS, boundary, exact_optimum

PROBE = Path(__file__).resolve().parents[3] / "perf" / "adaptive_waterfill_probe.py"


@pytest.fixture(scope="module")
def probe():
    if str(PROBE.parent) not in sys.path:     # the probe imports its sibling adaptive_probe, as when run
        sys.path.insert(0, str(PROBE.parent))
    spec = importlib.util.spec_from_file_location("adaptive_waterfill_probe", PROBE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("law", LAWS[:4])
@pytest.mark.parametrize("below", [0, 1])
def test_the_water_filling_bound_lies_between_the_priced_bound_and_the_exact_optimum(probe, law, below):
    inst, pmax = boundary(*law, 1.0, 50.0)
    w = pmax - Fraction(below, 8)
    iw = inst.with_changes(omega=float(w))
    opt = exact_optimum(iw, w)
    if opt is None:
        pytest.skip("ω not reachable on this law")
    o = float(opt)
    ch = A.Chain(iw, 6, optimistic=True)
    search = A.lower_bound_search(ch, iw.omega, 6, 6)
    priced, mu = search.bound(), max(search.best.mu, 1e-9)
    nus = np.concatenate([[0.0], mu * ch.st.time_max * np.geomspace(1e-8, 1e4, 400)])
    wf = float(((probe.waterfill_pass(ch, nus) - nus * (1 - iw.omega)) / ch.st.time_max).max())
    assert wf <= o * (1 + 1e-9)
    assert wf >= priced - 1e-4 * o


@pytest.mark.slow
def test_the_communication_tangent_lies_below_an_epochs_money_and_touches_it(probe):
    """A/d + b ≤ κc/(d − s) for every duration d > s of every (model, cluster), equal at the
    priced epoch's d₀ = c/x*(λ) + s (AlexNet: communication 0.1–1 time units an epoch)."""
    inst = generate("realistic", family="alexnet", loss_max=9)
    ch = A.Chain(inst, 20, optimistic=True)
    st, lam = ch.st, 5.0
    a, b = probe.epoch_terms(ch, lam)
    _, tc, _ = st.priced(lam)
    kc, s = st.kappa[None, :] * st.compute, st.comm
    assert np.all(s > 0)
    d = s[..., None] + np.geomspace(1e-3, 1e3, 400) * tc[..., None]
    money = kc[..., None] / (d - s[..., None])
    assert np.all(a[..., None] / d + b[..., None] <= money * (1 + 1e-12))
    np.testing.assert_allclose(a / (tc + s) + b, kc / tc, rtol=1e-12)
