"""Tests of ``deplbench fit`` (instances/fit.py, cli/fit.py).

Logs are simulated with numpy directly from known loss-model parameters
(eq. (8) and l_sw, DepL Sec. VI-A), independently of the fitter's code, and
fitted back.

Identifiability: with X fixed to 1 in the least-squares step (the paper's
step (i)), the fit recovers the product A·E[X] and the multipliers X/E[X];
so the inverse-gamma shape is recovered as is and its scale as b/E[X].
"""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from deplbench.errors import DeplbenchError
from deplbench.instances import fit as F
from deplbench.instances.distributions import InverseGamma
from deplbench.instances.model import load_instance, parse_instance

# The known instance the logs are drawn from. Multipliers follow Table I
# (AlexNet fast-unsteady / slow-steady moments); A, B, the jump are ours.
L0 = 10.0
NAMES = ["big", "small"]
TRUE_INSTANCE = parse_instance({
    "name": "truth", "initial_loss": L0, "loss_max": 4.0, "omega": 0.9, "time_max": 60.0, "horizon": 30,
    "models": [
        {"name": "big", "size": 1.0, "compute": 2.0, "loss_scale": 3.0, "loss_offset": 2.0,
         "improvement": InverseGamma.from_moments(1.02, 0.031).model_dump()},
        {"name": "small", "size": 0.5, "compute": 1.0, "loss_scale": 2.0, "loss_offset": 5.0,
         "improvement": InverseGamma.from_moments(0.98, 0.007).model_dump()},
    ],
    "switches": [{"from_model": "big", "to_model": "small",
                  "jump": {"kind": "student_t", "df": 6.0, "loc": 0.4, "scale": 0.08}}],
    "clusters": [{"name": "A", "capacity": 100.0, "unit_cost": 1.0, "bandwidth": 10.0}],
    "datasets": [{"name": "d0", "size": 1.0, "usefulness": 1.0}],
})
TRUE = {m.name: {"A": m.loss_scale, "B": m.loss_offset, "X": m.improvement} for m in TRUE_INSTANCE.models}
JUMP = TRUE_INSTANCE.switches[0].jump


def simulate(inst=TRUE_INSTANCE, seed: int = 0, n_runs: int = 600, epochs: int = 30, pair=("big", "small"),
             lognormal_sigma: float | None = None) -> pd.DataFrame:
    """Long-format logs drawn with numpy from ``inst``'s parameters (γ = 1):
    a third of the runs train only ``pair[0]``, a third only ``pair[1]``, a
    third ``pair[0]`` for K1 ∈ [3, 20] epochs then switch to ``pair[1]``.
    ``lognormal_sigma`` replaces every X by a mean-1 lognormal (wrong family)."""
    rng = np.random.default_rng(seed)
    models = [inst.models[inst.model_index[n]] for n in pair]
    kind = np.arange(n_runs) % 3
    k1 = rng.integers(3, 21, n_runs)
    k = np.arange(1, epochs + 1)
    m = np.where(kind[:, None] == 0, 0, np.where(kind[:, None] == 1, 1, (k[None, :] > k1[:, None]).astype(int)))
    x = np.empty(m.shape)
    for i, mv in enumerate(models):
        mask = m == i
        if lognormal_sigma is None:
            X = mv.improvement  # inverse-gamma: X = b / Gamma(a, 1)
            x[mask] = X.scale / rng.standard_gamma(X.shape, mask.sum())
        else:
            x[mask] = rng.lognormal(-lognormal_sigma**2 / 2, lognormal_sigma, mask.sum())
    a = np.array([mv.loss_scale for mv in models])[m]
    b = np.array([mv.loss_offset for mv in models])[m]
    delta = -a / np.sqrt(k[None, :] + b) * x
    switch = np.zeros(m.shape, dtype=bool)
    switch[:, 1:] = m[:, 1:] != m[:, :-1]
    jump = next(sw.jump for sw in inst.switches if (sw.from_model, sw.to_model) == tuple(pair))
    delta[switch] += jump.loc + jump.scale * rng.standard_t(jump.df, switch.sum())
    l0 = inst.initial_loss
    loss = l0 + np.cumsum(delta, axis=1)
    runs = np.repeat([f"run{r}" for r in range(n_runs)], epochs + 1)
    ep = np.tile(np.arange(epochs + 1), n_runs)
    model = np.concatenate([np.full((n_runs, 1), ""), np.array(pair)[m]], axis=1).ravel()
    lossc = np.concatenate([np.full((n_runs, 1), l0), loss], axis=1).ravel()
    return pd.DataFrame({"run": runs, "epoch": ep, "model": model, "loss": lossc})


