"""``flow`` against ``general`` on acyclic instances with several data classes, side by side.

Run::

    python perf/route_multiclass.py [--scenarios 200,1000] [--time-limit 120]

The sequence enumeration (``fast`` on acyclic graphs) needs one data class;
with 2..MAX_DATASETS datasets and an acyclic switch graph the alternative is
the ``flow`` MILP, whose scenario rows make certify's SAA replications take
minutes each. This measures both routes on the same instances and
scenarios — the ``datasets`` family (2–3 datasets, 2 clusters, K̄ = 20,
seeds 0–2) and the test suite's tiny instance with 2 datasets — and prints
CPU seconds (load-independent), status and cost, with the load average.
The routing rule in :func:`deplbench.formulations.milp.catalog.fast_prefers_general`
is justified by this table.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from deplbench.instances.generators import generate
from deplbench.solvers.run import solve

ROOT = Path(__file__).resolve().parent.parent


def instances():
    sys.path.insert(0, str(ROOT / "tests"))
    from milp_instances import tiny_instance

    yield "tiny |D|=2 K=6", tiny_instance(0, horizon=6, n_datasets=2)
    for d in (2, 3):
        for seed in (0, 1, 2):
            yield f"datasets |D|={d} seed {seed}", generate("datasets", n_datasets=d, n_clusters=2, horizon=20,
                                                             seed=seed)


def main() -> None:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", default="200,1000")
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "route_multiclass.json"))
    args = ap.parse_args()
    rows = []
    for name, inst in instances():
        for S in (int(s) for s in args.scenarios.split(",")):
            row = {"instance": name, "scenarios": S}
            for form in ("flow", "general"):
                load = os.getloadavg()[0]
                c0 = time.process_time()
                r = solve(inst, "milp", evaluate=False, scenarios=S, seed=0, time_limit=args.time_limit,
                          formulation=form)
                row[form] = {"status": r.status, "cost": r.cost, "lower_bound": r.lower_bound,
                             "cpu_s": time.process_time() - c0, "load": load}
            rows.append(row)
            f, g = row["flow"], row["general"]
            print(f"{name:<24} S={S:<5} flow {f['status']:<10} {f['cost']!s:<20} {f['cpu_s']:7.1f} CPU-s | "
                  f"general {g['status']:<10} {g['cost']!s:<20} {g['cpu_s']:7.1f} CPU-s  (load {g['load']:.1f})",
                  flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
