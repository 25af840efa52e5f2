"""The priced multiplier search with one correlation per distinct (model, kernel) row, against one per action.

Run::

    python perf/adaptive_distinct_rows.py
    python perf/adaptive_distinct_rows.py --before-src /tmp/before/src   # also an older checkout
    python perf/adaptive_distinct_rows.py --cases timed:0 --buckets 600   # carried-deadline passes

The DP passes (:func:`~deplbench.formulations.adaptive.chain.dp`) correlate
one next-state row per distinct (model, kernel)
(:func:`~deplbench.formulations.adaptive.chain.distinct_rows`): on the
realistic families γ does not depend on the cluster, so one row per model
where one per (model, cluster) was correlated before (PACT-VGG11: 3 clusters,
AlexNet and MobileNet: 2). This measures the CPU seconds of the priced search
the bracket runs on a grid (:func:`~deplbench.formulations.adaptive.search.multires_search`
with the default ``iters_lam``, ``iters_mu``: a coarse search, then a short one
warm-started on the grid) on the optimistic chain, per instance and grid:

* ``after``: the passes as they are;
* ``every-row``: the same code with each (m', n') its own row
  (:func:`every_row` in place of ``distinct_rows``), i.e. one correlation per
  action as before;
* ``before`` (with ``--before-src``): the search run from another source tree,
  e.g. the commit before the change exported with
  ``git archive COMMIT src | tar -x -C /tmp/before``.

The case ``timed:0`` times three carried-deadline passes (:data:`TIMED_POINTS`) on a
small instance instead (:func:`worker`).

Each variant runs in a fresh process, the order alternating between cases;
it prints the CPU seconds of each, the ratios to ``after``, the bound and
whether each variant's bound and passes (λ, μ, V₀ and its rounding bound) are
``after``'s bit for bit (``every-row`` must be), and the 1-minute load before
and after. An older ``before`` may differ in the last bits of the rounding
bounds on grids whose rows pass 8192 cells: its norms depended on the other
rows of a batch (:func:`deplbench.formulations.adaptive.correlation._sum_squares`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
DEFAULT_CASES = "pact-vgg11:0.3,alexnet:9,mobilenet:13"
#: Time points of the carried-deadline passes timed with ``--cases timed:0 --buckets 600``.
TIMED_POINTS = (64, 128, 256)


def every_row(chain, k: int):
    """Each (m', n') its own row: one correlation per action."""
    import numpy as np

    M, N = chain.M, chain.N
    return (np.repeat(np.arange(M), N), [chain.kx[k][m][n] for m in range(M) for n in range(N)],
            np.arange(M * N))


def worker(family: str, loss_max: float, buckets: int, variant: str) -> dict:
    """One search in this process: CPU seconds, the bound and every pass's (λ, μ, V₀, err).

    Family ``timed``: instead, one carried-deadline pass (:func:`timed_dp`) at each of
    ``TIMED_POINTS`` on a small instance (``generate("scaling", n_models=2, n_clusters=2,
    horizon=6)``, the size on which the bracket carries the deadline), at μ = 10 × the
    cost scale."""
    from deplbench.formulations.adaptive import chain as chain_mod
    from deplbench.formulations.adaptive.chain import Chain
    from deplbench.formulations.adaptive.search import multires_search
    from deplbench.formulations.adaptive.settings import ITERS_LAM, ITERS_MU
    from deplbench.instances.generators import generate

    if variant == "every-row":
        chain_mod.distinct_rows = every_row
        try:
            from deplbench.formulations.adaptive import timed as timed_mod
            timed_mod.distinct_rows = every_row
        except ImportError:
            pass
    if family == "timed":
        from deplbench.formulations.adaptive.timed import timed_dp

        chain = Chain(generate("scaling", n_models=2, n_clusters=2, horizon=6, seed=0), buckets, optimistic=True)
        mu = 10.0 * chain.st.cost_scale()
        t0 = time.process_time()
        ps = [timed_dp(chain, mu, g) for g in TIMED_POINTS]
        return {"cpu": time.process_time() - t0, "bound": ps[-1].value,           # V₀ at G = 256
                "passes": [[p.lam, p.mu, p.value, p.err] for p in ps]}
    inst = generate("realistic", family=family, loss_max=loss_max)
    chain = Chain(inst, buckets, optimistic=True)
    t0 = time.process_time()
    s = multires_search(inst, chain, float(inst.omega), ITERS_LAM, ITERS_MU)
    cpu = time.process_time() - t0
    return {"cpu": cpu, "bound": s.bound(), "passes": [[p.lam, p.mu, p.value, p.err] for p in s.passes]}


def compare(r: dict, ref: dict) -> str:
    """'bit-identical' when the bound and every pass's (λ, μ, V₀, err) are ``ref``'s, else what differs."""
    if r["bound"] == ref["bound"] and r["passes"] == ref["passes"]:
        return "bit-identical"
    if len(r["passes"]) != len(ref["passes"]) or any(p[:3] != q[:3] for p, q in zip(r["passes"], ref["passes"])):
        return f"DIFFERENT (bound {r['bound']!r} vs {ref['bound']!r})"
    rel = max(abs(p[3] - q[3]) / q[3] for p, q in zip(r["passes"], ref["passes"]) if q[3])
    return f"same λ, μ, V₀; rounding bounds within {rel:.1e} relative, bound {r['bound'] - ref['bound']:+.1e}"


def run(variant: str, src: Path, case: tuple[str, float, int]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src)}
    family, loss_max, buckets = case
    out = subprocess.run([sys.executable, __file__, "--worker", variant, "--family", family,
                          "--loss-max", repr(loss_max), "--buckets", str(buckets)],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default=DEFAULT_CASES, help="family:loss_max,... (realistic family)")
    ap.add_argument("--buckets", default="2400,9600", help="loss grids, comma-separated")
    ap.add_argument("--before-src", type=Path, help="an older checkout's src/ to time as 'before'")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--family", help=argparse.SUPPRESS)
    ap.add_argument("--loss-max", type=float, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        b = int(a.buckets)
        print(json.dumps(worker(a.family, a.loss_max, b, a.worker)))
        return
    variants = [("after", SRC), ("every-row", SRC)]
    if a.before_src:
        variants.append(("before", a.before_src.resolve()))
    cases = [(f, float(lm), int(b)) for f, lm in (c.split(":") for c in a.cases.split(","))
             for b in a.buckets.split(",")]
    load0 = os.getloadavg()[0]
    names = [v for v, _ in variants]
    print("| instance | buckets | " + " | ".join(f"{v} CPU-s" for v in names)
          + " | " + " | ".join(f"{v}/after" for v in names[1:]) + " | bound | against after |")
    print("|---|---:|" + "---:|" * (2 * len(names) - 1) + "---:|---|")
    for i, case in enumerate(cases):
        order = variants if i % 2 == 0 else variants[::-1]
        res = {v: run(v, src, case) for v, src in order}
        ref = res["after"]
        cpu = [res[v]["cpu"] for v in names]
        label = ("timed_dp, scaling 2×2, K̄ = 6, G = " + "/".join(map(str, TIMED_POINTS)) if case[0] == "timed"
                 else f"{case[0]} ℓmax {case[1]:g}")
        print(f"| {label} | {case[2]} | " + " | ".join(f"{c:.1f}" for c in cpu) + " | "
              + " | ".join(f"{c / cpu[0]:.2f}" for c in cpu[1:]) + f" | {ref['bound']:.6g} | "
              + "; ".join(f"{v}: {compare(res[v], ref)}" for v in names[1:]) + " |", flush=True)
    print(f"1-minute load {load0:.1f}→{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