def base_dict(horizon: int = 12, loss_max: float = 4.0) -> dict:
    point = {"kind": "point", "value": 1.0}
    return {
        "name": "toy", "initial_loss": L0, "loss_max": loss_max, "omega": 0.9, "time_max": 60.0,
        "horizon": horizon,
        "models": [
            {"name": "big", "size": 1.0, "compute": 2.0, "loss_scale": 1.0, "improvement": point},
            {"name": "small", "size": 0.5, "compute": 1.0, "loss_scale": 1.0, "improvement": point},
            {"name": "unused", "size": 0.2, "compute": 0.5, "loss_scale": 1.0, "improvement": point},
        ],
        "switches": [
            {"from_model": "big", "to_model": "small", "jump": {"kind": "point", "value": 0.1}},
            {"from_model": "small", "to_model": "big", "jump": {"kind": "point", "value": 0.2}},
            {"from_model": "big", "to_model": "unused", "jump": {"kind": "point", "value": 0.3}},
        ],
        "clusters": [{"name": "A", "capacity": 100.0, "unit_cost": 1.0, "bandwidth": 10.0},
                     {"name": "B", "capacity": 50.0, "unit_cost": 1.2, "bandwidth": 10.0}],
        "datasets": [{"name": "d0", "size": 1.0, "usefulness": 1.0}],
    }


@pytest.fixture(scope="module")
def good_logs() -> pd.DataFrame:
    return simulate(seed=7)


@pytest.fixture(scope="module")
def good_fit(good_logs) -> F.FitResult:
    return F.fit_logs(F.Logs(F.validate_logs(good_logs)))


# ------------------------------------------------------------ recovery
@pytest.mark.slow
def test_decay_parameters_recovered(good_fit):
    """A_m·E[X_m] within 2 % and B_m within 10 % (and within 4 standard errors)."""
    for name in NAMES:
        d = good_fit.models[name].decay
        a_true = TRUE[name]["A"] * TRUE[name]["X"].mean()
        assert abs(d.A - a_true) / a_true < 0.02, (name, d.A, a_true)
        assert abs(d.B - TRUE[name]["B"]) / TRUE[name]["B"] < 0.10, (name, d.B)
        assert abs(d.A - a_true) < 4 * d.A_se and abs(d.B - TRUE[name]["B"]) < 4 * d.B_se


@pytest.mark.slow
def test_inverse_gamma_recovered_and_not_rejected(good_fit):
    """Shape within 10 %, scale/E[X]-normalised within 10 %; KS keeps the true family."""
    for name in NAMES:
        imp = good_fit.models[name].improvement
        X = TRUE[name]["X"]
        assert imp.accepted and imp.chosen.kind == "inverse_gamma"
        assert imp.p_value >= 0.05
        assert abs(imp.params["shape"] - X.shape) / X.shape < 0.10, (name, imp.params, X)
        assert abs(imp.params["scale"] - X.scale / X.mean()) / (X.scale / X.mean()) < 0.10
        # the normalised multipliers have mean ≈ 1 (A absorbed E[X])
        assert abs(imp.chosen.mean() - 1.0) < 0.01


def test_switch_jump_recovered(good_fit):
    """One observed pair (big → small) with ~200 switches: Student's t kept,
    loc within 0.03 and scale within 30 % although each switch epoch also
    carries a run-noise term of comparable size (deconvolved)."""
    assert list(good_fit.switches) == [("big", "small")]
    sw = good_fit.switches[("big", "small")]
    assert sw.n == 200
    assert sw.accepted and sw.chosen.kind == "student_t" and sw.p_value >= 0.05
    assert abs(sw.params["loc"] - JUMP.loc) < 0.03
    assert abs(sw.params["scale"] - JUMP.scale) / JUMP.scale < 0.30
    assert sw.params["df"] > 2


