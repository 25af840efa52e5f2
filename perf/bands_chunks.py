"""The per-epoch bands kept whole against the same bands in epoch chunks, side by side.

``python perf/bands_chunks.py`` evaluates one 400-epoch plan of a two-model
instance with random laws (an inverse-gamma improvement, a Student-t jump)
on 50,000 out-of-sample trajectories twice: with the default budget (every
trajectory kept, one pass) and under a :func:`deplbench.limits.memory_budget`
scope that leaves room for the finals, one block and 101 epoch columns (the
bands in 4 chunks, every block re-simulated per chunk). It prints the CPU
seconds of each, their ratio and whether every number of the two
evaluations is identical.
"""

from __future__ import annotations

import time

from deplbench.formulations.evaluation.evaluate import evaluate_plan
from deplbench.formulations.evaluation.memory import BLOCK_BYTES_PER_VALUE
from deplbench.formulations.model.plan import Plan
from deplbench.instances.model import parse_instance
from deplbench.limits import memory_budget

INSTANCE = {
    "name": "bands", "initial_loss": 10.0, "loss_max": 9.9, "omega": 0.9, "time_max": 10.0, "horizon": 500,
    "models": [
        {"name": "m", "size": 1.0, "compute": 4.0, "loss_scale": 2.0, "loss_offset": 3.0, "decay": "inv_sqrt",
         "improvement": {"kind": "inverse_gamma", "shape": 12.0, "scale": 11.0}},
        {"name": "p", "size": 0.5, "compute": 1.0, "loss_scale": 1.5, "loss_offset": 0.0, "decay": "none",
         "improvement": {"kind": "point", "value": 0.8}},
    ],
    "switches": [{"from_model": "m", "to_model": "p",
                  "jump": {"kind": "student_t", "df": 5.0, "loc": 0.3, "scale": 0.1}}],
    "clusters": [{"name": "A", "capacity": 10.0, "unit_cost": 1.0, "bandwidth": 2.0}],
    "datasets": [{"name": "d0", "size": 1.0, "usefulness": 1.0}],
    "transfer_costs": [{"dataset": "d0", "cluster": "A", "cost": 5.0}],
}
SAMPLES = 50_000
EPOCHS = 400
BLOCK = 25_000          # memory._BLOCK: 2 blocks


def main() -> None:
    inst = parse_instance(INSTANCE)
    plan = Plan(epochs=[{"model": "m", "cluster": "A", "allocation": 5.0}] * (EPOCHS // 2)
                + [{"model": "p", "cluster": "A", "allocation": 5.0}] * (EPOCHS // 2), datasets={"A": ["d0"]})
    width = EPOCHS + 1
    t0 = time.process_time()
    whole = evaluate_plan(inst, plan, samples=SAMPLES, seed=1)
    t1 = time.process_time()
    # the finals (16 B each), one block (BLOCK_BYTES_PER_VALUE) and 101 columns (16 B per value): 4 chunks
    budget = SAMPLES * 16 + BLOCK * width * BLOCK_BYTES_PER_VALUE + 101 * SAMPLES * 16
    with memory_budget(budget / 2**30):
        t2 = time.process_time()
        chunked = evaluate_plan(inst, plan, samples=SAMPLES, seed=1)
        t3 = time.process_time()
    print(f"bands kept whole: {t1 - t0:.2f} s CPU ({SAMPLES * (16 + width * 24) / 2**20:.0f} MiB); "
          f"in 4 chunks: {t3 - t2:.2f} s CPU (budget {budget / 2**20:.0f} MiB); "
          f"ratio {(t3 - t2) / (t1 - t0):.2f}; identical: {chunked.to_dict() == whole.to_dict()}")


if __name__ == "__main__":
    main()
