"""Seeded instance generators: realistic, knapsack-derived, scaling, datasets.

``generate(family, seed=..., **params)`` returns a validated
:class:`~deplbench.instances.model.Instance`. Generation is reproducible to
the byte: the same family, parameters and seed give identical JSON
(``Instance.to_json``); every random draw comes from
``numpy.random.default_rng(seed)``. Each family's numbers that the papers do
not print are listed, with their reason, in the family's docstring *and* in
``provenance.assumptions`` of every instance it generates.

Families (the DepL paper's Sec. VI-B and Property 1; docs/instances.md §4):

``realistic``
    The DepL paper's Sec. VI-B scenario (``family="alexnet"`` or
    ``"mobilenet"``, Table I) and the PACT paper's Sec. VI-B scenario
    (``family="pact-vgg11"``). Deterministic given the parameters.
``knapsack``
    DepL Property 1 run forwards on Pisinger's knapsack classes; the exact
    optimum is :func:`deplbench.formulations.exact.knapsack.knapsack_optimum_from_instance`.
``scaling``
    Random but feasible instances with |M|, |N|, |D|, K̄ as parameters, for
    complexity sweeps.
``datasets``
    Several heterogeneous datasets with transfer costs, where dataset
    selection matters under the data law of ``instances/datalaw.py``.
``measured``
    The digits MLP and its pruned versions, with loss laws fitted to the
    shipped real training runs (:mod:`.measured`, docs/measured.md).

The realistic, scaling and datasets families take ``switches="pruning"``
(default: only towards more pruning, an acyclic switch graph) or ``"any"``
(every ordered pair of models: a cyclic graph; the reverse jumps' law is an
assumption, :data:`REGROW_JUMP_FACTOR`).

Modules, one job each: :mod:`.common` (parameter checks, JSON building),
:mod:`.paper` (realistic), :mod:`.pisinger` (knapsack), :mod:`.synthetic`
(scaling, datasets); this one holds the family table and :func:`generate`.
See ``docs/instances.md`` for the format and every assumption.

Examples
--------
>>> from deplbench.instances.generators import generate
>>> inst = generate("realistic", family="alexnet", loss_max=9)
>>> [m.name for m in inst.models]
['fast-unsteady', 'intermediate', 'slow-steady']
>>> generate("knapsack", item_class="strongly", n_items=5, seed=1).n_models
5
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from deplbench.errors import InstanceError
from deplbench.instances.generators.common import REGROW_JUMP_FACTOR, SWITCH_MODES, generator_doc
from deplbench.instances.generators.measured import measured
from deplbench.instances.generators.paper import A_CLASS, B_CLASS, PRUNING, TABLE_I, realistic
from deplbench.instances.generators.pisinger import KNAPSACK_CLASSES, knapsack, knapsack_items
from deplbench.instances.generators.synthetic import datasets, scaling
from deplbench.instances.model import Instance

# ---------------------------------------------------------------------------
# entry point
# ---------------------------------------------------------------------------

#: family name → generator function (keyword-only parameters plus ``seed``).
FAMILIES: Mapping[str, Callable[..., Instance]] = {
    "realistic": realistic,
    "knapsack": knapsack,
    "scaling": scaling,
    "datasets": datasets,
    "measured": measured,
}


def available_families() -> list[str]:
    """Names accepted by :func:`generate`."""
    return list(FAMILIES)


def family_parameters(family: str) -> dict[str, Any]:
    """Parameter names of a family with their defaults (``seed`` excluded)."""
    fn = _family(family)
    return {n: p.default for n, p in inspect.signature(fn).parameters.items() if n != "seed"}


def _family(family: str) -> Callable[..., Instance]:
    try:
        return FAMILIES[family]
    except (KeyError, TypeError):
        raise InstanceError(f"family: unknown instance family {family!r} (known: {', '.join(FAMILIES)})") from None


@generator_doc
def generate(family: str, /, *, seed: int = 0, **params: Any) -> Instance:
    """Generate one instance of a family, reproducibly.

    Parameters
    ----------
    family : {"realistic", "knapsack", "scaling", "datasets", "measured"}
    {seed}
    **params
        The family's parameters (see each family function). ``realistic``
        takes ``family="alexnet"|"mobilenet"|"pact-vgg11"`` (``family`` is
        positional-only here, so the keyword reaches the family).

    {returns}

    Raises
    ------
    InstanceError
        Unknown family or parameter, or a parameter out of range (the message
        names it).
    """
    fn = _family(family)
    known = family_parameters(family)
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise InstanceError(
            f"parameter {unknown[0]}: unknown for family {family!r} (known: {', '.join(known)})")
    return fn(seed=seed, **params)


__all__ = [
    "A_CLASS",
    "B_CLASS",
    "FAMILIES",
    "PRUNING",
    "KNAPSACK_CLASSES",
    "REGROW_JUMP_FACTOR",
    "SWITCH_MODES",
    "TABLE_I",
    "available_families",
    "datasets",
    "family_parameters",
    "generate",
    "knapsack",
    "knapsack_items",
    "measured",
    "realistic",
    "scaling",
]