@pytest.mark.slow
def test_wrong_family_gives_low_p_values():
    """Lognormal multipliers (σ = 0.8): KS rejects the inverse-gamma for both
    models and the instance keeps the empirical sample instead."""
    fit = F.fit_logs(F.Logs(F.validate_logs(simulate(seed=3, lognormal_sigma=0.8))), max_empirical=500)
    for name in NAMES:
        imp = fit.models[name].improvement
        assert imp.p_value < 1e-3, (name, imp.p_value)
        assert not imp.accepted and imp.chosen.kind == "empirical"
        assert len(imp.chosen.samples) == 500
        # the compressed sample keeps the quantiles of the multipliers
        assert abs(np.median(imp.chosen.samples) - np.median(imp.data)) < 0.02


def test_inverse_gamma_mle_matches_scipy():
    rng = np.random.default_rng(0)
    x = stats.invgamma(7.0, scale=5.0).rvs(4000, random_state=rng)
    a, b = F.fit_inverse_gamma(x)
    a_ref, _, b_ref = stats.invgamma.fit(x, floc=0)
    assert abs(a - a_ref) / a_ref < 1e-3 and abs(b - b_ref) / b_ref < 1e-3
    ll = stats.invgamma(a, scale=b).logpdf(x).sum()
    assert ll >= stats.invgamma(a * 1.01, scale=b).logpdf(x).sum()
    assert ll >= stats.invgamma(a, scale=b * 0.99).logpdf(x).sum()


def test_ks_bootstrap_pvalues():
    rng = np.random.default_rng(1)
    good = InverseGamma(shape=30.0, scale=29.0).sample(rng, 400)
    bad = rng.lognormal(0.0, 0.8, 400)
    p_good = F.fit_improvement(good, ks_bootstrap=49, rng=np.random.default_rng(2)).p_value
    p_bad = F.fit_improvement(bad, ks_bootstrap=49, rng=np.random.default_rng(2)).p_value
    assert p_bad == pytest.approx(1 / 50)  # no replicate is as extreme
    assert p_good > 0.05


# ------------------------------------------------------ instance + CLI
@pytest.mark.integration
def test_cli_fit_writes_valid_instance_and_report(tmp_path, good_logs, deplbench_cli):
    logs = tmp_path / "logs.csv"
    good_logs.to_csv(logs, index=False)
    base = tmp_path / "base.json"
    base.write_text(json.dumps(base_dict()))
    out, rep = tmp_path / "fitted.json", tmp_path / "report"
    r = deplbench_cli.process("fit", logs, "--base", base, "-o", out, "--report", rep)
    assert r.returncode == 0, r.stderr
    inst = load_instance(out)
    assert [m.name for m in inst.models] == ["big", "small"]  # 'unused' has no logs: dropped
    big = inst.models[0]
    assert big.decay == "inv_sqrt" and big.improvement.kind == "inverse_gamma"
    assert big.size == 1.0 and big.compute == 2.0  # from the base
    pairs = {(s.from_model, s.to_model): s.jump.kind for s in inst.switches}
    assert pairs == {("big", "small"): "student_t", ("small", "big"): "point"}  # unobserved: kept from base
    assert inst.initial_loss == pytest.approx(L0) and inst.loss_max == 4.0
    prov = inst.provenance
    assert prov.generator == "fit"
    assert prov.parameters["logs_sha256"] == hashlib.sha256(logs.read_bytes()).hexdigest()
    diag = prov.model_extra["fit"]
    assert diag["models"]["big"]["improvement"]["p_value"] >= 0.05
    assert diag["base_models_dropped"] == ["unused"]
    pngs = sorted(p.name for p in rep.glob("*.png"))
    assert pngs == ["model-big.png", "model-small.png", "pvalues.png", "switch-big--small.png"]
    assert all((rep / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    assert json.loads((rep / "fit-report.json").read_text())["runs"] == 600
    v = deplbench_cli.process("validate", out)
    assert v.returncode == 0, v.stdout + v.stderr


@pytest.mark.integration
def test_cli_bad_input_no_traceback_and_output_untouched(tmp_path, good_logs, deplbench_cli):
    bad = good_logs.copy()
    bad["loss"] = bad["loss"].astype(object)
    bad.loc[45, "loss"] = "oops"
    logs = tmp_path / "bad.csv"
    bad.to_csv(logs, index=False)
    base = tmp_path / "base.json"
    base.write_text(json.dumps(base_dict()))
    out = tmp_path / "out.json"
    out.write_text("previous contents")
    r = deplbench_cli.process("fit", logs, "--base", base, "-o", out, "--report", tmp_path / "rep")
    assert r.returncode != 0
    assert "Traceback" not in r.stderr and r.stderr.startswith("error:")
    assert "'loss'" in r.stderr and "line 47" in r.stderr and "oops" in r.stderr
    assert out.read_text() == "previous contents"
    assert not (tmp_path / "rep").exists()
    assert not list(tmp_path.glob(".out.json.*"))


@pytest.mark.integration
@pytest.mark.parametrize("name", ["", "   "])
def test_cli_fit_refuses_a_blank_name(tmp_path, good_logs, deplbench_cli, name):
    """A blank --name is refused: the user asked for a name, and a blank one labels nothing."""
    logs = tmp_path / "logs.csv"
    good_logs.to_csv(logs, index=False)
    r = deplbench_cli.process("fit", logs, "-o", tmp_path / "out.json", "--name", name)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("error: --name: must not be blank") and not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "1e400"])
