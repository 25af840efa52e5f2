"""An independent exact solver of tiny adaptive instances (a test helper).

Used by the tests of ``tests/formulations/adaptive/`` and by
``perf/adaptive_carried_gaps.py``. The solver shares no code with :mod:`deplbench.formulations.adaptive`
beyond reading the instance. It solves the *true* problem — any closed-loop
policy, continuous allocations, the deadline T ≤ Tmax on every run — on tiny
instances where that is possible in exact arithmetic:

* one cluster, lattice (empirical) loss terms with 2 or 4 equally likely
  atoms, so every P(success) is a dyadic rational (``fractions.Fraction``),
  and ω set to *exactly* the highest P(success) any policy reaches — the
  boundary where a multiplier search in floating point can run away;
* no communication time (model size 0) and no capacity binding (r is far
  above any allocation the optimum uses). A policy tree's least cost with
  remaining time τ is then W/τ, where W = 0 at a stop and
  W = (√(κc) + √E[W′])² at a trained epoch (minimise κc/t + E[W′]/(τ − t)
  over this epoch's compute time t: water-filling). W is computed with
  60-digit decimals.
* Pareto sets of (P(success), W) are built bottom-up over deterministic
  policies; mixed policies (a draw at the start) reach the lower convex
  envelope of those points, and they are as good as any behaviour
  randomisation (each pure policy in the mix plans its own allocations),
  so the exact optimum at ω is the envelope at ω.
"""

from __future__ import annotations

import itertools
from decimal import Decimal, getcontext
from fractions import Fraction

from deplbench.formulations.model.allocation import TIME_RTOL
from deplbench.instances.datalaw import compute_need
from deplbench.instances.model import parse_instance

PREC = 60


def _prune(pts):
    """Pareto set: P(success) up, W down."""
    out = []
    for p, w in sorted(pts, key=lambda t: (-t[0], t[1])):
        if not out or w < out[-1][1]:
            out.append((p, w))
    return out


def exact_front(inst) -> list[tuple[Fraction, Decimal]]:
    """Pareto set of (P(success), W) over deterministic policies, by recursion on the true loss.

    Losses are exact fractions; with a decay other than ``none`` (eq. (8): the k-th epoch's
    term scaled by 1/√(k + B_m), k = 1, 2, …) they are 60-digit decimals instead."""
    getcontext().prec = PREC
    volume, gamma = inst.data_effect(inst.all_datasets)
    num = Fraction if all(m.decay == "none" for m in inst.models) else Decimal
    lmax, K, M = num(inst.loss_max), inst.horizon, len(inst.models)
    cl = inst.clusters[0]
    kc = [Decimal(float(cl.unit_cost)) * Decimal(float(compute_need(m.compute, volume))) for m in inst.models]
    scale = [num(gamma) * num(m.loss_scale) for m in inst.models]
    step = [[scale[i] if m.decay == "none" else scale[i] / (Decimal(k) + Decimal(m.loss_offset)).sqrt()
             for k in range(1, K + 1)] for i, m in enumerate(inst.models)]          # step[m][k − 1]
    atoms = [[(num(v), Fraction(1, len(m.improvement.samples))) for v in m.improvement.samples]
             for m in inst.models]
    names = [m.name for m in inst.models]
    jump = {(sw.from_model, sw.to_model): num(sw.jump.value) for sw in inst.switches}
    memo: dict = {}

    def rec(k, m, loss):
        if (k, m, loss) in memo:
            return memo[(k, m, loss)]
        pts = [(Fraction(1) if loss <= lmax else Fraction(0), Decimal(0))]
        if k < K:
            for m2 in range(M):
                switch = m is not None and m2 != m
                if switch and (names[m], names[m2]) not in jump:
                    continue
                j = jump[(names[m], names[m2])] if switch else num(0)
                acc = [(Fraction(0), Decimal(0))]
                for x, p in atoms[m2]:
                    child = rec(k + 1, m2, loss - step[m2][k] * x + j)
                    pd = Decimal(p.numerator) / Decimal(p.denominator)
                    acc = _prune([(a + p * cp, b + pd * cw) for (a, b), (cp, cw) in itertools.product(acc, child)])
                pts.extend((ps, (kc[m2].sqrt() + ew.sqrt()) ** 2) for ps, ew in acc)
        memo[(k, m, loss)] = _prune(pts)
        return memo[(k, m, loss)]

    return rec(0, None, num(inst.initial_loss))


