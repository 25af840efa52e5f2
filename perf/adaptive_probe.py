"""The common start of the adaptive policy probes (``adaptive_policy_blend.py``, ``adaptive_policy_ladder.py``).

Both measure another rule for the certified policy of ``deplbench adaptive``
against the current one on the same fresh runs: the same options, the same
instance, the policy tuned as :func:`~deplbench.formulations.adaptive.bracket.adaptive_bounds`
tunes it, and one score — mean cost / P(success), the cost of the
Beutler–Ross mix that gives up exactly the surplus over the target (the
score :func:`~deplbench.formulations.adaptive.certify.tune_policy` ranks
candidates by). Imported by the probes as a sibling module (``python
perf/<probe>.py`` puts ``perf/`` on the path).
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass

from deplbench.formulations.adaptive.bracket import tuning_target
from deplbench.formulations.adaptive.certify import AdaptivePolicy, tune_policy
from deplbench.formulations.adaptive.chain import Chain
from deplbench.formulations.adaptive.search import Search, lower_bound_search, multires_search
from deplbench.formulations.evaluation.closed_loop import simulate
from deplbench.instances.generators import generate

#: Offset of the fresh runs' seed from the tuning seed: no run is shared with the tuning.
FRESH = 88


def instance_parser(doc: str, family: str, loss_max: float, buckets: int) -> argparse.ArgumentParser:
    """The options every adaptive probe takes: the realistic instance and its loss grid."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--family", default=family)
    ap.add_argument("--loss-max", type=float, default=loss_max)
    ap.add_argument("--buckets", type=int, default=buckets)
    return ap


def priced_search(a: argparse.Namespace, adjust=None) -> tuple[object, Chain, Search, float, float]:
    """The realistic instance of :func:`instance_parser`'s options, its optimistic chain (``adjust``
    applied to it first) and the priced λ–μ search on it; with the search's CPU seconds and the
    1-minute load before."""
    inst = generate("realistic", family=a.family, loss_max=a.loss_max)
    load0 = os.getloadavg()[0]
    chain = Chain(inst, a.buckets, optimistic=True)
    if adjust is not None:
        adjust(chain)
    t0 = time.process_time()
    search = lower_bound_search(chain, float(inst.omega))
    return inst, chain, search, time.process_time() - t0, load0


def probe_parser(doc: str) -> argparse.ArgumentParser:
    """The options every policy probe takes (instance, grid, runs, seed)."""
    ap = instance_parser(doc, "alexnet", 9.0, 2400)
    ap.add_argument("--runs", type=int, default=20000, help="runs per tuning simulation and per variant")
    ap.add_argument("--seed", type=int, default=11)
    return ap


@dataclass
class Tuned:
    """The instance, its pessimistic chain, the proven bound and the policy tuned on it."""

    instance: object
    pes: Chain
    lb: float
    target: float
    policy: AdaptivePolicy
    load0: float
    t0: float

    def score(self, policy, a) -> tuple[float, float]:
        """(P(success), mean cost) of ``policy`` on the probe's fresh runs."""
        r = simulate(self.instance, policy, a.runs, a.seed + FRESH)
        return r.successes / r.runs, float(r.cost.mean())

    def done(self) -> str:
        """The closing line: the 1-minute load before and after, and the CPU seconds since the start."""
        load = f"1-minute load {self.load0:.1f}→{os.getloadavg()[0]:.1f}"
        return f"{load}; {time.process_time() - self.t0:.0f} CPU-s in all"


def tuned(a) -> Tuned:
    """The proven bound on ``a.buckets`` buckets and the policy tuned as ``adaptive_bounds`` tunes it."""
    return tuned_with_search(a)[0]


def tuned_with_search(a) -> tuple[Tuned, Chain, object]:
    """:func:`tuned`, with the optimistic chain and the multiplier search it ran."""
    inst = generate("realistic", family=a.family, loss_max=a.loss_max)
    omega, load0, t0 = float(inst.omega), os.getloadavg()[0], time.process_time()
    opt, pes = Chain(inst, a.buckets, optimistic=True), Chain(inst, a.buckets, optimistic=False)
    search = multires_search(inst, opt, omega, 6, 6)
    best = search.best
    target = tuning_target(omega, 100_000, 50_000, 0.975)
    pol, _, _ = tune_policy(inst, pes, best.lam, max(best.mu, 1e-6), target, a.runs, a.seed, 1.0)
    return Tuned(inst, pes, search.bound(), target, pol, load0, t0), opt, search