def test_cli_fit_refuses_a_loss_max_that_is_not_finite(tmp_path, good_logs, deplbench_cli, value):
    """A non-finite --loss-max is no loss target: refused as such, not as "not below the initial loss"."""
    logs = tmp_path / "logs.csv"
    good_logs.to_csv(logs, index=False)
    status, out, err = deplbench_cli("fit", logs, "-o", tmp_path / "out.json", f"--loss-max={value}")
    assert status == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith("error: --loss-max: must be a finite number, got "), err
    assert not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("option, value, reason", [
    ("--alpha", "2", "must be in (0, 1)"), ("--data-gamma", "-1", "must be a positive finite number"),
    ("--max-empirical", "0", "must be an integer >= 1"), ("--ks-bootstrap", "-1", "must be an integer in [0, "),
    ("--seed", "-1", "must be a non-negative integer"),
])
def test_cli_fit_names_the_option_it_refuses(tmp_path, good_logs, deplbench_cli, option, value, reason):
    """The library names its argument (``alpha: ...``); the command names the option as typed."""
    logs = tmp_path / "logs.csv"
    good_logs.to_csv(logs, index=False)
    status, out, err = deplbench_cli("fit", logs, "-o", tmp_path / "out.json", option, value)
    assert status == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"error: {option} {value}: {reason}"), err
    assert not (tmp_path / "out.json").exists()


def test_a_loss_max_that_is_not_finite_is_no_target(good_fit):
    for value in (math.nan, math.inf, -math.inf):
        with pytest.raises(DeplbenchError, match=r"^loss_max: must be a finite number, got "):
            F.build_instance(good_fit, parse_instance(base_dict()), loss_max=value)


@pytest.mark.parametrize("algo", ["depl", "milp"])
def test_fitted_instance_solves(good_fit, algo):
    """A fitted instance is solvable by the registry's DepL and MILP, and the
    plan is judged feasible out of sample."""
    from deplbench.solvers.registry import get_solver
    from deplbench.solvers.run import solve

    inst = F.build_instance(good_fit, parse_instance(base_dict(horizon=8, loss_max=5.0)))
    cls = get_solver(algo)
    params = {k: v for k, v in {"scenarios": 200, "time_limit": 600.0}.items() if k in cls.parameters}
    res = solve(inst, algo, eval_samples=5000, **params)
    assert res.status in ("optimal", "feasible"), (algo, res.status, res.message)
    assert res.plan is not None and 1 <= len(res.plan.epochs) <= 8
    assert res.evaluation is not None and res.evaluation["verdict"] == "feasible"


# ------------------------------------------------------------ bad input
def _err(frame: pd.DataFrame, **kw) -> str:
    with pytest.raises(DeplbenchError) as info:
        F.fit_logs(F.Logs(F.validate_logs(frame)), **kw)
    return str(info.value)


@pytest.fixture(scope="module")
def small_logs() -> pd.DataFrame:
    return simulate(seed=11, n_runs=6, epochs=10)


def test_missing_column(small_logs):
    msg = _err(small_logs.drop(columns="model"))
    assert "missing column" in msg and "'model'" in msg


