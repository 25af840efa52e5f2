"""depl-proven on instances with many datasets: its cost floor enumerates no 2^|D| subsets.

The floor (``Data.count_floor``) ranges over data classes; with every
non-empty subset of |D| datasets a class, 20 datasets would be 10⁶ classes
and 50 more than memory holds, so above 10 datasets only the chosen subset is one.
"""

from __future__ import annotations

import pytest

from deplbench import limits
from deplbench.formulations.milp import data as milp_data
from deplbench.instances.generators import generate
from deplbench.solvers.depl import proven
from deplbench.solvers.run import solve


@pytest.fixture(scope="module")
def many_datasets():
    return generate("datasets", n_datasets=proven.FLOOR_MAX_DATASETS + 14, horizon=12, seed=0)


@pytest.mark.slow
def test_the_floor_of_many_datasets_ranges_over_the_chosen_class_alone(monkeypatch, many_datasets):
    built = []

    class Counting(milp_data.Data):
        def _data_classes(self, classes=None):
            super()._data_classes(classes)
            built.append(len(self.classes))

    monkeypatch.setattr(proven, "Data", Counting)
    res = solve(many_datasets, "depl-proven", evaluate=False, time_limit=60)
    assert res.status == "feasible", res.message
    assert built == [1]


def test_the_data_classes_honour_the_deadline(many_datasets):
    """Every subset of 24 datasets (1.7·10⁷) is refused by the clock, not built."""
    with limits.deadline(1e-9), pytest.raises(limits.TimeLimitReached, match="data classes"):
        milp_data.Data(many_datasets, 1, 0)


def test_a_few_datasets_keep_every_class():
    inst = generate("datasets", n_datasets=4, horizon=10, seed=0)
    data = milp_data.Data(inst, 1, 0)
    one = milp_data.Data(inst, 1, 0, classes=[(0, 2)])
    assert one.classes == [(0, 2)] and one.Sig == 1
    assert data.Sig > 1 and all(len(c) >= 1 for c in data.classes)
