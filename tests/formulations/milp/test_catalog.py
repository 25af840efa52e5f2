"""The formulation table is fixed at import: nothing can change what
``formulation="fast"`` picks for later solves (no module global changes
behaviour)."""

from __future__ import annotations

import pytest

import deplbench.formulations.milp as milp
from deplbench.formulations.milp import catalog


def test_fast_chain_and_table_are_immutable():
    assert isinstance(catalog.FAST_CHAIN, tuple)
    with pytest.raises(TypeError):
        catalog._TABLE["flow"] = catalog.get("naive")  # type: ignore[index]
    assert catalog.get("flow").name == "flow"


def test_no_registration_api_is_exported():
    for name in ("register", "set_fallback"):
        assert not hasattr(catalog, name), name
        assert not hasattr(milp, name), name
        assert name not in milp.__all__


def test_fast_chain_names_are_rows_and_end_with_the_fallback_flow():
    assert set(catalog.FAST_CHAIN) <= set(catalog.formulation_names())
    assert catalog.FAST_CHAIN[-1] == "flow"