def test_non_numeric_and_nan_loss(small_logs):
    bad = small_logs.astype(str)
    bad.loc[3, "loss"] = "abc"
    msg = _err(bad)
    assert "'loss'" in msg and "'abc'" in msg and "line 5" in msg
    bad = small_logs.copy()
    bad.loc[4, "loss"] = np.nan
    msg = _err(bad)
    assert "'loss'" in msg and "line 6" in msg
    bad = small_logs.astype(str)
    bad.loc[4, "loss"] = ""
    assert "missing value" in _err(bad)
    bad.loc[4, "loss"] = "inf"
    assert "non-finite" in _err(bad)


def test_bad_epochs(small_logs):
    bad = small_logs.copy()
    bad.loc[5, "epoch"] = 4  # duplicate of row 4
    assert "twice" in _err(bad)
    bad = small_logs.drop(index=5)
    assert "jumps from epoch 4 to 6" in _err(bad)
    bad = small_logs.astype(str)
    bad.loc[2, "epoch"] = "1.5"
    assert "'epoch'" in _err(bad)
    bad = small_logs.copy()
    bad.loc[3, "model"] = ""
    assert "'model'" in _err(bad)


def test_single_run(small_logs):
    msg = _err(small_logs[small_logs["run"] == "run0"])
    assert "only one run" in msg and "'run'" in msg


def test_model_with_too_few_epochs(small_logs):
    # 'small' appears only at epochs 1-2 of a short run: one usable epoch.
    extra = pd.DataFrame({"run": ["x", "x", "x", "y", "y", "y"], "epoch": [0, 1, 2, 0, 1, 2],
                          "model": ["", "tiny", "tiny", "", "tiny", "tiny"], "loss": [10, 9, 8.5, 10, 9.1, 8.4]})
    msg = _err(pd.concat([small_logs, extra], ignore_index=True))
    assert "model 'tiny'" in msg and "distinct epoch" in msg


def test_loss_not_decreasing(small_logs):
    bad = small_logs.copy()
    bad["loss"] = 2 * L0 - bad["loss"]  # mirror: loss rises
    msg = _err(bad)
    assert "does not decrease" in msg and "model 'big'" in msg


def test_unknown_model_and_bad_target(good_fit):
    base = base_dict()
    base["models"] = [m for m in base["models"] if m["name"] != "small"]
    base["switches"] = [s for s in base["switches"] if "small" not in (s["from_model"], s["to_model"])]
    with pytest.raises(DeplbenchError, match="'small' not in the base"):
        F.build_instance(good_fit, parse_instance(base))
    with pytest.raises(DeplbenchError, match="loss_max"):
        F.build_instance(good_fit, parse_instance(base_dict()), loss_max=L0 + 1)
    with pytest.raises(DeplbenchError, match="data_gamma"):
        F.build_instance(good_fit, parse_instance(base_dict()), data_gamma=0.0)


def test_data_gamma_rescales_loss_scale(good_fit):
    base = parse_instance(base_dict())
    one = F.build_instance(good_fit, base)
    two = F.build_instance(good_fit, base, data_gamma=2.0)
    assert two.models[0].loss_scale == pytest.approx(one.models[0].loss_scale / 2)
    assert one.models[0].loss_scale == pytest.approx(good_fit.models["big"].decay.A)


def test_heavy_tailed_fit_falls_back_to_empirical():
    """An inverse-gamma with shape <= 2 has an infinite variance: even when
    KS accepts it, the instance keeps the empirical sample."""
    x = InverseGamma(shape=1.6, scale=0.6).sample(np.random.default_rng(4), 2000)
    imp = F.fit_improvement(x)
    assert imp.p_value >= 0.05 and imp.params["shape"] < 2
    assert imp.chosen.kind == "empirical" and "infinite variance" in imp.reason


@pytest.mark.slow
def test_family_default_base_round_trip(tmp_path):
    """Without --base the realistic family supplies everything but the loss
    model: logs drawn from the AlexNet family instance are fitted back onto it."""
    from deplbench.instances.generators import generate

    fam = generate("realistic", family="alexnet")
    logs = tmp_path / "alexnet.csv"
    simulate(fam, seed=5, n_runs=300, pair=("fast-unsteady", "intermediate")).to_csv(logs, index=False)
    inst, fit = F.fit_instance(logs, family="alexnet")
    assert [m.name for m in inst.models] == ["fast-unsteady", "intermediate"]
    assert inst.clusters == fam.clusters and inst.datasets == fam.datasets and inst.loss_max == fam.loss_max
    for m in inst.models:
        true = fam.models[fam.model_index[m.name]]
        target = true.loss_scale * true.improvement.mean()
        assert abs(m.loss_scale - target) / target < 0.03, (m.name, m.loss_scale, target)
        assert fit.models[m.name].improvement.p_value >= 0.05
    kinds = {(s.from_model, s.to_model): s.jump.kind for s in inst.switches}
    assert kinds == {("fast-unsteady", "intermediate"): "student_t"}
    assert inst.provenance.parameters["base"] == "realistic family 'alexnet'"


