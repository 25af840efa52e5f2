"""The measured loss model (docs/measured.md): the training experiment, the
shipped logs and their analysis, the measured instance family and the replay.

Tests that train need the optional extra ``measure`` (PyTorch, scikit-learn)
and skip with the reason when it is absent; the rest read the shipped files.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import math

import numpy as np
import pytest

from deplbench.errors import InstanceError
from deplbench.instances.fit import LogError, read_logs
from deplbench.instances.generators import generate
from deplbench.instances.generators.measured import (
    EQ8_FILE,
    FIT_FILE,
    FLOP_UNIT,
    LOGS_FILE,
    PROVENANCE_FILE,
    measured_versions,
)
from deplbench.measure.replay import claim_verdict, clopper_pearson, count_violations, judge

HAVE_TORCH = importlib.util.find_spec("torch") is not None and importlib.util.find_spec("sklearn") is not None
needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="the optional extra `measure` (torch, scikit-learn) "
                                 "is not installed: pip install -r requirements/measure.txt")


# ------------------------------------------------------------ training
@needs_torch
@pytest.mark.slow
def test_tiny_training_writes_logs_that_fit_validates(tmp_path):
    from deplbench.measure import experiment

    csv_text, prov = experiment.run_protocol(experiment.tiny_protocol())
    path, prov_path = experiment.write_outputs(csv_text, prov, tmp_path / "tiny.csv.gz")
    logs = read_logs(path)                      # the fit's own validation (gzip included)
    f = logs.frame
    assert logs.n_runs == len({r for r in f["run"]}) == 2 * 2 + 2   # 2 singles x 2 seeds + 1 two-stage x 2 seeds
    assert set(f["model"]) == {"", "full", "p50", "p25"}
    two = f[f["run"].str.startswith("t-")]
    assert list(two[two["run"] == two["run"].iloc[0]]["model"]) == ["", "p25", "p25", "p50", "p50", "p50"]
    saved = json.loads(prov_path.read_text())
    assert saved["library"]["name"] == "torch" and saved["dataset"]["name"].endswith("load_digits")
    assert saved["seeds"]["count"] == 6
    # The seed alone drives a run: the same seed trained again, now beside another seed, gives the same losses.
    from deplbench.measure import network as net

    data = net.load_data()
    alone = net.train_sequence([5], [0.25, 0.5], data)
    paired = net.train_sequence([7, 5], [0.25, 0.5], data)
    np.testing.assert_allclose(alone[0], paired[1], rtol=1e-5)
    assert not np.allclose(paired[0], paired[1])


@needs_torch
@pytest.mark.slow
def test_pruned_network_has_fewer_flops_and_parameters():
    import torch

    from deplbench.measure import network as net

    flops = [net.epoch_flops(f, 100) for f in (0.0, 0.5, 0.9)]
    params = [net.parameter_count(f) for f in (0.0, 0.5, 0.9)]
    assert flops[0] > flops[1] > flops[2] > 0 and params[0] > params[1] > params[2]
    assert params[0] == sum(p.numel() for p in net.reference_module(0.0).parameters())
    batch = net.Batch([0, 1], 0.0)
    before = [w.detach().clone() for w in batch.weights]
    batch.prune_to(0.5)
    assert [tuple(w.shape) for w in batch.weights] == [(2, 64, 32), (2, 32, 32), (2, 32, 10)]
    # the units kept are those of largest L2 norm of incoming weights (ln_structured, n=2)
    norms = before[0][0].norm(dim=0)
    kept = set(torch.topk(norms, 32).indices.tolist())
    assert {int(i) for i in torch.nonzero(torch.isin(before[0][0], batch.weights[0][0]).all(dim=0))} == kept
    with pytest.raises(ValueError, match="cannot be restored"):
        batch.prune_to(0.25)


def test_shipped_versions_really_cost_less():
    v = measured_versions()
    order = sorted(v.values(), key=lambda d: d["factor"])
    assert [d["factor"] for d in order] == [0.0, 0.25, 0.36, 0.5, 0.75, 0.9]
    for a, b in zip(order, order[1:]):
        assert a["flops_per_epoch"] > b["flops_per_epoch"] and a["parameters"] > b["parameters"]


# --------------------------------------------------------- shipped logs
@pytest.mark.slow
def test_shipped_logs_pass_the_fit_validation_and_match_the_provenance():
    logs = read_logs(LOGS_FILE)
    prov = json.loads(PROVENANCE_FILE.read_text())
    assert logs.n_runs == prov["seeds"]["count"]
    assert logs.frame["epoch"].max() == max(p["epochs"] for p in prov["batches"])
    fit = json.loads(FIT_FILE.read_text())
    assert fit["provenance"]["parameters"]["logs_sha256"] == logs.sha256


def test_gzip_logs_are_read_and_a_corrupt_one_is_refused(tmp_path):
    text = "run,epoch,model,loss\na,0,,2\na,1,m,1.5\nb,0,,2\nb,1,m,1.4\n"
    good = tmp_path / "l.csv.gz"
    good.write_bytes(gzip.compress(text.encode()))
    assert read_logs(good).n_runs == 2
    bad = tmp_path / "bad.csv.gz"
    bad.write_bytes(gzip.compress(text.encode())[:20])
    with pytest.raises(LogError, match="gzip"):
        read_logs(bad)


@pytest.mark.slow
def test_analysis_of_the_shipped_logs_reproduces_the_shipped_and_documented_numbers():
    from pathlib import Path

    from deplbench.measure.analysis import analyse
    from deplbench.reports.measured import ANALYSIS_FILE

    shipped = json.loads(ANALYSIS_FILE.read_text())
    now = analyse(bootstrap=200).summary()
    c, s = now["fig4_centre"], shipped["fig4_centre"]
    assert (c["cells"], c["invgamma_accepted"], c["invgamma_rejected_support"]) == \
        (s["cells"], s["invgamma_accepted"], s["invgamma_rejected_support"])
    assert c["accepted_by_family"] == s["accepted_by_family"]
    for name, m in now["models"].items():
        assert m["A"] == pytest.approx(shipped["models"][name]["A"], rel=1e-6)
        assert m["B"] == pytest.approx(shipped["models"][name]["B"], rel=1e-6)
    for key in ("x_lag1", "noise_lag1"):
        assert now["independence"][key]["estimate"] == pytest.approx(shipped["independence"][key]["estimate"],
                                                                     abs=1e-9)
    doc = (Path(__file__).resolve().parents[2] / "docs" / "measured.md").read_text()
    assert f"{c['invgamma_accepted']} of {c['cells']} cells" in doc
    assert f"{now['independence']['noise_lag1']['estimate']:+.3f}" in doc


# ------------------------------------------------------------ instances
def test_measured_instance_uses_the_counted_flops_and_the_fitted_laws():
    inst = generate("measured")
    v = measured_versions()
    assert [m.name for m in inst.models] == ["p25", "p50", "p75"]
    for m in inst.models:
        assert m.compute == pytest.approx(v[m.name]["flops_per_epoch"] / FLOP_UNIT)
        assert m.improvement.kind == "inverse_gamma"
    eq8 = json.loads(EQ8_FILE.read_text())
    three = {"p25", "p50", "p75"}
    assert {(s["from_model"], s["to_model"]) for s in eq8["switches"]
            if {s["from_model"], s["to_model"]} <= three} == {(s.from_model, s.to_model) for s in inst.switches}
    assert {(s.from_model, s.to_model) for s in inst.switches} == {("p25", "p50"), ("p25", "p75"), ("p50", "p75")}
    allm = generate("measured", models="all", law="fit")
    assert len(allm.models) == 6 and any(m.improvement.kind == "empirical" for m in allm.models)
    other = generate("measured", seed=3)
    assert (other.loss_max, len(other.clusters), other.time_max) != (inst.loss_max, len(inst.clusters),
                                                                      inst.time_max)
    with pytest.raises(InstanceError, match="law"):
        generate("measured", law="nope")
    with pytest.raises(InstanceError, match="loss_max"):
        generate("measured", loss_max=5.0)


# --------------------------------------------------------------- replay
def test_replay_counts_a_run_above_lmax_as_a_violation():
    finals = np.array([0.10, 0.29, 0.30, 0.3000001, 0.8])
    assert count_violations(finals, 0.3) == 2          # ℓ(K) = ℓmax meets (3); above it violates
    planted = np.full(1000, 0.1)
    planted[:150] = 0.5                                 # 15 % of runs violate, ω = 0.9 allows 10 %
    r = judge(count_violations(planted, 0.3), planted.size, omega=0.9)
    assert r["violations"] == 150 and r["verdict"] == "does not hold" and r["ci"][0] > 0.1
    assert judge(40, 1000, omega=0.9)["verdict"] == "holds"
    assert judge(100, 1000, omega=0.9)["verdict"] == "not decided"
    rows = [{"solver": "a", "model_verdict": "proven feasible", "model_violation": [0, 0.05], **r},
            {"solver": "b", "model_verdict": "proven feasible", "model_violation": [0, 0.05],
             **judge(40, 1000, 0.9)}]
    assert claim_verdict(rows)["verdict"] == "does not hold"
    assert claim_verdict(rows[1:])["verdict"] == "holds"
    assert claim_verdict([{"solver": "c", "status": "infeasible"}])["verdict"] == "not measured"


def test_clopper_pearson_matches_the_closed_forms():
    lo, hi = clopper_pearson(0, 1000)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 1000), rel=1e-9)
    lo, hi = clopper_pearson(1000, 1000)
    assert hi == 1.0 and lo == pytest.approx(0.025 ** (1 / 1000), rel=1e-9)
    lo, hi = clopper_pearson(100, 1000)
    assert (lo, hi) == pytest.approx((0.0821, 0.1203), abs=1e-4)   # the width docs/measured.md quotes
    with pytest.raises(ValueError):
        clopper_pearson(3, 2)


def test_report_rows_judge_the_shipped_measurement():
    from deplbench.reports.claims_common import FAILS, HOLDS, VERDICTS
    from deplbench.reports.measured import fit_claim, measured_claims, replay_claim

    rows = measured_claims()
    assert len(rows) == 3 and all(r["verdict"] in VERDICTS for r in rows)
    # the verdicts are mechanical functions of the numbers
    cells = {"cells": 10, "alpha": 0.05, "invgamma_rejected_support": 0, "accepted_by_family": {}}
    assert fit_claim({"runs": 1, "fig4_centre": {**cells, "invgamma_accepted": 9}})["verdict"] == HOLDS
    assert fit_claim({"runs": 1, "fig4_centre": {**cells, "invgamma_accepted": 8}})["verdict"] == FAILS
    ok = {"instance": {"name": "m", "loss_max": 0.3, "omega": 0.9}, "seeds": {"count": 1000},
          "claim": {"verdict": "holds", "plans": 2, "text": ""}}
    bad = {**ok, "claim": {"verdict": "does not hold", "plans": 1, "text": ""}}
    assert replay_claim([ok])["verdict"] == HOLDS and replay_claim([ok, bad])["verdict"] == FAILS
    # solvers returning the same model sequence replay one plan: counted once
    from deplbench.reports.measured import REPLAY_FILE, REPLAY_TIGHT_FILE, load

    shipped = [load(REPLAY_FILE), load(REPLAY_TIGHT_FILE)]
    proven = [(rp["instance"]["loss_max"], r["sequence"]) for rp in shipped for r in rp["rows"]
              if r.get("model_verdict") == "proven feasible" and "verdict" in r]
    assert replay_claim(shipped)["instances"] == len(set(proven)) < len(proven)


def test_replay_claim_shows_the_targets_as_they_are():
    """ω and ℓmax shown as they are: with six digits (``:g``) ω close to 1 would read "ω = 1" and two ℓmax as one."""
    from deplbench.reports.measured import replay_claim

    rows = [{"instance": {"name": "m", "loss_max": lm, "omega": 0.999999999999}, "seeds": {"count": 1000},
             "claim": {"verdict": "holds", "plans": 1, "text": ""}, "rows": []} for lm in (0.3, 0.30000001)]
    row = replay_claim(rows)
    said = " ".join(str(v) for v in row.values())
    assert "(ω = 0.999999999999)" in said and "ℓmax = 0.3:" in said and "ℓmax = 0.30000001:" in said


# ------------------------------------------------------------- analysis
def test_autocorrelation_finds_planted_dependence_and_not_its_absence():
    from deplbench.measure.analysis import lag_autocorrelation

    rng = np.random.default_rng(0)
    runs, epochs = 300, 30
    run = np.repeat(np.array([f"r{i}" for i in range(runs)]), epochs)
    epoch = np.tile(np.arange(1, epochs + 1), runs)
    iid = rng.normal(size=runs * epochs)
    r = lag_autocorrelation(run, epoch, iid, 1, bootstrap=300)
    assert r["independent"] and abs(r["estimate"]) < 0.03 and r["pairs"] == runs * (epochs - 1)
    ar = np.empty((runs, epochs))
    ar[:, 0] = rng.normal(size=runs)
    for k in range(1, epochs):   # AR(1), ρ = 0.6, stationary
        ar[:, k] = 0.6 * ar[:, k - 1] + np.sqrt(1 - 0.36) * rng.normal(size=runs)
    r = lag_autocorrelation(run, epoch, ar.ravel(), 1, bootstrap=300)
    assert not r["independent"] and r["ci"][0] < 0.6 < r["ci"][1] + 0.02


def test_alternative_fits_recover_their_own_law_and_refuse_outside_support():
    from scipy import stats

    from deplbench.measure.analysis import compare_families, fit_family

    x = stats.invgamma(5.0, scale=4.0).rvs(2000, random_state=np.random.default_rng(1))
    res = compare_families(x)
    assert res["invgamma"]["params"][0] == pytest.approx(5.0, rel=0.1)
    assert res["invgamma"]["p_value"] > 0.05 and res["norm"]["p_value"] < 0.05
    assert res["invgamma"]["aic"] < min(res["gamma"]["aic"], res["norm"]["aic"])
    neg = fit_family(np.array([0.5, 1.0, -0.1, 2.0]), "gamma")
    assert neg["p_value"] == 0.0 and "outside the support" in neg["note"]


# ------------------------------------------------------------------ CLI
def test_cli_measure_refuses_bad_options_in_one_line(tmp_path, capsys):
    from deplbench.cli import main

    assert main(["measure", "replay", "--seeds", "0"]) == 2
    assert main(["measure", "run", "-o", str(tmp_path / "missing" / "l.csv.gz")]) == 2
    assert main(["measure", "replay", "--merge", "-o", str(tmp_path / "none.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert [line.split(":")[0] for line in err] == ["error"] * 3
    assert "--seeds" in err[0] and "does not exist" in err[1] and "--merge" in err[2]


def _same_up_to(a, b, rel: float, path: str = "") -> list[str]:
    """Where two JSON documents differ: keys, lengths, types and text exactly, floats beyond ``rel``."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{path}: keys {sorted(a)} != {sorted(b)}"]
        return [d for k in a for d in _same_up_to(a[k], b[k], rel, f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} != {len(b)} items"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _same_up_to(x, y, rel, f"{path}[{i}]")]
    if isinstance(a, float) and isinstance(b, float):
        return [] if math.isclose(a, b, rel_tol=rel, abs_tol=1e-300) else [f"{path}: {a!r} != {b!r}"]
    return [] if (type(a), a) == (type(b), b) else [f"{path}: {a!r} != {b!r}"]


@pytest.mark.slow
def test_refit_of_the_shipped_logs_gives_the_shipped_instances(tmp_path):
    """The refit is the shipped instance up to the optimisers' stopping points, which the BLAS kernel
    a CPU selects moves (by up to ~5e-4 relative on these logs: a likelihood flat in loc and scale);
    every law, decision and text is the same. A likelihood flat in df gives the cap on every kernel
    (``distfit.FLAT_DF``; the optimiser alone stopped at df 681 on one kernel, 1000 on another)."""
    from deplbench.cli import main
    from deplbench.instances.fit.distfit import MAX_DF

    assert main(["measure", "refit", "-o", str(tmp_path / "fit.json")]) == 0
    for mine, shipped in (("fit.json", FIT_FILE), ("fit-eq8.json", EQ8_FILE)):
        got, want = json.loads((tmp_path / mine).read_text()), json.loads(shipped.read_text())
        assert not _same_up_to(got, want, 2e-3), _same_up_to(got, want, 2e-3)[:5]
        capped = [[sw["params"].get("df") == MAX_DF for sw in doc["provenance"]["fit"]["switches"]]
                  for doc in (got, want)]
        assert capped[0] == capped[1] and any(capped[0])      # the same jumps taken as normal, exactly


def test_analysis_summary_states_each_intervals_level_and_method():
    """The text summary printed the variance ratio's interval bare, though the
    analysis carries its level and method."""
    from deplbench.jsonio import restore_nonfinite
    from deplbench.measure.analysis import format_summary

    summary = restore_nonfinite(json.loads((LOGS_FILE.parent / "digits-mlp-analysis.json").read_text()))
    summary["variance"][0]["level"] = 0.9      # the level printed is the record's, not a constant
    lines = format_summary(summary).splitlines()
    variance = [line for line in lines if line.startswith("final-loss variance ")]
    assert len(variance) == len(summary["variance"]) > 0
    for line, v in zip(variance, summary["variance"]):
        assert f"({100 * v['level']:g}% {v['method']}; {v['runs']} runs)" in line, line
    assert "(90% " in variance[0]
    for key, r in summary["independence"].items():
        line = next(x for x in lines if x.startswith(f"{key}: "))
        assert f"({100 * r['level']:.0f}% {r['method']}, " in line, line


def test_cli_refit_writes_only_the_files_named_and_names_them(tmp_path, capsys, monkeypatch):
    """`measure refit` without -o wrote over the package's shipped fit, and with
    -o fit.json it also wrote fit-eq8.json without saying so."""
    from deplbench.cli import main
    from deplbench.measure import analysis

    written = []

    class Fit:
        models, switches, n_runs = {"a": 0}, {}, 3

    monkeypatch.setattr(analysis, "refit", lambda logs, out, eq8: written.append((out, eq8)) or (None, None, Fit))
    with pytest.raises(SystemExit) as exc:
        main(["measure", "refit"])
    assert exc.value.code == 2 and "-o/--output" in capsys.readouterr().err and not written
    fit = tmp_path / "fit.json"
    assert main(["measure", "refit", "-o", str(fit)]) == 0
    assert written.pop() == (fit, tmp_path / "fit-eq8.json")
    out = capsys.readouterr().out
    assert f"wrote {fit} " in out and f"{tmp_path / 'fit-eq8.json'} " in out, out
    eq8 = tmp_path / "paper.json"
    assert main(["measure", "refit", "-o", str(fit), "--eq8-output", str(eq8)]) == 0
    assert written.pop() == (fit, eq8) and f"{eq8} " in capsys.readouterr().out
    for argv, message in ((["--eq8-output", str(fit)], "--eq8-output"),
                          (["--eq8-output", str(tmp_path / "none" / "e.json")], "does not exist")):
        assert main(["measure", "refit", "-o", str(fit), *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: --eq8-output ") and message in err and err.count("\n") == 1, err
    assert not written


@pytest.mark.parametrize("argv, why", [
    (["refit", "-o", PROVENANCE_FILE], f"is the input {PROVENANCE_FILE};"),
    (["replay", "--solvers", "depl", "-o", EQ8_FILE], f"is the input {EQ8_FILE};"),
    # a folder is no file to write, whatever it holds
    (["replay", "--solvers", "depl", "-o", EQ8_FILE.parent], "cannot write (is a directory)"),
    (["refit", "-o", PROVENANCE_FILE.parent], "cannot write (is a directory)"),
])
def test_cli_measure_output_over_a_read_only_input_names_the_input(monkeypatch, deplbench_cli, argv, why):
    """An installed package's data files are often read-only: `measure replay -o` its measured instance
    said "cannot write (permission denied)", not that the output is the file the replay reads."""
    from deplbench import files
    from deplbench.measure import analysis, replay

    unwritable = files.unwritable
    # what the file system tells a user (root writes a read-only file)
    monkeypatch.setattr(files, "unwritable", lambda path: unwritable(path) or "permission denied")
    monkeypatch.setattr(analysis, "refit", lambda *a: pytest.fail("refitted before the refusal"))
    monkeypatch.setattr(replay, "replay_plans", lambda *a, **k: pytest.fail("replayed before the refusal"))
    status, out, err = deplbench_cli("measure", *argv)
    assert status == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"error: --output {argv[-1]}: {why}"), err


def _fake_fit(monkeypatch):
    """``refit``'s fit replaced by the shipped one (the real fit takes seconds): what is tested is
    where its two instances are written."""
    from types import SimpleNamespace

    import deplbench.instances.fit as fitlib
    from deplbench.instances.model import load_instance

    shipped = load_instance(FIT_FILE)
    sample = SimpleNamespace(improvement=SimpleNamespace(data=np.array([0.8, 1.0, 1.1, 1.3])))
    fit = SimpleNamespace(models={m.name: sample for m in shipped.models}, switches={}, n_runs=4)
    monkeypatch.setattr(fitlib, "fit_instance", lambda *a, **k: (shipped, fit))
    return shipped


def test_cli_refit_to_a_named_pipe_with_a_reader_writes_through_it(tmp_path, capsys, monkeypatch):
    """`measure refit -o PIPE` renamed its file over the pipe: the pipe was gone and its reader
    waited forever. The pipe stays, and its reader gets the fitted instance."""
    import os
    import threading
    import time

    from deplbench.cli import main

    shipped = _fake_fit(monkeypatch)
    pipe = tmp_path / "fit.json"
    os.mkfifo(pipe)
    fd = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)     # the reader is there before the command starts
    got: list[bytes] = []

    def read():                 # until end-of-file after some data: every writer's end closed (20 s at most)
        chunks, deadline = [], time.monotonic() + 20
        try:
            while time.monotonic() < deadline:
                try:
                    chunk = os.read(fd, 1 << 16)
                except BlockingIOError:             # a writer, nothing written yet
                    chunk = None
                if chunk:
                    chunks.append(chunk)
                elif chunk == b"" and chunks:
                    break
                else:
                    time.sleep(0.01)
        finally:
            os.close(fd)
            got.append(b"".join(chunks))
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert main(["measure", "refit", "-o", str(pipe)]) == 0, capsys.readouterr().err
    reader.join(timeout=30)
    assert pipe.is_fifo() and not reader.is_alive()
    assert got == [shipped.to_json().encode("utf-8")]
    assert json.loads((tmp_path / "fit-eq8.json").read_text())["name"] == "measured-digits-mlp-eq8"


def test_cli_refit_to_a_named_pipe_no_one_reads_is_refused_before_the_fit(tmp_path, capsys, monkeypatch):
    """A pipe without a reader would hold the write, after the fit, forever: refused first, one line
    naming the option, as `certify -o` and `generate -o` refuse it."""
    import os

    from deplbench.cli import main
    from deplbench.measure import analysis

    monkeypatch.setattr(analysis, "refit", lambda *a: pytest.fail("refitted before the refusal"))
    pipe = tmp_path / "eq8.json"
    os.mkfifo(pipe)
    for argv, flag in ((["-o", str(pipe)], "--output"),
                       (["-o", str(tmp_path / "fit.json"), "--eq8-output", str(pipe)], "--eq8-output")):
        assert main(["measure", "refit", *argv]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.count("\n") == 1
        assert captured.err.startswith(f"error: {flag} {pipe}: cannot write ("), captured.err
        assert pipe.is_fifo()


@pytest.mark.slow
def test_solvers_run_on_the_measured_family():
    from deplbench.solvers.run import solve

    inst = generate("measured")
    depl = solve(inst, "depl", eval_samples=2000)
    assert depl.status == "feasible" and depl.plan is not None
    assert set(depl.plan.models) <= {"p25", "p50", "p75"}
    assert solve(inst, "best-exp", evaluate=False).status in ("feasible", "no_solution")
    assert solve(generate("measured", law="fit"), "milp-exact").status == "skipped"   # empirical X can be < 0


@pytest.mark.parametrize("argv, message", [
    (["analyse", "--bootstrap", "0"], "--bootstrap: must be in [1, 100000] replicates, got 0"),
    (["analyse", "--bootstrap", "-1"], "--bootstrap: must be in [1, 100000] replicates, got -1"),
    (["analyse", "--bootstrap", "100000001"], "--bootstrap: must be in [1, 100000] replicates"),
    (["replay", "--threads", "0"], "--threads: must be in [1, 256], got 0"),
    (["replay", "--threads", "100000"], "--threads: must be in [1, 256], got 100000"),
    (["replay", "--seeds", "1000000000"], "--seeds: must be in [1, 100000], got 1000000000"),
    (["run", "-o", "logs.csv", "--threads", "100000"], "--threads: must be in [1, 256], got 100000"),
    (["replay", "--solvers", " , "], "--solvers: names no algorithm"),
    (["replay", "--solvers", "depl,nope"], "--solvers: unknown algorithm(s) 'nope'"),
    (["replay", "--solvers", "depl", "--result", "milp=r.json"], "'milp' is not among --solvers (depl)"),
])
def test_cli_measure_refuses_options_no_run_can_use(capsys, argv, message):
    """--bootstrap 0 ended in an IndexError traceback and -1 in numpy's "negative dimensions";
    --solvers '' replayed nothing with exit 0; --threads 0 reached torch; an unused --result was ignored."""
    from deplbench.cli import main

    assert main(["measure", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith("error: ") and message in captured.err, captured.err


@pytest.mark.parametrize("text, message", [
    ("{}", "not a result record of `deplbench solve` (no 'status' or 'plan' key)"),
    ("[]", "expected a result record (a JSON object, as `deplbench solve --json -o FILE` writes), got list"),
    ('{"status": "feasible", "plan": {}}', "plan: missing field 'epochs'"),
])
def test_cli_replay_refuses_what_is_not_a_result_record(tmp_path, capsys, text, message):
    """{} was replayed as a solver of status None with no plan, and a JSON list ended in an
    AttributeError traceback; both are refused before anything is trained."""
    from deplbench.cli import main

    result = tmp_path / "r.json"
    result.write_text(text, encoding="utf-8")
    assert main(["measure", "replay", "--solvers", "depl", "--result", f"depl={result}"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith(f"error: --result depl={result}: {message}"), captured.err


def test_cli_measure_outputs_never_replace_their_inputs(tmp_path, capsys):
    """`measure refit LOGS -o LOGS` would write the fitted instance over the logs, and
    `replay --result depl=R -o R` the replay over the result it reads."""
    from deplbench.cli import main

    logs = tmp_path / "logs.csv"
    logs.write_text("run,epoch,model,loss\n", encoding="utf-8")
    result = tmp_path / "r.json"
    result.write_text("{}", encoding="utf-8")
    for argv in (["refit", str(logs), "-o", str(logs)],
                 ["replay", "--solvers", "depl", "--result", f"depl={result}", "-o", str(result)]):
        assert main(["measure", *argv]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.count("\n") == 1
        assert captured.err.startswith("error: --output ") and "is the input" in captured.err, captured.err
    assert logs.read_text(encoding="utf-8") == "run,epoch,model,loss\n" and result.read_text(encoding="utf-8") == "{}"


@pytest.mark.parametrize("case", ["named-as-output", "folder-of-logs", "folder-of-shipped", "a-file"])
def test_cli_analyse_report_never_replaces_its_logs(tmp_path, monkeypatch, deplbench_cli, case):
    """A --report folder that holds the logs the analysis reads (`measure analyse ma/analysis.json
    --report ma`, whose analysis.json would replace the logs; `--report .` beside the logs; a folder
    holding the shipped logs), or a file as --report, is refused before the analysis, exit 2, one
    line naming --report; the logs are unchanged."""
    from deplbench.measure import analysis

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(analysis, "analyse", lambda *a, **k: pytest.fail("analysed before the refusal"))
    (tmp_path / "ma").mkdir()
    logs = {"named-as-output": "ma/analysis.json", "folder-of-logs": "logs.csv.gz", "a-file": "logs.csv.gz",
            "folder-of-shipped": None}[case]
    report = {"named-as-output": "ma", "folder-of-logs": ".", "a-file": "logs.csv.gz",
              "folder-of-shipped": str(LOGS_FILE.parent.parent)}[case]
    if logs is not None:
        (tmp_path / logs).write_bytes(LOGS_FILE.read_bytes())
    before = LOGS_FILE.read_bytes()
    status, out, err = deplbench_cli("measure", "analyse", *([logs] if logs else []), "--report", report)
    assert status == 2 and out == "" and err.count("\n") == 1, err
    why = "is a file; give a folder" if case == "a-file" else "contains the input"
    assert err.startswith(f"error: --report {report}: {why}"), err
    assert (tmp_path / logs if logs else LOGS_FILE).read_bytes() == before
    assert not (tmp_path / "ma" / "fig4.png").exists() and not (tmp_path / "fig4.png").exists()


def test_cli_refit_and_replay_never_replace_the_shipped_measured_instance(tmp_path, monkeypatch, deplbench_cli):
    """`measure replay -o` the shipped eq. (8) instance or provenance, which the replay plans on,
    and `measure refit -o` the provenance its base is built from, are refused before the refit or
    replay, exit 2, one line naming the input; the shipped files are unchanged."""
    from deplbench.measure import analysis, replay

    monkeypatch.setattr(analysis, "refit", lambda *a: pytest.fail("refitted before the refusal"))
    monkeypatch.setattr(replay, "replay_plans", lambda *a, **k: pytest.fail("replayed before the refusal"))
    before = {p: p.read_bytes() for p in (EQ8_FILE, PROVENANCE_FILE)}
    for argv, shipped in ((["refit", "-o", PROVENANCE_FILE], PROVENANCE_FILE),
                          (["refit", "-o", tmp_path / "f.json", "--eq8-output", PROVENANCE_FILE], PROVENANCE_FILE),
                          (["replay", "--solvers", "depl", "-o", EQ8_FILE], EQ8_FILE),
                          (["replay", "--solvers", "depl", "-o", PROVENANCE_FILE], PROVENANCE_FILE)):
        status, out, err = deplbench_cli("measure", *argv)
        assert status == 2 and out == "" and err.count("\n") == 1, err
        assert f": is the input {shipped};" in err, err
    assert {p: p.read_bytes() for p in before} == before
    assert not any(p.name.endswith(".partial") for p in EQ8_FILE.parent.iterdir())


@pytest.mark.parametrize("where", ["folder", "missing-folder", "under-a-file", "proc"])
def test_cli_replay_output_that_cannot_be_written_is_refused_before_training(tmp_path, monkeypatch,
                                                                            deplbench_cli, where):
    """`replay -o` a folder, a path in a missing folder or under a file, or one that cannot be
    created is refused before anything is planned or trained, naming the path given (not its
    .partial); no .partial file is created anywhere."""
    from deplbench.measure import replay

    monkeypatch.setattr(replay, "replay_plans", lambda *a, **k: pytest.fail("replayed before the refusal"))
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("x", encoding="utf-8")
    target = {"folder": tmp_path / "dir", "missing-folder": tmp_path / "none" / "r.json",
              "under-a-file": tmp_path / "file" / "r.json", "proc": "/proc/deplbench-replay.json"}[where]
    status, out, err = deplbench_cli("measure", "replay", "--solvers", "depl", "--seeds", 2, "-o", target)
    assert status == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"error: --output {target}: cannot write ("), err
    assert ".partial" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir", "file"] and not list((tmp_path / "dir").iterdir())


def test_cli_run_output_folder_is_refused_before_training(tmp_path, monkeypatch, deplbench_cli):
    """`measure run -o DIR` is refused before any training, exit 2, one line: the logs cannot
    be written to a folder."""
    from deplbench.cli import measure as measure_cli

    monkeypatch.setattr(measure_cli, "_need_torch", lambda: pytest.fail("reached the training"))
    status, out, err = deplbench_cli("measure", "run", "--tiny", "-o", tmp_path)
    assert status == 2 and out == "" and err == f"error: --output {tmp_path}: cannot write (is a directory)\n", err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("fails", [False, True])
def test_cli_replay_leaves_no_partial_file(tmp_path, monkeypatch, deplbench_cli, fails):
    """The rows so far go to OUT.partial while the replay runs; it is removed when the replay
    ends, written or failed, so a failure leaves nothing beside the output."""
    from deplbench.cli import measure as measure_cli
    from deplbench.errors import DeplbenchError
    from deplbench.measure import replay
    from deplbench.reports.measured import REPLAY_FILE

    shipped = json.loads(REPLAY_FILE.read_text(encoding="utf-8"))
    out = tmp_path / "replay.json"
    seen = []

    def fake(solvers, *, on_row, **kwargs):
        on_row({**shipped, "rows": shipped["rows"][:1]})
        seen.append(sorted(p.name for p in tmp_path.iterdir()))
        if fails:
            raise DeplbenchError("training failed")
        return shipped

    monkeypatch.setattr(measure_cli, "_need_torch", lambda: None)
    monkeypatch.setattr(replay, "replay_plans", fake)
    status, stdout, err = deplbench_cli("measure", "replay", "--solvers", "depl", "--seeds", 2, "-o", out)
    assert seen == [["replay.json.partial"]]                   # kept while the run goes on
    assert sorted(p.name for p in tmp_path.iterdir()) == ([] if fails else ["replay.json"])
    if fails:
        assert status == 2 and err == "error: training failed\n", err
    else:
        assert status == 0 and json.loads(out.read_text(encoding="utf-8")) == shipped


def test_cli_replay_interrupted_while_writing_out_leaves_out_as_it_was(tmp_path, monkeypatch, deplbench_cli):
    """Ctrl-C while OUT itself is written (--merge: OUT holds earlier rows): OUT is replaced whole or
    not at all, so it stays byte for byte as it was, the rows are in OUT.partial, and no temporary
    file is left beside them."""
    import os

    from deplbench.cli import measure as measure_cli
    from deplbench.instances.fit import output
    from deplbench.measure import replay
    from deplbench.reports.measured import REPLAY_FILE

    shipped = json.loads(REPLAY_FILE.read_text(encoding="utf-8"))
    out = tmp_path / "replay.json"
    before = json.dumps(shipped).encode("utf-8")
    out.write_bytes(before)

    def fake(solvers, *, on_row, **kwargs):
        on_row({**shipped, "rows": shipped["rows"][:1]})
        return {**shipped, "rows": shipped["rows"][:1]}

    real_replace = os.replace

    def replace(src, dst):
        if os.fspath(dst) == os.fspath(out):
            raise KeyboardInterrupt                      # after the new text is written, before it is OUT
        real_replace(src, dst)

    monkeypatch.setattr(measure_cli, "_need_torch", lambda: None)
    monkeypatch.setattr(replay, "replay_plans", fake)
    monkeypatch.setattr(replay, "merge", lambda old, new: old)
    monkeypatch.setattr(output.os, "replace", replace)
    status, stdout, err = deplbench_cli("measure", "replay", "--solvers", "depl", "--seeds",
                                        shipped["seeds"]["count"], "-o", out, "--merge")
    assert status == 130 and stdout == "", err
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["replay.json", "replay.json.partial"]


@needs_torch
@pytest.mark.slow
@pytest.mark.parametrize("merge", [False, True])
def test_cli_replay_interrupted_keeps_the_rows_so_far(tmp_path, monkeypatch, deplbench_cli, merge):
    """Ctrl-C after the first plan is trained: the row kept in OUT.partial (with --merge, beside the rows
    of OUT, so the file can replace it), its path on stderr, exit status 130, OUT untouched."""
    import types

    import deplbench.formulations.evaluation.exact_violation as exact_violation
    from deplbench.measure import replay
    from deplbench.reports.measured import REPLAY_FILE

    shipped = json.loads(REPLAY_FILE.read_text(encoding="utf-8"))
    trained = []

    def train_finals(factors, seeds, **kwargs):          # the per-plan training run
        if trained:
            raise KeyboardInterrupt
        trained.append(len(factors))
        return np.zeros(len(seeds))

    monkeypatch.setattr(replay, "train_finals", train_finals)
    monkeypatch.setattr(exact_violation, "plan_violation_bounds",     # seconds a plan, and not the point here
                        lambda inst, plan: types.SimpleNamespace(p_lo=0.01, p_hi=0.02, verdict="proven feasible"))
    out = tmp_path / "replay.json"
    if merge:
        out.write_text(json.dumps(shipped), encoding="utf-8")
    seeds = shipped["seeds"]["count"] if merge else 3
    status, stdout, err = deplbench_cli("measure", "replay", "--solvers", "depl,one-switch", "--seeds", seeds,
                                        "-o", out, *(["--merge"] if merge else []))
    partial = tmp_path / "replay.json.partial"
    assert status == 130 and stdout == "" and trained, err
    assert err.splitlines()[-1] == (f"interrupted: the 1 row(s) so far are kept in {partial}"
                                    + (f" (with the rows of {out})" if merge else "")), err
    kept = json.loads(partial.read_text(encoding="utf-8"))
    new = [r for r in kept["rows"] if r.get("final_loss_mean") == 0.0]
    assert [r["solver"] for r in new] == ["depl"] and new[0]["epochs"] == trained[0]
    if merge:
        assert json.loads(out.read_text(encoding="utf-8")) == shipped
        assert sorted(r["solver"] for r in kept["rows"]) == sorted(r["solver"] for r in shipped["rows"])
    else:
        assert not out.exists() and kept["rows"] == new
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted({out.name, partial.name} if merge else {partial.name})


def test_cli_replay_refuses_to_overwrite_the_rows_an_interrupted_replay_kept(tmp_path, monkeypatch, deplbench_cli):
    """OUT.partial left by an interrupted replay is refused before anything is trained, naming --output and the
    file: the new run's first row would replace it."""
    from deplbench.measure import replay

    monkeypatch.setattr(replay, "replay_plans", lambda *a, **k: pytest.fail("replayed before the refusal"))
    out = tmp_path / "replay.json"
    partial = tmp_path / "replay.json.partial"
    partial.write_text("{}", encoding="utf-8")
    status, stdout, err = deplbench_cli("measure", "replay", "--solvers", "depl", "--seeds", 2, "-o", out)
    assert status == 2 and stdout == "" and err == (f"error: --output {out}: {partial} holds the rows of an "
                                                   f"interrupted replay; rename it to {out} to keep them (then "
                                                   "--merge the rest of the solvers), or remove it\n"), err
    assert partial.read_text(encoding="utf-8") == "{}"


# --------------------------------------------- logs the analysis cannot measure
def test_autocorrelation_of_a_series_without_spread_is_not_measured():
    """One seed per configuration leaves no noise around the mean curve: r = 0/0. It was
    printed as nan and reported ``independent: false``, a verdict nothing measured."""
    import warnings

    from deplbench.measure.analysis import lag_autocorrelation

    run = np.repeat(np.array(["a", "b"]), 5)
    epoch = np.tile(np.arange(1, 6), 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # no 0/0 RuntimeWarning on stderr either
        r = lag_autocorrelation(run, epoch, np.zeros(10), 1, bootstrap=50)
        assert r["estimate"] is None and r["ci"] == [None, None] and r["independent"] is None
        assert r["note"].startswith("not measurable: the series has no spread") and r["pairs"] == 8
        r = lag_autocorrelation(run, epoch, np.arange(10.0), 7, bootstrap=50)      # no pair 7 epochs apart
        assert r["independent"] is None and "no two non-switch epochs 7 apart" in r["note"]


def test_final_variance_of_a_single_run_is_not_measured():
    """A sample variance needs two runs: with one, the ratio and its interval were nan."""
    import types
    import warnings

    import pandas as pd

    from deplbench.measure.analysis import final_variance

    frame = pd.DataFrame({"run": ["s-full-0"] * 3 + ["s-p50-0"] * 3 + ["s-p50-1"] * 3,
                          "epoch": [0, 1, 2] * 3, "model": ["", "full", "full"] + ["", "p50", "p50"] * 2,
                          "loss": [2.0, 1.5, 1.2, 2.0, 1.6, 1.3, 2.0, 1.7, 1.5]})
    model = types.SimpleNamespace(decay=types.SimpleNamespace(A=0.5, B=0.0),
                                  improvement=types.SimpleNamespace(data=np.array([0.8, 1.0, 1.2])))
    fit = types.SimpleNamespace(models={"full": model, "p50": model})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        full, p50 = final_variance(types.SimpleNamespace(frame=frame), fit)
    assert full["runs"] == 1 and full["ratio"] is None and full["ci"] == [None, None]
    assert full["note"].startswith("not measurable: 1 run(s) with both epoch 0 and epoch 2")
    assert p50["runs"] == 2 and p50["ratio"] == pytest.approx(p50["observed_var"] / p50["predicted_var_independent"])
    assert p50["observed_var"] == pytest.approx(0.02) and "note" not in p50


def test_a_two_stage_run_id_with_a_non_numeric_k1_names_the_run():
    """It ended as "error: invalid literal for int() with base 10: 'x'", naming nothing."""
    import types

    import pandas as pd

    from deplbench.measure.analysis import _cells

    logs = types.SimpleNamespace(frame=pd.DataFrame({"run": ["t-p25-10-p36-0", "t-p25-x-p36-1"]}),
                                 source="logs.csv")
    with pytest.raises(LogError, match=r"^logs.csv: column 'run': two-stage run 't-p25-x-p36-1' has K1 = 'x'"):
        _cells(logs)


@pytest.mark.slow
def test_cli_analyse_of_one_seed_per_configuration_says_what_it_cannot_measure(tmp_path, deplbench_cli):
    import pandas as pd

    frame = pd.read_csv(LOGS_FILE, dtype={"model": str}, keep_default_na=False)
    config = frame["run"].str.rsplit("-", n=1).str[0]
    first = frame.groupby(config)["run"].transform("min")        # one seed of every configuration
    path = tmp_path / "one-seed.csv"
    frame[frame["run"] == first].to_csv(path, index=False)
    status, out, err = deplbench_cli("measure", "analyse", path, "--bootstrap", 50)
    assert status == 0, err
    assert "nan" not in out and "noise_lag1: not measurable: the series has no spread" in out
    assert "final-loss variance full: not measurable: 1 run(s)" in out
    status, out, _ = deplbench_cli("measure", "analyse", path, "--bootstrap", 50, "--json")
    noise = json.loads(out)["independence"]["noise_lag1"]
    assert status == 0 and noise["independent"] is None and noise["estimate"] is None


# ------------------------------------------------ replay: the --result records
def _solve_record(tmp_path, name: str, record) -> str:
    path = tmp_path / name
    path.write_text(record if isinstance(record, str) else json.dumps(record), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("record, message", [
    ([1, 2], "expected a result record (a JSON object, as `deplbench solve --json -o FILE` writes), got list"),
    ({"name": "an instance", "models": []}, "not a result record of `deplbench solve` (no 'status' or 'plan' key)"),
    ({"status": "great", "plan": None}, "status 'great' is not one of optimal, feasible"),
    ({"status": "feasible", "plan": {"epochs": [{"model": "intermediate", "cluster": "A", "allocation": 1.0}],
                                     "datasets": {}}},
     "epochs[0].model: unknown model 'intermediate' (the plan must be for the measured instance"),
    ({"status": "feasible", "plan": {"epochs": [{"model": "p50", "cluster": "A", "allocation": "1"}],
                                     "datasets": {}}}, "invalid plan: epochs[0].allocation"),
    ("{", "cannot read a result record"),
    ({"status": "feasible", "plan": {"epochs": [{"model": "p50", "cluster": "A1", "allocation": 1e-3}] * 3,
                                     "datasets": {"A1": ["d0"]}}},      # the names fit, Tmax does not
     "the plan breaks constraints (4)-(6) of the measured instance 'measured-digits-mlp': time: total"),
])
def test_cli_replay_refuses_a_result_record_before_training(tmp_path, deplbench_cli, record, message):
    """A JSON list ended in an AttributeError traceback; an instance file (no status, no plan)
    was replayed as a row of status None; a plan solved on another measured instance (same names,
    another Tmax) was replayed as a plan of this one. Refused before anything is trained (no torch
    needed)."""
    path = _solve_record(tmp_path, "r.json", record)
    status, out, err = deplbench_cli("measure", "replay", "--solvers", "depl", "--result", f"depl={path}",
                                     "--seeds", 1)
    assert status == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"error: --result depl={path}: ") and message in err, err


@pytest.mark.parametrize("target, argv, message", [
    ("{}", ["--seeds", "1000"], "is not a replay written by `deplbench measure replay -o`"),   # KeyError traceback
    ("shipped", ["--seeds", "2"], "replays seeds {'first': 1000000, 'count': 1000}, this run "
                                  "{'first': 1000000, 'count': 2} (give the same --seeds)"),
    ("shipped", ["--seeds", "1000", "--loss-max", "0.25"], "replays instance {'name': 'measured-digits-mlp', "
                                                           "'loss_max': 0.3"),
])
def test_cli_replay_merge_target_is_checked_before_training(tmp_path, deplbench_cli, target, argv, message):
    """A --merge target that is not a replay, or one of other seeds or another ℓmax, failed only
    after every plan was trained (a KeyError traceback, or "the replays differ"), the new rows lost."""
    from deplbench.reports.measured import REPLAY_FILE

    out = tmp_path / "replay.json"
    out.write_text(REPLAY_FILE.read_text() if target == "shipped" else target, encoding="utf-8")
    status, stdout, err = deplbench_cli("measure", "replay", "--solvers", "depl", "--merge", "-o", out, *argv)
    assert status == 2 and stdout == "" and err.count("\n") == 1, err
    assert err.startswith("error: --merge: ") and message in err, err


def test_the_independence_claim_of_an_unmeasurable_analysis_is_not_measured():
    from deplbench.reports.claims_common import UNMEASURED
    from deplbench.reports.measured import independence_claim

    noise = {"lag": 1, "estimate": None, "ci": [None, None], "level": 0.95, "method": "m", "pairs": 8,
             "runs": 2, "independent": None, "note": "not measurable: the series has no spread"}
    row = independence_claim({"independence": {"noise_lag1": noise}})
    assert row["verdict"] == UNMEASURED and "no spread" in row["measured"]


def test_cli_refit_of_other_logs_needs_an_output(tmp_path, deplbench_cli):
    """Without -o, `measure refit LOGS` wrote its fit over the package's shipped measured
    instances (what `generate measured` reads), whatever logs it was given."""
    before = (FIT_FILE.read_bytes(), EQ8_FILE.read_bytes())
    logs = tmp_path / "mine.csv"
    logs.write_text("run,epoch,model,loss\n", encoding="utf-8")
    status, out, err = deplbench_cli("measure", "refit", logs)
    assert status == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("error: deplbench measure refit: ") and "-o/--output" in err, err
    assert (FIT_FILE.read_bytes(), EQ8_FILE.read_bytes()) == before
