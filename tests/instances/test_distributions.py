"""The discrete laws (Empirical, PointMass) are hashable frozen models like
every other law, and their sf/pdf answer without the SciPy law cache."""

from __future__ import annotations

import numpy as np
import pytest

from deplbench.instances.distributions import Empirical, Normal, PointMass
from deplbench.instances.model import parse_instance
from tests.instance_data import base_instance


def test_empirical_is_hashable_and_equal_laws_hash_alike():
    a, b = Empirical(samples=[1.0, 2.0, 2.0]), Empirical(samples=(1.0, 2.0, 2.0))
    assert a == b and hash(a) == hash(b) and len({a, b, Normal(mean=0.0, std=1.0)}) == 2
    assert a.samples == (1.0, 2.0, 2.0)
    assert a.model_dump_json() == '{"kind":"empirical","samples":[1.0,2.0,2.0]}'


def test_empirical_sf_is_the_share_above_and_pdf_is_refused():
    e = Empirical(samples=[3.0, 1.0, 2.0, 2.0])
    x = np.array([0.0, 1.0, 1.5, 2.0, 3.0])
    np.testing.assert_array_equal(e.sf(x), [1.0, 0.75, 0.75, 0.25, 0.0])
    np.testing.assert_allclose(e.sf(x) + e.cdf(x), 1.0)
    with pytest.raises(ValueError, match="no density"):
        e.pdf(1.0)


def test_point_mass_sf_and_pdf():
    p = PointMass(value=2.0)
    np.testing.assert_array_equal(p.sf(np.array([1.0, 2.0, 3.0])), [1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="no density"):
        p.pdf(2.0)


def test_an_instance_with_an_empirical_law_round_trips_and_hashes():
    data = base_instance()
    data["models"][0]["improvement"] = {"kind": "empirical", "samples": [0.5, 1.0, 1.5]}
    inst = parse_instance(data)
    law = inst.models[0].improvement
    assert hash(law) == hash(Empirical(samples=[0.5, 1.0, 1.5]))
    again = inst.with_changes(omega=inst.omega)
    assert again.models[0].improvement == law and again.to_json() == inst.to_json()