def test_negative_seed_is_named(small_logs):
    # numpy's own "expected non-negative integer" named no field.
    with pytest.raises(DeplbenchError, match="seed"):
        F.fit_logs(F.Logs(F.validate_logs(small_logs)), seed=-1)


@pytest.mark.integration
def test_instance_layer_never_imports_matplotlib():
    # Plotting lives in reports/ (reports.fit_plots draws the fit report);
    # the bottom layer must load without it.
    code = ("import sys\n"
            "import deplbench.instances.fit, deplbench.instances.generators, deplbench.instances.model\n"
            "from deplbench.instances import fit\n"
            "assert hasattr(fit, 'fit_logs') and not hasattr(fit, 'write_report')\n"
            "print('matplotlib' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


@pytest.mark.parametrize("scale", [1e-310, 1e300])
def test_loss_changes_beyond_float_range_name_the_field(scale):
    """Loss changes whose squares under/overflow: a LogError naming the loss column and
    the model, not scipy's "Initial guess is outside of provided bounds" (no field)."""
    import numpy as np

    from deplbench.instances.fit.decay import fit_decay
    from deplbench.instances.fit.logs import LogError

    k = np.repeat(np.arange(1, 11), 3).astype(float)
    d = -scale * (1 + 0.1 * np.random.default_rng(0).random(k.size)) / np.sqrt(k)
    with pytest.raises(LogError, match=r"^loss: model 'm' .* rescale the log's loss column$"):
        fit_decay(k, d, "m")


@pytest.mark.parametrize("first", [1, 3])
def test_rows_with_a_trailing_comma_are_refused_naming_the_line(tmp_path, first):
    """Every row one field longer than the header: pandas takes the run column as the index, and
    unchecked, the model name would be refused as an epoch ("column 'epoch': non-numeric value")."""
    from deplbench.instances.fit.logs import LogError, read_logs

    rows = ["r0,0,,21.0", "r0,1,a,19.5", "r0,2,a,18.0", "r1,0,,21.0", "r1,1,a,19.6"]
    text = "run,epoch,model,loss\n" + "".join(r + ("," if i >= first - 1 else "") + "\n" for i, r in enumerate(rows))
    path = tmp_path / "log.csv"
    path.write_text(text)
    if first > 1:           # a ragged file: pandas' own message, naming the line
        with pytest.raises(LogError, match="Expected 4 fields in line 4, saw 5"):
            read_logs(path)
        return
    with pytest.raises(LogError) as info:
        read_logs(path)
    assert str(info.value) == f"{path}: line 2: more fields than the 4 the header names (a trailing comma?)"


def test_a_ragged_text_file_is_refused_on_one_line(tmp_path, deplbench_cli):
    # pandas' tokenizer message ends with a newline: the error stays one line
    from deplbench.instances.fit.logs import read_logs

    path = tmp_path / "notes.txt"
    path.write_text("a,b\n1,2\n1,2,3,4,5\n")
    with pytest.raises(DeplbenchError) as info:
        read_logs(path)
    assert "\n" not in str(info.value)
    assert str(info.value).endswith("not a valid CSV file (Error tokenizing data. C error: Expected 2 fields "
                                    "in line 3, saw 5)")
    status, out, err = deplbench_cli("fit", path, "--family", "alexnet", "-o", tmp_path / "f.json")
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and err.endswith("saw 5)\n")
    assert not (tmp_path / "f.json").exists()


@pytest.mark.parametrize("header, named, columns", [
    ("run,epoch,model,loss,loss", "loss", "4 and 5"),       # pandas kept the first and renamed the other
    ("run,epoch,model,loss,loss ", "loss", "4 and 5"),      # equal up to a space: a TypeError traceback
    ("run,epoch,epoch,model,loss", "epoch", "2 and 3"),
])
def test_a_required_column_named_twice_is_refused(tmp_path, small_logs, deplbench_cli, header, named, columns):
    from deplbench.instances.fit.logs import LogError, read_logs

    rows = small_logs.astype(str)[["run", "epoch", "model", "loss"]].to_dict("records")
    body = "\n".join(",".join(r[name.strip()] for name in header.split(",")) for r in rows)
    path = tmp_path / "twice.csv"
    path.write_text(header + "\n" + body + "\n", encoding="utf-8")
    with pytest.raises(LogError, match=rf"column '{named}': named twice in the header \(columns {columns}\)"):
        read_logs(path)
    status, out, err = deplbench_cli("fit", path, "--family", "alexnet", "-o", tmp_path / "f.json")
    assert status == 2 and out == "" and err.count("\n") == 1 and f"column '{named}': named twice" in err
    # a repeated column that is not one of the four is only ignored, as every extra column
    path.write_text("run,epoch,model,loss,note,note\n" + "\n".join(",".join([*r.values(), "a", "b"]) for r in rows)
                    + "\n", encoding="utf-8")
    assert len(read_logs(path).frame) == len(small_logs)


@pytest.mark.parametrize("family", ["alexnet", "mobilenet"])
def test_fit_base_and_family_together_are_refused_whatever_the_family(tmp_path, deplbench_cli, family):
    """`--base X --family alexnet` passed argparse's exclusive group (the value was its default)
    and --family was silently ignored; `--family mobilenet` was already refused."""
    base = tmp_path / "b.json"
    base.write_text("{}", encoding="utf-8")
    status, out, err = deplbench_cli("fit", tmp_path / "log.csv", "--base", base, "--family", family,
                                     "-o", tmp_path / "f.json")
    assert status == 2 and out == ""
    assert "argument --family: not allowed with argument --base" in err and err.count("\n") == 1, err


def test_a_switch_jump_with_a_flat_likelihood_in_df_is_given_the_cap(monkeypatch):
    """Where the likelihood at the cap is within FLAT_DF nats of the optimum's, the fit reports the cap
    (not wherever the optimiser stopped in the flat part, which the CPU's BLAS kernel decided), in any
    unit of loss; heavy tails keep their small df."""
    from deplbench.instances.distributions import InverseGamma
    from deplbench.instances.fit import distfit

    rng = np.random.default_rng(5)
    x = InverseGamma(shape=50.0, scale=49.0)
    c = np.full(300, 0.01)
    run = c * x.ppf(rng.random(300))
    normal = rng.normal(0.1, 0.02, 300) - run
    heavy = 0.1 + 0.02 * rng.standard_t(3.0, 300) - run
    assert distfit.FLAT_DF == 0.01
    for k in (1.0, 1e3, 1e-3):                                 # the gap is in nats: no unit moves it
        assert distfit.fit_switch(k * normal, k * c, x).params["df"] == distfit.MAX_DF
    assert distfit.fit_switch(heavy, c, x).params["df"] < 10.0   # a real gain is kept
    monkeypatch.setattr(distfit, "FLAT_DF", 0.0)
    free = distfit.fit_switch(normal, c, x).params["df"]
    assert 2.1 < free < distfit.MAX_DF                       # without the rule: an interior df of this sample


def test_an_atomic_write_to_a_named_pipe_writes_through_it_or_refuses_it(tmp_path):
    """A file renamed over a named pipe replaced the pipe (its reader never got the data): the pipe is
    written to; one no one reads is refused at once, not waited on, and stays a pipe."""
    import os
    import re

    pipe = tmp_path / "out.json"
    os.mkfifo(pipe)
    with pytest.raises(F.LogError, match=rf"^{re.escape(str(pipe))}: cannot write \("):
        F.write_bytes_atomic(pipe, b"{}")
    reader = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)       # a reader, there before the write
    try:
        F.write_bytes_atomic(pipe, b"x" * 4096)              # within the pipe's buffer: no wait
        assert os.read(reader, 1 << 16) == b"x" * 4096 and os.read(reader, 1) == b""
    finally:
        os.close(reader)
    assert pipe.is_fifo() and [p.name for p in tmp_path.iterdir()] == [pipe.name]