def exact_optimum(inst, omega) -> Decimal | None:
    """Least expected cost of a mixed policy with P(success) ≥ ω (None: no policy reaches ω)."""
    getcontext().prec = PREC
    front = exact_front(inst)
    tau = Decimal(float(inst.time_max)) * (1 + Decimal(TIME_RTOL))
    w = Fraction(omega)
    cands = [W for p, W in front if p >= w]
    for (p1, w1), (p2, w2) in itertools.combinations(front, 2):
        (pa, wa), (pb, wb) = sorted([(p1, w1), (p2, w2)])
        if pa < w < pb:
            t = (w - pa) / (pb - pa)
            td = Decimal(t.numerator) / Decimal(t.denominator)
            cands.append((1 - td) * wa + td * wb)
    return min(cands) / tau if cands else None


def lattice(a, b, horizon, kappa, time_max, cap=1e3, omega=0.5) -> dict:
    """Two models, one cluster, grid-aligned lattice loss terms (h = 0.125 at 6 buckets)."""
    return {
        "name": "lattice", "initial_loss": 1.0, "loss_max": 0.25, "omega": omega, "time_max": time_max,
        "horizon": horizon,
        "models": [
            {"name": "a", "size": 0.0, "compute": 2.0, "loss_scale": 0.25, "loss_offset": 0.0, "decay": "none",
             "improvement": {"kind": "empirical", "samples": list(a)}},
            {"name": "b", "size": 0.0, "compute": 1.0, "loss_scale": 0.125, "loss_offset": 0.0, "decay": "none",
             "improvement": {"kind": "empirical", "samples": list(b)}},
        ],
        "switches": [{"from_model": "a", "to_model": "b", "jump": {"kind": "point", "value": 0.125}}],
        "clusters": [{"name": "A", "capacity": cap, "unit_cost": kappa, "bandwidth": 1.0}],
        "datasets": [{"name": "d0", "size": 1.0, "usefulness": 1.0}],
    }


#: Loss laws (model a atoms, model b atoms, K̄): every one drove the unguarded
#: multiplier search to μ ≈ 10¹⁵ at ω = its highest P(success) with a lower bound
#: 2.8× to 2·10³× above the exact optimum at one of the scales below.
LAWS = [((2.0, 1.0), (5.0, 3.0, 0.0, 1.0), 2),
        ((3.0, 1.0, 0.0, 3.0), (4.0, 4.0, 3.0, 2.0), 2),
        ((1.0, 1.0), (5.0, 0.0), 2),
        ((1.0, 0.0, 1.0, 1.0), (1.0, 5.0), 2),
        ((0.0, 0.0), (0.0, 5.0), 4),
        ((3.0, 0.0, 2.0, 3.0), (4.0, 1.0, 3.0, 3.0), 4)]
#: (κ, Tmax): costs from ~10⁻⁵ to ~10.
SCALES = [(1e-3, 50.0), (1.0, 50.0), (1.0, 1e3), (1e-3, 1e3)]


def boundary(a, b, horizon, kappa, time_max, cap=1e3):
    """The lattice instance at ω = its highest reachable P(success), and that P(success)."""
    inst = parse_instance(lattice(a, b, horizon, kappa, time_max, cap))
    pmax = max(p for p, _ in exact_front(inst))
    assert 0 < pmax < 1 and Fraction(float(pmax)) == pmax      # dyadic: ω = pmax exactly in binary
    return inst.with_changes(omega=float(pmax)), pmax


def boundary_cases():
    """Every law and scale at ω = its highest reachable P(success) and 1/8 below it, where that is
    reachable: (instance at ω, ω as a fraction, the exact optimum as a float)."""
    for law in LAWS:
        for kappa, tm in SCALES:
            inst, pmax = boundary(*law, kappa, tm)
            for w in (pmax, pmax - Fraction(1, 8)):
                iw = inst.with_changes(omega=float(w))
                opt = exact_optimum(iw, w)
                if opt is not None:
                    yield iw, w, float(opt)


__all__ = ["PREC", "LAWS", "SCALES", "exact_front", "exact_optimum", "lattice", "boundary", "boundary_cases"]
