"""The binary64 line drawn at validation (deplbench.instances.magnitudes).

Each refused case, if accepted, would crash a solver or the evaluation
(``OverflowError``, ``ZeroDivisionError``, ``IndexError``) or give a cost
with a hard-constraint violation; ``parse_instance`` refuses it with one
message naming the field. The accepted cases pin the line where the solvers
still compute.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import weakref

import pytest
from scipy import stats

from deplbench.errors import InstanceError
from deplbench.instances.distributions import InverseGamma, LogNormal, Normal, StudentT
from deplbench.instances.generators import generate
from deplbench.instances.magnitudes import MAX_TIME_MAX, MIN_OMEGA, TAIL, law_tails
from deplbench.instances.model import instance_schema, parse_instance


@pytest.fixture(scope="module")
def base() -> dict:
    return json.loads(generate("scaling", horizon=6).to_json())


def _mutate(base: dict, change) -> dict:
    data = json.loads(json.dumps(base))
    change(data)
    return data


def _imp(law):
    return lambda d: d["models"][0].update(improvement=law)


REFUSED = {
    "jump mean -1e20": (lambda d: d["switches"][0].update(jump={"kind": "normal", "mean": -1e20, "std": 1}),
                        "switches[0].jump: "),
    "lognormal mu 1000": (_imp({"kind": "lognormal", "mu": 1000, "sigma": 1}), "models[0].improvement: "),
    "normal std 1e308": (_imp({"kind": "normal", "mean": 1, "std": 1e308}), "models[0].improvement: "),
    "inverse-gamma shape 1e-320": (_imp({"kind": "inverse_gamma", "shape": 1e-320, "scale": 1}),
                                   "models[0].improvement.shape: "),
    "inverse-gamma shape 0.5": (_imp({"kind": "inverse_gamma", "shape": 0.5, "scale": 1}),
                                "models[0].improvement: "),
    "empirical 1e308": (_imp({"kind": "empirical", "samples": [1e308, 1e308]}), "models[0].improvement: "),
    "student-t df 0.01": (lambda d: d["switches"][1].update(jump={"kind": "student_t", "df": 0.01, "scale": 1}),
                          "switches[1].jump.student_t.df: "),
    "loss_scale 1e308": (lambda d: d["models"][0].update(loss_scale=1e308), "models[0].loss_scale: "),
    "omega 1e-320": (lambda d: d.update(omega=1e-320), "omega: "),
    "omega 1e-300": (lambda d: d.update(omega=1e-300), "omega: "),
    "omega 1 - 1e-13": (lambda d: d.update(omega=1 - 1e-13), "omega: "),
    "omega 1e-13": (lambda d: d.update(omega=1e-13), "omega: "),
    "compute 1e-320": (lambda d: d["models"][0].update(compute=1e-320), "models[0].compute: "),
    "bandwidth 5e-324": (lambda d: d["clusters"][0].update(bandwidth=5e-324), "clusters[0].bandwidth: "),
    "initial_loss -1": (lambda d: d.update(initial_loss=-1.0), "initial_loss: "),
    "initial_loss 1e20": (lambda d: d.update(initial_loss=1e20), "initial_loss: "),
    # every plan on the cluster cost inf: the MILP called one feasible (gap nan), DepL gave a wrong reason
    "unit_cost 1e308": (lambda d: d["clusters"][0].update(unit_cost=1e308), "clusters[0].unit_cost: "),
    # finite for one epoch (≈ 1.5e308), not for K̄ = 6 of them
    "unit_cost 5e307": (lambda d: d["clusters"][1].update(unit_cost=5e307), "clusters[1].unit_cost: "),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_numbers_binary64_cannot_compute_with_are_refused_naming_the_field(base, case):
    change, field = REFUSED[case]
    with pytest.raises(InstanceError) as info:
        parse_instance(_mutate(base, change))
    msg = str(info.value)
    assert msg.startswith(f"invalid instance: {field}"), msg
    assert "\n" not in msg and ";" not in msg


ACCEPTED = {
    "jump mean -1e10": lambda d: d["switches"][0].update(jump={"kind": "normal", "mean": -1e10, "std": 1}),
    "compute 1e-300": lambda d: d["models"][0].update(compute=1e-300),
    "capacity 1e300": lambda d: d["clusters"][0].update(capacity=1e300),
    "omega at its bounds": lambda d: d.update(omega=MIN_OMEGA),
    "omega 1 - 1e-12": lambda d: d.update(omega=1 - MIN_OMEGA),
    "size 0": lambda d: d["models"][0].update(size=0.0),
    "inverse-gamma shape 1e300": _imp({"kind": "inverse_gamma", "shape": 1e300, "scale": 1e300}),
    "unit_cost 1e300": lambda d: d["clusters"][0].update(unit_cost=1e300),
    "Tmax 1e308": lambda d: d.update(time_max=1e308),
    # no epoch meets Tmax on any cluster: preprocessing's "infeasible, with the reason", not a refusal
    "dataset size 1e308": lambda d: [ds.update(size=1e308) for ds in d["datasets"]],
    "unit_cost 1e308 on a cluster no epoch fits": lambda d: d["clusters"][0].update(unit_cost=1e308, capacity=1e-300),
}


@pytest.mark.parametrize("case", list(ACCEPTED))
def test_extreme_but_computable_numbers_still_validate(base, case):
    parse_instance(_mutate(base, ACCEPTED[case]))


def test_a_loss_max_above_a_positive_initial_loss_is_still_named_loss_max(base):
    with pytest.raises(InstanceError, match=r"^invalid instance: loss_max: must be below initial_loss"):
        parse_instance(_mutate(base, lambda d: d.update(loss_max=d["initial_loss"] + 1)))


def test_the_schema_states_omegas_bounds():
    omega = instance_schema()["properties"]["omega"]
    assert omega["minimum"] == MIN_OMEGA and omega["maximum"] == 1 - MIN_OMEGA


def test_the_schema_states_the_largest_deadline_and_parsing_says_why(base):
    assert instance_schema()["properties"]["time_max"]["maximum"] == MAX_TIME_MAX
    parse_instance(_mutate(base, lambda d: d.update(time_max=MAX_TIME_MAX)))
    with pytest.raises(InstanceError, match=r"^invalid instance: time_max: 1\.1e\+308 is beyond 1e\+308: "
                                            r"Tmax·\(1 \+ 1e-9\).* would be inf"):
        parse_instance(_mutate(base, lambda d: d.update(time_max=1.1e308)))


@pytest.mark.parametrize("law, frozen", [
    (InverseGamma(shape=3.5, scale=2.0), stats.invgamma(3.5, scale=2.0)),
    (StudentT(df=4, loc=0.2, scale=0.05), stats.t(4, loc=0.2, scale=0.05)),
    (Normal(mean=1.0, std=0.3), stats.norm(1.0, 0.3)),
    (LogNormal(mu=0.1, sigma=0.2), stats.lognorm(0.2, scale=1.1051709180756477)),
])
def test_law_tails_are_scipys_quantiles(law, frozen):
    lo, hi = law_tails(law)
    assert lo == pytest.approx(frozen.ppf(TAIL), rel=1e-6)
    assert hi == pytest.approx(frozen.ppf(1 - TAIL), rel=1e-6)


#: Laws around the ±MAX_LOSS line (loss_scale 1): a normal whose 1 − TAIL
#: quantile is the line up to a relative 1e-6 / 1e-12 either way, laws the
#: closed-form bound does not clear but whose tails are within the line
#: (Student's t, df 0.5 and 1.5), and laws beyond it.
_Z = 5.997807015007686      # the standard normal's 1 − 1e-9 quantile
NEAR_THE_LINE = (
    [Normal(mean=0.0, std=1e15 / _Z * (1 + eps)) for eps in (-1e-6, -1e-12, 1e-12, 1e-6)]
    + [StudentT(df=0.5, scale=1e-3), StudentT(df=1.5, scale=1e8), StudentT(df=0.5, scale=1.0),
       InverseGamma(shape=0.6, scale=1.0), InverseGamma(shape=0.8, scale=1.0), LogNormal(mu=28.0, sigma=1.0),
       LogNormal(mu=29.0, sigma=1.0), Normal(mean=-1e15, std=1e-3)]
)


@pytest.mark.parametrize("i", range(len(NEAR_THE_LINE)))
def test_the_verdict_is_the_one_of_the_computed_tails(base, i):
    # Validation settles most laws on their closed-form bound; near the line
    # the verdict must still be exactly that of the tails themselves.
    law = NEAR_THE_LINE[i]
    lo, hi = law_tails(law)
    within = max(abs(lo), abs(hi)) <= 1e15
    data = _mutate(base, lambda d: d["models"][0].update(loss_scale=1.0, improvement=law.model_dump(by_alias=True)))
    if within:
        parse_instance(data)
    else:
        with pytest.raises(InstanceError, match=r"^invalid instance: models\[0\]\.improvement: "):
            parse_instance(data)


def test_both_verdicts_occur_near_the_line():
    verdicts = {max(abs(v) for v in law_tails(law)) <= 1e15 for law in NEAR_THE_LINE}
    assert verdicts == {True, False}


def test_validation_keeps_no_empirical_sample_alive(base):
    # A cache keyed on the laws kept every validated empirical law (and its
    # samples) alive for the life of the process.
    data = _mutate(base, _imp({"kind": "empirical", "samples": [1.0 + i * 1e-6 for i in range(10_000)]}))
    inst = parse_instance(data)
    ref = weakref.ref(inst.models[0].improvement)
    inst.with_changes(omega=0.5)
    del inst
    gc.collect()
    assert ref() is None


@pytest.mark.integration
def test_loading_an_instance_with_t_and_inverse_gamma_laws_imports_no_scipy(tmp_path):
    # SciPy costs ~0.3 s to import; the binary64 check clears these laws on their closed-form bound.
    path = tmp_path / "alexnet.json"
    path.write_text(generate("realistic", family="alexnet").to_json())
    assert '"student_t"' in path.read_text() and '"inverse_gamma"' in path.read_text()
    code = ("import sys\nfrom deplbench.instances.model import load_instance\n"
            f"load_instance({str(path)!r})\nprint('scipy' in sys.modules)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"
