"""The example training log under docs/ and the command docs/fit.md gives."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from deplbench.instances.generators import generate
from deplbench.instances.model import load_instance

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "docs" / "example_training_log.csv"


@pytest.mark.integration
def test_documented_command_runs_and_the_output_validates(tmp_path, deplbench_cli):
    doc = (ROOT / "docs" / "fit.md").read_text(encoding="utf-8")
    cmd = "deplbench fit docs/example_training_log.csv --family alexnet -o fitted.json --report fit-report"
    assert cmd in doc
    # Run it as documented, from the repository root, with outputs in a temp dir.
    args = cmd.split()[1:]
    args[args.index("fitted.json")] = str(tmp_path / "fitted.json")
    args[args.index("fit-report")] = str(tmp_path / "fit-report")
    p = subprocess.run([sys.executable, "-m", "deplbench", *args], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    # the fit lines go where the page says they go
    stream = "stdout" if "switch pair to stdout" in doc else "stderr"
    assert stream == "stdout" and "A=" in p.stdout and "A=" not in p.stderr
    status, _, err = deplbench_cli("validate", tmp_path / "fitted.json")
    assert status == 0, err
    fitted = load_instance(tmp_path / "fitted.json")
    truth = generate("realistic", family="alexnet")
    assert [m.name for m in fitted.models] == [m.name for m in truth.models]
    # The log was drawn from the instance's own law: A is recovered (docs/fit.md says ≈).
    for f, t in zip(fitted.models, truth.models):
        assert f.loss_scale == pytest.approx(t.loss_scale, rel=0.1)
    assert {(s.from_model, s.to_model) for s in fitted.switches} == \
        {(s.from_model, s.to_model) for s in truth.switches}
    assert (tmp_path / "fit-report" / "fit-report.json").is_file()


@pytest.mark.integration
def test_example_log_is_reproducible(tmp_path):
    """examples/make_training_log.py (seeded) rewrites the shipped file byte for byte."""
    out = tmp_path / "log.csv"
    p = subprocess.run([sys.executable, str(ROOT / "examples" / "make_training_log.py"), str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert out.read_bytes() == LOG.read_bytes()


def test_the_pages_give_the_shipped_real_logs_run_count():
    import re

    import pandas as pd

    runs = pd.read_csv(ROOT / "src" / "deplbench" / "instances" / "data" / "measured" / "digits-mlp.csv.gz",
                       usecols=["run"])["run"].nunique()
    fit = (ROOT / "docs" / "fit.md").read_text(encoding="utf-8")
    measured = (ROOT / "docs" / "measured.md").read_text(encoding="utf-8")
    said = re.search(r"its pruned versions, ([\d,]+) runs\)", fit)
    assert said and int(said.group(1).replace(",", "")) == runs == 3072
    assert f"{runs:,} runs, seeds 0 … {runs - 1:,}" in measured
