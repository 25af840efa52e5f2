"""How a water-filling pass's wall time grows with the loss grid, in cache-sized blocks or whole rows.

Run::

    python perf/adaptive_pass_scaling.py                                  # AlexNet ℓmax 5, 9600–38400
    python perf/adaptive_pass_scaling.py --buckets 19200,38400 --epochs 10 --chunks 4096,0

For one realistic instance, each grid of ``--buckets`` and each block size of ``--chunks``
(:data:`~deplbench.formulations.adaptive.waterfill.CHUNK`; 0: a thread's whole share of the loss
buckets at once) runs the pass's first ``--epochs`` backward steps (the chain's horizon cut there: a
pass's time is that of its epochs, each the same work) at one failure price and time price, on
``--threads`` threads, side by side in one run (``--repeat`` times each, in alternating order, the
least counting). Prints the wall seconds per epoch, their ratio to the
whole rows', the growth per doubling of the grid (what
:data:`~deplbench.formulations.adaptive.budget.FINER_GROWTH` predicts) and whether every block size
gave the same value to the last bit (it must: each step reads its own bucket alone), with the
1-minute load before and after. The multipliers are fixed, not searched: the time of a pass does not
depend on them, and its value here is not a bound of interest.
"""

from __future__ import annotations

import argparse
import os
import time

from deplbench.formulations.adaptive import waterfill as W
from deplbench.formulations.adaptive.chain import Chain
from deplbench.formulations.adaptive.settings import threads_for
from deplbench.instances.generators import generate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--family", default="alexnet")
    ap.add_argument("--loss-max", type=float, default=5.0)
    ap.add_argument("--buckets", default="9600,19200,38400", help="comma-separated grids")
    ap.add_argument("--chunks", default=f"{W.CHUNK},0", help="comma-separated block sizes (0: whole rows)")
    ap.add_argument("--epochs", type=int, default=15, help="backward steps timed per pass (default 15)")
    ap.add_argument("--threads", type=int, default=0, help="threads of the pass (default 0: one per core)")
    ap.add_argument("--repeat", type=int, default=2, help="passes per variant, in alternating order; the "
                    "least time counts (default 2)")
    a = ap.parse_args()
    inst = generate("realistic", family=a.family, loss_max=a.loss_max)
    threads = threads_for(a.threads)
    load0 = os.getloadavg()[0]
    per_epoch: dict[int, dict[int, float]] = {}
    for buckets in (int(x) for x in a.buckets.split(",")):
        chain = Chain(inst, buckets, optimistic=True)
        chain.K = min(a.epochs, chain.K)
        mu = 10.0 * chain.st.cost_scale() / chain.st.time_max
        values, per_epoch[buckets] = set(), {}
        chunks = [int(x) for x in a.chunks.split(",")]
        for rep in range(a.repeat):            # alternating order: the first pass of a process runs cold
            for chunk in chunks if rep % 2 == 0 else chunks[::-1]:
                W.CHUNK = chunk if chunk > 0 else 10 * (chain.L + 1)
                w0 = time.perf_counter()
                wp = W.waterfill_pass(chain, mu, 1.0, threads=threads)
                s = (time.perf_counter() - w0) / chain.K
                per_epoch[buckets][chunk] = min(s, per_epoch[buckets].get(chunk, s))
                values.add((wp.value, wp.eta))
        whole = per_epoch[buckets].get(0)
        cells = ", ".join(f"{'whole rows' if c == 0 else f'blocks of {c}'} {s:.3f} s/epoch"
                          + (f" (×{whole / s:.2f})" if whole and c else "") for c, s in per_epoch[buckets].items())
        print(f"{a.family} ℓmax {a.loss_max:g}, {buckets} buckets ({chain.L + 1} cells), {threads} thread(s): "
              f"{cells}; the same to the last bit: {'yes' if len(values) == 1 else 'NO'}", flush=True)
    grids = sorted(per_epoch)
    for lo, hi in zip(grids, grids[1:]):
        growth = ", ".join(f"{'whole rows' if c == 0 else f'blocks of {c}'} ×{per_epoch[hi][c] / per_epoch[lo][c]:.2f}"
                           for c in per_epoch[lo] if c in per_epoch[hi])
        print(f"growth per epoch from {lo} to {hi} buckets: {growth}")
    print(f"1-minute load {load0:.1f}→{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
