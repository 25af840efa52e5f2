"""Seeded realistic populations: seed 0 is the paper's instance, byte for
byte; seeds ≥ 1 are documented, valid, reachable variants (variants.py)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from deplbench.cli import main
from deplbench.cli.instances import parse_seeds
from deplbench.errors import InstanceError
from deplbench.instances.generators import generate
from deplbench.instances.generators.variants import DNN_LAWS, PACT_LAWS, quantile_bound, reachable

SEED0 = json.loads((Path(__file__).parents[1] / "data" / "realistic_seed0.json").read_text())
FAMILIES = ("alexnet", "mobilenet", "pact-vgg11")


@pytest.mark.parametrize("case", SEED0["cases"], ids=lambda c: json.dumps(c["params"], sort_keys=True))
def test_seed0_is_byte_identical_to_the_instance_before_variants(case):
    js = generate("realistic", seed=0, **case["params"]).to_json()
    assert hashlib.sha256(js.encode()).hexdigest() == case["sha256"]


def _numbers(inst) -> dict:
    d = json.loads(inst.to_json())
    d.pop("name")
    d.pop("provenance")
    return d


@pytest.mark.parametrize("family", FAMILIES)
def test_seeds_give_distinct_valid_reproducible_variants(family):
    lmax = 0.3 if family == "pact-vgg11" else 9.0
    insts = [generate("realistic", family=family, seed=s, loss_max=lmax) for s in range(0, 6)]
    bodies = [json.dumps(_numbers(i), sort_keys=True) for i in insts]
    assert len(set(bodies)) == len(bodies)          # every seed a different instance
    again = generate("realistic", family=family, seed=3, loss_max=lmax)
    assert again.to_json() == insts[3].to_json()   # same seed, same bytes
    for inst in insts[1:]:
        assert inst.loss_max == lmax                # a given ℓmax wins over its draw
        assert "Drawn: " in inst.provenance.assumptions[-1]
        # the pruning switch graph: only towards more pruning, so acyclic
        order = [m.name for m in inst.models]
        assert all(order.index(s.from_model) < order.index(s.to_model) for s in inst.switches)
        # the hardest target of the paper's range stays reachable
        assert reachable(inst, 0.15 if family == "pact-vgg11" else 5.0)


def test_variant_draws_stay_in_their_stated_ranges():
    for seed in range(1, 21):
        inst = generate("realistic", family="alexnet", seed=seed)
        assert 19.0 <= inst.initial_loss <= 23.0
        assert 5.0 <= inst.loss_max <= 13.0
        assert 180.0 <= inst.time_max <= 250.0
        n_a = sum(c.name.startswith("A") for c in inst.clusters)
        assert 1 <= n_a <= 2 and 1 <= inst.n_clusters - n_a <= 2
        slow = inst.models[2]
        assert slow.name == "slow-steady" and 5.0 <= slow.loss_offset <= 15.0
        assert 3.0 <= inst.switches[0].jump.df <= 6.0
        pact = generate("realistic", family="pact-vgg11", seed=seed)
        assert 1.1 <= pact.initial_loss <= 1.3 and 0.15 <= pact.loss_max <= 0.45
        assert pact.time_max == 1000.0              # printed, never drawn
    # the variants' laws are documented in the provenance, one line each
    prov = " ".join(generate("realistic", family="mobilenet", seed=1).provenance.assumptions)
    assert all(law.parameter in prov for law in DNN_LAWS)
    prov = " ".join(generate("realistic", family="pact-vgg11", seed=1).provenance.assumptions)
    assert all(law.parameter in prov for law in PACT_LAWS)


def test_given_parameters_win_over_their_draws():
    inst = generate("realistic", family="alexnet", seed=7, n_a=3, n_b=0, time_max=300.0, loss_max=6.0)
    assert inst.n_clusters == 3 and inst.time_max == 300.0 and inst.loss_max == 6.0
    # a seed is the same variant at every ℓmax: only loss_max (and the name) differ
    a, b = (generate("realistic", family="mobilenet", seed=5, loss_max=x) for x in (5.0, 13.0))
    na, nb = _numbers(a), _numbers(b)
    assert na.pop("loss_max") == 5.0 and nb.pop("loss_max") == 13.0
    assert na == nb
    with pytest.raises(InstanceError, match="n_a/n_b"):
        generate("realistic", family="alexnet", seed=2, n_a=0, n_b=0)


def test_quantile_bound_is_an_upper_bound_and_tight():
    """The Chernoff bound behind reachability is never below the Monte
    Carlo quantile and within a few per cent of it."""
    rng = np.random.default_rng(0)
    inst = generate("realistic", family="mobilenet", seed=4, loss_max=5.0)
    for m in range(inst.n_models):
        mm, c = inst.models[m], inst.clusters[0]
        k = min(inst.horizon, int(inst.time_max / (mm.compute / c.capacity + mm.size / c.bandwidth)))
        loss = inst.initial_loss - mm.improvement.sample(rng, (20000, k)) @ inst.run_scale_for(k)[:, m]
        q = float(np.quantile(loss, inst.omega))
        bound = quantile_bound(inst, m, 0)
        assert q - 0.02 <= bound <= q + 0.05 * inst.initial_loss


def test_parse_seeds():
    assert parse_seeds("1-3") == [1, 2, 3]
    assert parse_seeds("5,0,3-4") == [0, 3, 4, 5]
    for bad, word in (("5-3", "empty range"), ("x", "expected"), ("-1", "expected"), ("", "expected")):
        with pytest.raises(InstanceError, match=word):
            parse_seeds(bad)


@pytest.mark.parametrize("spec, seed", [("0,0", 0), ("0,3-4,3", 3), ("1-5,4-9", 4), ("7, 7", 7),
                                        ("0-9999,0", 0)])
def test_parse_seeds_refuses_a_seed_listed_twice(spec, seed):
    """One file per seed: `--seeds 0,0` wrote one instance where two were listed, without a word."""
    with pytest.raises(InstanceError, match=f"^--seeds {spec!r}: seed {seed} is listed twice"):
        parse_seeds(spec)


def test_cli_writes_a_population_in_one_call(tmp_path, capsys):
    out = tmp_path / "pop"
    assert main(["generate", "realistic", "--family", "mobilenet", "--seeds", "1-4", "-o", str(out),
                 "--param", "loss_max=7"]) == 0
    files = sorted(out.iterdir())
    assert [f.name for f in files] == [f"realistic-mobilenet-seed00{s}.json" for s in range(1, 5)]
    assert files[1].read_text() == generate("realistic", family="mobilenet", seed=2, loss_max=7).to_json()
    assert capsys.readouterr().err.startswith(f"wrote 4 instances to {out}/ (realistic-mobilenet-seed001.json … ")
    assert main(["generate", "knapsack", "--seeds", "0", "-o", str(tmp_path / "one")]) == 0
    assert capsys.readouterr().err == f"wrote 1 instance to {tmp_path / 'one'}/ (knapsack-seed000.json)\n"
    assert main(["generate", "knapsack", "--seeds", "0,0", "-o", str(tmp_path / "twice")]) == 2
    assert capsys.readouterr().err == "error: --seeds '0,0': seed 0 is listed twice (each seed writes one file)\n"
    assert not (tmp_path / "twice").exists()
    assert main(["generate", "realistic", "--family", "alexnet", "--seeds", "3-1", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("error: --seeds")
    assert main(["generate", "realistic", "--seeds", "1-2", "--seed", "1", "-o", str(out)]) == 2
    assert "--seeds" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("family, seed, loss_max", [("alexnet", 2, 9.0), ("mobilenet", 3, 13.0),
                                                     ("pact-vgg11", 1, 0.15)])
def test_drawn_variants_are_feasible(family, seed, loss_max):
    """milp-exact proves an optimum (so a feasible plan) on a sample of
    seeds (PACT at the hardest target of its range; every AlexNet/MobileNet
    target 5–13 on 60 seeds in perf/population_targets.py)."""
    from deplbench.solvers.run import solve

    inst = generate("realistic", family=family, seed=seed, loss_max=loss_max)
    res = solve(inst, "milp-exact", eval_samples=2000)
    assert res.status == "optimal" and res.cost > 0


def test_docs_table_matches_the_laws():
    from deplbench.instances.generators.variants import laws_markdown

    doc = (Path(__file__).parents[2] / "docs" / "instances.md").read_text(encoding="utf-8")
    assert laws_markdown(DNN_LAWS) in doc and laws_markdown(PACT_LAWS) in doc


def test_outside_the_papers_setting_the_asked_target_is_reached_or_named():
    short = generate("realistic", family="alexnet", seed=2, horizon=20, omega=0.9, loss_max=14.0)
    assert short.horizon == 20 and reachable(short, 14.0)
    with pytest.raises(InstanceError, match="parameter loss_max: no variant"):
        generate("realistic", family="alexnet", seed=2, horizon=5, loss_max=6.0)
