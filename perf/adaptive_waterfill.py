"""The water-filling lower bound against the priced one on the same loss grid.

Run::

    python perf/adaptive_waterfill.py --family pact-vgg11 --loss-max 0.3 --buckets 600
    python perf/adaptive_waterfill.py --buckets 600 --slopes 32,48,64,96 --ratio 0.579
    python perf/adaptive_waterfill.py --buckets 9600 --ratio 0.6 --threads 1,2

For one realistic instance and grid: the priced multiplier search
(:func:`~deplbench.formulations.adaptive.search.multires_search`, the
bracket's), then water-filling passes
(:mod:`~deplbench.formulations.adaptive.waterfill`) at each ``--slopes`` J —
at the failure price ``--ratio`` times the priced μ, or at the ratio the
bracket's own search finds (``grid_passes``: golden section on 300 buckets,
then one pass on the grid). Prints both bounds (each proven, rounding
subtracted), the gain, the water-filling pass's CPU seconds and the
1-minute load before and after. With ``--threads T1,T2,…`` the last pass is
run again on each number of threads, side by side in one run: its wall
seconds, their ratio to the first's, and whether the bound is the same to
the last bit (it must be).
"""

from __future__ import annotations

import os
import time

from adaptive_probe import instance_parser

from deplbench.formulations.adaptive.chain import Chain
from deplbench.formulations.adaptive.search import multires_search
from deplbench.formulations.adaptive.settings import threads_for
from deplbench.formulations.adaptive.waterfill import LEAN, SPAN, grid_passes, waterfill_pass
from deplbench.instances.generators import generate


def main() -> None:
    ap = instance_parser(__doc__ or "", "pact-vgg11", 0.3, 600)
    ap.add_argument("--slopes", default="64", help="comma-separated J (default 64)")
    ap.add_argument("--span", type=float, default=SPAN, help=f"ν*/span to ν* (default {SPAN:g})")
    ap.add_argument("--ratio", type=float, default=None, help="μ/μ_priced (default: searched as the bracket does)")
    ap.add_argument("--threads", default="",
                    help="comma-separated thread counts to time the last pass on (0: one per core)")
    a = ap.parse_args()
    inst = generate("realistic", family=a.family, loss_max=a.loss_max)
    omega = float(inst.omega)
    load0 = os.getloadavg()[0]
    chain = Chain(inst, a.buckets, optimistic=True)
    t0 = time.process_time()
    search = multires_search(inst, chain, omega, 6, 6)
    t_priced, priced, best = time.process_time() - t0, search.bound(), search.best
    print(f"{a.family} ℓmax {a.loss_max:g}, {a.buckets} buckets: priced {priced:.3f} "
          f"(λ {best.lam:.4g}, μ {best.mu:.4g}; {t_priced:.1f} CPU-s)")
    for J in (int(x) for x in a.slopes.split(",")):
        t1 = time.process_time()
        if a.ratio is None:
            passes, ratio = grid_passes(chain, omega, best, J, None)
            wp, where = passes[-1], f"μ/μ* = {ratio * LEAN:.3g} (searched, {len(passes)} passes)"
        else:
            wp, where = waterfill_pass(chain, a.ratio * best.mu, best.lam, J, a.span), f"μ/μ* = {a.ratio:g}"
        wf = wp.bound(omega, chain.st.time_max)
        print(f"  J {J}, span {a.span:g}: water-filling {wf:.3f} at {where}, gain {100 * (wf / priced - 1):+.3f} %, "
              f"last pass {wp.seconds:.1f} CPU-s, all {time.process_time() - t1:.1f} CPU-s")
        walls: list[float] = []
        for t in (int(x) for x in a.threads.split(",") if x):
            w0 = time.perf_counter()
            again = waterfill_pass(chain, wp.mu, wp.lam, J, a.span, threads=threads_for(t))
            walls.append(time.perf_counter() - w0)
            same = again.bound(omega, chain.st.time_max) == wf and again.eta == wp.eta
            print(f"    {t} thread(s): {walls[-1]:.2f} s wall (×{walls[0] / walls[-1]:.2f} against the first), "
                  f"{again.seconds:.1f} CPU-s, bound the same to the last bit: {'yes' if same else 'NO'}")
    print(f"1-minute load {load0:.1f}→{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
