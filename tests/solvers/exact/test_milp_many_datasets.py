"""The MILP and its certified bracket decline an instance with more datasets than any formulation holds.

Beyond ``MAX_DATASETS_GENERAL`` (12) datasets every formulation refuses the
instance, so both declare it (status ``skipped``, with the reason) before any
work: no replication of milp-certified runs into that refusal, and
``deplbench certify`` refuses the file (exit 2) instead of a bracket of failed
solves.
"""

from __future__ import annotations

import pytest

from deplbench.formulations.general import MAX_DATASETS_GENERAL
from deplbench.instances.generators import generate
from deplbench.solvers.certify import certified
from deplbench.solvers.registry import get_solver
from deplbench.solvers.run import solve


@pytest.fixture(scope="module")
def many_datasets():
    return generate("datasets", n_datasets=MAX_DATASETS_GENERAL + 1, horizon=10, seed=0)


@pytest.mark.parametrize("algorithm", ["milp", "milp-certified"])
def test_more_datasets_than_the_milp_holds_is_skipped_with_the_reason(many_datasets, algorithm, monkeypatch):
    monkeypatch.setattr(certified, "certify", lambda *a, **k: pytest.fail("a bracket started"))
    res = solve(many_datasets, algorithm)
    assert res.status == "skipped" and res.plan is None
    assert res.message == "datasets: 13 datasets exceed the MILP's limit of 12 (every subset of datasets is enumerated)"


def test_as_many_datasets_as_the_milp_holds_applies():
    inst = generate("datasets", n_datasets=MAX_DATASETS_GENERAL, horizon=10, seed=0)
    for name in ("milp", "milp-certified"):
        assert get_solver(name).applies(inst) == (True, "")


def test_certify_refuses_the_instance_before_any_solve(many_datasets, tmp_path, deplbench_cli, monkeypatch):
    monkeypatch.setattr(certified, "certify", lambda *a, **k: pytest.fail("a bracket started"))
    path = tmp_path / "d13.json"
    many_datasets.save(path)
    status, out, err = deplbench_cli("certify", path)
    assert status == 2 and out == ""
    assert err == (f"error: {path}: datasets: 13 datasets exceed the MILP's limit of 12 (every subset of datasets "
                   "is enumerated); the bracket's SAA solves are this MILP\n")
