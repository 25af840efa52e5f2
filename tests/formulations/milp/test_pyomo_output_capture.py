"""The Pyomo backend under ``redirect_stdout(sys.stderr)``.

:func:`deplbench.solvers.run.solve` runs every algorithm with ``sys.stdout``
set to ``sys.stderr``. Pyomo's appsi_highs wraps each solve in
``capture_output(capture_fd=True)``, which redirects the descriptors under
both streams; when they are one stream it redirects fd 2 twice and a log
handler on stderr keeps a copy of its own pipe open, so joining its reader
thread fails after 100 s. :func:`~deplbench.formulations.milp.backends.quiet_stdout`
gives Python's stdout its own descriptor (fd 1) for the duration, which is
what these tests check: the mechanism in this process, the whole solve in a
fresh one (where Pyomo is first imported inside the redirect, as in the CLI).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import textwrap

import pytest

from deplbench.formulations.milp.backends import quiet_stdout


@pytest.mark.parametrize("discard", [False, True])
def test_quiet_stdout_gives_python_stdout_its_own_descriptor(discard):
    with contextlib.redirect_stdout(sys.stderr):
        outer = sys.stdout
        with quiet_stdout(discard=discard):
            assert sys.stdout is not sys.stderr
            assert sys.stdout.fileno() == 1
        assert sys.stdout is outer


@pytest.mark.integration
def test_run_solve_with_the_pyomo_backend_matches_highs():
    # pyomo first, so that Pyomo is imported inside solve()'s redirect_stdout(sys.stderr)
    script = textwrap.dedent("""
        import json
        from deplbench.instances.generators import generate
        from deplbench.solvers.run import solve
        inst = generate("knapsack", n_items=3, seed=0, horizon=3)
        runs = {b: solve(inst, "milp", backend=b, evaluate=False) for b in ("pyomo", "highs")}
        print(json.dumps({b: [r.status, r.cost, r.message] for b, r in runs.items()}))
    """)
    # A deadlocked run ends by Pyomo's own 100 s join limit, well inside this budget.
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "Exception in thread" not in proc.stderr, proc.stderr
    runs = json.loads(proc.stdout)
    assert runs["pyomo"][0] == "optimal", runs["pyomo"]
    assert runs["highs"][0] == "optimal", runs["highs"]
    assert runs["pyomo"][1] == pytest.approx(runs["highs"][1], rel=1e-9)
