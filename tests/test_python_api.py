"""README's "Use it from Python" section, run as examples/python_api.py."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from deplbench.benchmarks.store import ResultsStore

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "python_api.py"


def _code_blocks(markdown: str, heading: str) -> str:
    """The ```python blocks of the README section under ``heading``."""
    section = markdown.split(heading, 1)[1].split("\n## ", 1)[0]
    return "\n".join(re.findall(r"```python\n(.*?)```", section, flags=re.S))


def test_the_example_compares_with_no_plan_unjudged_out_of_sample():
    """The example's reference is the true static optimum (milp-exact, its plan proven feasible),
    never an SAA optimum solved with evaluate=False and called optimal: judged out of sample that
    plan misses ℓmax (docs/certify.md, "SAA optimum versus certified bracket")."""
    script = EXAMPLE.read_text(encoding="utf-8")
    assert "evaluate=False" not in script and '"milp"' not in script
    assert 'solve(inst, "milp-exact"' in script and 'opt.evaluation["exact_verdict"]' in script


def test_readme_section_is_the_example_script():
    """Every line of README's Python block appears in the example script, so
    running the script tests the README."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    code = _code_blocks(readme, "## Use it from Python")
    script = EXAMPLE.read_text(encoding="utf-8")
    lines = [ln.strip() for ln in code.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    assert len(lines) >= 10
    missing = [ln for ln in lines if ln not in script]
    assert not missing, f"README lines not in examples/python_api.py: {missing}"


@pytest.mark.integration
def test_example_script_runs(tmp_path):
    work = tmp_path / "new" / "api"     # README: `python examples/python_api.py DIR`, DIR created
    p = subprocess.run([sys.executable, str(EXAMPLE), str(work)], capture_output=True, text=True,
                       cwd=tmp_path, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    out = p.stdout
    assert "sweep: 6 tasks ok, 0 failed" in out
    # DepL against the true static optimum, whose plan is proven feasible: never cheaper than it
    m = re.search(r"DepL: feasible cost ([0-9.]+) ", out)
    o = re.search(r"milp-exact: optimal cost ([0-9.]+) proven lower bound ([0-9.]+) plan proven feasible "
                  r"ratio DepL/optimum ([0-9.]+)", out)
    assert m and o, out
    depl, opt, lb, ratio = float(m.group(1)), float(o.group(1)), float(o.group(2)), float(o.group(3))
    assert lb <= opt * (1 + 1e-9) and depl >= lb * (1 - 1e-9)
    assert ratio == pytest.approx(depl / opt, abs=1e-3) and ratio >= 1.0 - 1e-9
    # The store the script wrote loads with the documented call.
    df = ResultsStore(work / "results.sqlite", readonly=True).frame()
    assert len(df) == 6 and set(df["algorithm"]) == {"depl", "knapsack-dp"}
    assert (df["status"].isin(["optimal", "feasible"])).all()
    depl = df[df["algorithm"] == "depl"]
    assert sorted(pd.to_numeric(depl["param_eta"]).unique()) == [25, 100]
    # The DP optimum is a lower bound on every DepL cost of the same instance.
    for _sha, g in df.groupby("instance_sha"):
        dp = g.loc[g["algorithm"] == "knapsack-dp", "cost"].iloc[0]
        assert (g["cost"] >= dp * (1 - 1e-9)).all()


@pytest.mark.integration
def test_example_script_refuses_an_unusable_folder_on_one_line(tmp_path):
    taken = tmp_path / "a-file"
    taken.write_text("not a folder")
    p = subprocess.run([sys.executable, str(EXAMPLE), str(taken / "api")], capture_output=True, text=True,
                       cwd=tmp_path, timeout=900)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == f"error: {taken / 'api'}: cannot use it as the work folder (Not a directory)\n"
