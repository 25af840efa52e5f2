"""Where the adaptive bracket's width comes from, on the realistic instances (formulations/adaptive/).

Run::

    python perf/adaptive_gap_sources.py                                  # the nine target instances, 4800 buckets
    python perf/adaptive_gap_sources.py --cases pact-vgg11:0.3 --buckets 9600

The bracket [LB, UB] of ``deplbench adaptive`` has three parts that finer
loss grids do not remove (docs/adaptive.md); this script measures the two
that can be measured, per instance, on one loss grid:

* **the policy's time non-anticipation** — the certified policy (tuned as
  ``adaptive_bounds`` tunes it, on tuning seeds) is run on fresh runs and
  every run's epochs are re-costed with the compute time allocated *in
  hindsight*: (Σ√(κ c))² / (Tmax − Σ s/b), the water-filling optimum of
  eq. (2) under eq. (4) once the run's epochs are known (capacity
  ignored, so it is at most what any allocation of those epochs costs).
  ``policy − hindsight`` is what not knowing the run's length costs the
  policy: an *estimate* on these runs, not a bound.
* **how far the priced bound lets the run's time spread** — the relaxation
  E[T] ≤ Tmax in place of T ≤ Tmax on every run lets runs that stop early
  (failed or lucky) lend their unused time to the rest. Reported: the
  coefficient of variation of the remaining compute time at the root under
  the bound's own policy (the DP's first and second moments) and its
  P(fail). A cost convex in time (κc/t) gains ≈ CV² from such a spread
  (Jensen), which is the order of the gap the carried deadline would close.

``hindsight − LB`` is then the rest: the deadline priced instead of carried
in the bound, the loss grid's rounding of both chains (shrinking with the
grid), and the policy's choice of epochs. Writes
``results/bench/adaptive_gap_sources.json`` (``--out``) after every row and
prints a table; the 1-minute load average before and after each row is
recorded.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

import numpy as np

from deplbench.formulations.adaptive.bracket import tuning_target
from deplbench.formulations.adaptive.certify import tune_policy
from deplbench.formulations.adaptive.chain import Chain, dp
from deplbench.formulations.adaptive.search import multires_search
from deplbench.formulations.evaluation.closed_loop import BLOCK, STOP, ClosedLoopPolicy, simulate
from deplbench.instances.generators import generate

ROOT = Path(__file__).resolve().parent.parent
CASES = [("pact-vgg11", 0.15), ("pact-vgg11", 0.3), ("pact-vgg11", 0.45), ("alexnet", 5.0), ("alexnet", 9.0),
         ("alexnet", 13.0), ("mobilenet", 5.0), ("mobilenet", 9.0), ("mobilenet", 13.0)]


class Recorder(ClosedLoopPolicy):
    """Runs ``inner`` and adds up, per run, Σ√(κc) and Σ s/b of the epochs it trains."""

    def __init__(self, inner, runs: int):
        self.inner, self.name, self.reference_plan = inner, inner.name, inner.reference_plan
        self.root_sum, self.comm = np.zeros(runs), np.zeros(runs)

    def datasets(self):
        return self.inner.datasets()

    def describe(self):
        return self.inner.describe()

    def decide(self, state):
        out = self.inner.decide(state)
        go = out.model != STOP
        st = self.inner.chain.st
        m, n = out.model[go], out.cluster[go]
        np.add.at(self.root_sum, state.runs[go], np.sqrt(st.kappa[n] * st.compute[m, n]))
        np.add.at(self.comm, state.runs[go], st.comm[m, n])
        return out


def measure(family: str, loss_max: float, buckets: int, runs: int, tune_runs: int, seed: int) -> dict:
    inst = generate("realistic", family=family, loss_max=loss_max)
    load0, w0 = os.getloadavg()[0], time.perf_counter()
    omega = float(inst.omega)
    opt = Chain(inst, buckets, optimistic=True)
    search = multires_search(inst, opt, omega, 6, 6)
    best = search.best
    root = dp(opt, best.lam, best.mu, keep=True).remaining[0, opt.M, opt.i0].astype(float)
    cv = math.sqrt(max(root[2] - root[0] ** 2, 0.0)) / root[0] if root[0] > 0 else math.nan
    # the policy, tuned as adaptive_bounds tunes it (tuning seeds seed + 1, seed + 2)
    target = tuning_target(omega, runs, tune_runs, 0.975)      # each statement of a 95 % bracket
    pes = Chain(inst, buckets, optimistic=False)
    pol, _, ok = tune_policy(inst, pes, best.lam, best.mu, target, tune_runs, seed + 1, 1.0, coin_seed=seed)
    rec = Recorder(pol, runs)
    res = simulate(inst, rec, runs, seed)
    tm = float(inst.time_max)
    with np.errstate(divide="ignore", invalid="ignore"):
        hind = np.where(rec.root_sum > 0, rec.root_sum ** 2 / (tm - rec.comm), 0.0)
    lb, cost, hcost = search.bound(), float(res.cost.mean()), float(hind.mean())
    return {"family": family, "loss_max": loss_max, "buckets": buckets, "lower_bound": lb,
            "policy_cost": cost, "hindsight_cost": hcost, "p_success": float(res.success.mean()),
            "tuning_met": bool(ok), "give_up": pol.give_up,
            "policy_over_lb": (cost - lb) / lb, "policy_over_hindsight": (cost - hcost) / lb,
            "hindsight_over_lb": (hcost - lb) / lb, "priced_time_cv": cv, "priced_p_fail": best.p_fail,
            "priced_mean_time": best.time, "time_max": tm, "runs": runs, "seed": seed,
            "wall_s": time.perf_counter() - w0, "load_before": load0, "load_after": os.getloadavg()[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", help="comma-separated family:ℓmax pairs (default: all nine)")
    ap.add_argument("--buckets", type=int, default=4800, help="loss buckets of both chains (default 4800)")
    ap.add_argument("--runs", type=int, default=BLOCK, help=f"fresh runs of the policy (default {BLOCK})")
    ap.add_argument("--tune-runs", type=int, default=20_000, help="runs per tuning simulation (default 20000)")
    ap.add_argument("--seed", type=int, default=11, help="seed of the fresh runs (tuning: seed + 1, + 2)")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "adaptive_gap_sources.json"))
    args = ap.parse_args()
    if not 0 < args.runs <= BLOCK:
        ap.error(f"--runs: at most {BLOCK} (one simulator block: the recorder keys runs by their index)")
    cases = CASES if not args.cases else [(f, float(lm)) for f, lm in (c.split(":") for c in args.cases.split(","))]
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    for family, lm in cases:
        r = measure(family, lm, args.buckets, args.runs, args.tune_runs, args.seed)
        rows.append(r)
        path.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
        print(f"{family:<11} ℓmax {lm:<5g} {r['buckets']} buckets  LB {r['lower_bound']:9.2f}  policy "
              f"{r['policy_cost']:9.2f} (+{100 * r['policy_over_lb']:.2f} %)  hindsight-allocated "
              f"{r['hindsight_cost']:9.2f} (policy − it: {100 * r['policy_over_hindsight']:.2f} % of LB; it − LB: "
              f"{100 * r['hindsight_over_lb']:.2f} %)  priced CV(time) {r['priced_time_cv']:.3f}, P(fail) "
              f"{r['priced_p_fail']:.4f}  {r['wall_s']:.0f} s, load {r['load_before']:.1f}→{r['load_after']:.1f}",
              flush=True)


if __name__ == "__main__":
    main()
