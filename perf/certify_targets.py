"""Certified-bracket targets, measured.

Run::

    python perf/certify_targets.py                  # 10 realistic instances, 2 workers
    python perf/certify_targets.py --loss-max 9 --families alexnet

For realistic AlexNet and MobileNet instances (``generate("realistic",
family=..., loss_max=ℓmax)``: K̄ = 100, ω = 0.99, ℓmax ∈ {5, 7, 9, 11, 13},
the paper's range), :func:`deplbench.solvers.certify.certified.certify` at its
defaults (confidence 0.95; stage 1: M = 20, S = 2000, N′ = 2·10⁵, risk grid
0.9/0.8/0.7/0.6 × 4 seeds; stage 2 when the stage-1 width exceeds 2 %:
M₂ = 80 at S₂ = 20 000, risk grid 0.95/0.9 × 2 seeds, ≤ 6 tests on N′₂ = 10⁶
draws) with DepL's plan as an extra candidate. Targets:

1. bracket width (UB − LB)/UB ≤ 2 % at joint confidence 0.95;
2. ≤ 5 minutes per instance on a 2-core machine — the wall time, the CPU
   seconds of all processes and the machine's load average (1-minute, at the
   start and end of each instance) are recorded: on a machine shared with
   other jobs the wall time says as much about them as about this code, and
   CPU seconds / 2 is what two idle cores would need;
3. LB is never above the cost of any certified-feasible plan (every
   candidate and DepL's plan are checked).

Writes ``results/bench/certify_targets.json`` and prints one line per
instance (and a Markdown table at the end).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from deplbench.formulations.evaluation.evaluate import evaluate_plan
from deplbench.instances.generators import generate
from deplbench.solvers.certify.certified import certify, process_map
from deplbench.solvers.run import solve


def one(family: str, loss_max: float, workers: int, **options) -> dict:
    inst = generate("realistic", family=family, loss_max=loss_max)
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    depl = solve(inst, "depl", evaluate=False)
    extra = {"algorithm depl": depl.plan} if depl.plan is not None else {}
    b = certify(inst, candidates=extra, map=process_map(workers), **options)
    wall = time.perf_counter() - t0
    load1 = os.getloadavg()[0]
    lb = b["lower_bound"]["value"]
    certified = [c["cost"] for c in b["candidates"] if c["certified"]]
    depl_ev = evaluate_plan(inst, depl.plan, samples=200_000, seed=11, trajectory=False) if depl.plan else None
    if depl_ev is not None and depl_ev.certified_verdict == "certified feasible":
        certified.append(depl_ev.cost)
    stage2 = b["stages"][1] if len(b["stages"]) > 1 else {}
    return {
        "family": family, "loss_max": loss_max, "status": b["status"], "lb": lb,
        "ub": (b["upper_bound"] or {}).get("value"), "width": b["width"],
        "width_stage1": b["stages"][0]["width"], "stage2_ran": bool(stage2.get("ran")),
        "lb_from_stage": b["lower_bound"].get("from_stage"),
        "ub_test": (b["upper_bound"] or {}).get("test"),
        "confidence": b["confidence"], "ub_source": (b["upper_bound"] or {}).get("source"),
        "wall_s": wall, "cpu_s": b["runtime_s"]["cpu"], "workers": workers,
        "lb_below_every_certified_plan": lb is None or all(lb <= c * (1 + 1e-12) for c in certified),
        "n_certified_plans": len(certified), "depl_cost": depl.cost,
        "depl_over_ub": depl.cost / b["upper_bound"]["value"] if depl.cost and b["upper_bound"] else None,
        "depl_over_lb": depl.cost / lb if depl.cost and lb else None,
        "saa_optima": b["saa_optima"], "saa_optima_stage2": b["saa_optima_stage2"],
        "trivial_replications": b["lower_bound"]["trivial_replications"],
        "load_start": load0, "load_end": load1,
    }


def _fmt(x, digits=6):
    return "—" if x is None else f"{x:.{digits}g}"


def main() -> None:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--families", default="alexnet,mobilenet")
    ap.add_argument("--loss-max", default="5,7,9,11,13")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--target-width", type=float, default=None, help="override certify's default")
    ap.add_argument("--out", default="results/bench/certify_targets.json")
    args = ap.parse_args()
    options = {} if args.target_width is None else {"target_width": args.target_width}
    rows = []
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    for fam in args.families.split(","):
        for lm in (float(x) for x in args.loss_max.split(",")):
            r = one(fam, lm, args.workers, **options)
            rows.append(r)
            w1 = r["width_stage1"]
            print(f"{fam:<9} ℓmax={lm:<4g} {r['status']:<8} [{_fmt(r['lb'])}, {_fmt(r['ub'])}] width "
                  f"{100 * (r['width'] if r['width'] is not None else float('nan')):.2f} % "
                  f"(stage 1 {100 * (w1 if w1 is not None else float('nan')):.2f} %, stage 2 "
                  f"{'ran' if r['stage2_ran'] else 'not run'}) conf {r['confidence']:.3g}  "
                  f"wall {r['wall_s']:.0f} s  CPU {r['cpu_s']:.0f} s  load {r['load_start']:.1f}→"
                  f"{r['load_end']:.1f}  LB ≤ certified plans: {r['lb_below_every_certified_plan']}",
                  flush=True)
            # after every instance, so an interrupted run keeps what it measured
            out.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    print("\n| instance (K̄ = 100, ω = 0.99) | LB | UB | width | stage-1 width | stage 2 | confidence "
          "| wall s | CPU s | load (1 min) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {'AlexNet' if r['family'] == 'alexnet' else 'MobileNet'} ℓmax = {r['loss_max']:g} | "
              f"{_fmt(r['lb'])} | {_fmt(r['ub'])} | {100 * r['width']:.2f} % | "
              f"{100 * r['width_stage1']:.2f} % | {'ran' if r['stage2_ran'] else '—'} | "
              f"{r['confidence']:.2f} | {r['wall_s']:.0f} | {r['cpu_s']:.0f} | "
              f"{r['load_start']:.1f}–{r['load_end']:.1f} |" if r["width"] is not None and r["width_stage1"]
              is not None else f"| {r['family']} ℓmax = {r['loss_max']:g} | {r['status']} |")


if __name__ == "__main__":
    main()
