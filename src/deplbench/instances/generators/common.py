"""What every generator family shares: parameter checks, JSON building, rounding.

Parameter conversion goes through :class:`deplbench.params.Param` (the one
validation path of the package) and raises
:class:`~deplbench.errors.InstanceError` naming the parameter; the instance
JSON a family assembles is validated by
:func:`~deplbench.instances.model.parse_instance` (a failure there is a
generator bug or a bad parameter such as ℓmax ≥ ℓ(0)).
"""

from __future__ import annotations

import math
from typing import Any

from deplbench.errors import InstanceError
from deplbench.instances.distributions import InverseGamma
from deplbench.instances.magnitudes import MIN_NORMAL
from deplbench.instances.model import Instance, parse_instance
from deplbench.params import Param

#: Switch graphs the realistic, scaling and datasets generators can build.
#: ``"pruning"`` (the default, and the only graph before ``switches`` existed):
#: only towards more pruning — an acyclic switch graph, since pruned weights
#: cannot come back. ``"any"``: every ordered pair of models is allowed — a
#: cyclic graph, as when a pruned model is grown back to a larger one
#: (progressive growing, knowledge inheritance). Ours, not the papers'.
SWITCH_MODES = ("pruning", "any")
#: ``switches="any"``: a switch back towards a larger model (b → a, the
#: reverse of a pruning switch a → b) has a t(4, F·loc, 0.4·F·loc) jump with
#: loc that of a → b and F this factor. Ours: regrown weights start from a
#: fresh initialisation, so re-growing hurts the loss more than pruning does;
#: deriving it from the forward jump (no extra draw) keeps every other number
#: of an instance identical to its ``"pruning"`` twin with the same seed.
REGROW_JUMP_FACTOR = 2.0


# ---------------------------------------------------------------------------
# The docstring sections every family shares
# ---------------------------------------------------------------------------

#: numpydoc text shared by the generator docstrings, filled in at the
#: placeholders ``{seed}``, ``{returns}`` and ``{raises}`` by :func:`generator_doc`.
SHARED_DOC = {
    "{seed}": """seed : int, default 0
        Seed of ``numpy.random.default_rng``, recorded in the provenance; the
        same family, parameters and seed give byte-identical JSON.""",
    "{returns}": """Returns
    -------
    Instance""",
    "{raises}": """Raises
    ------
    InstanceError
        Naming the offending parameter.""",
}


def generator_doc(func):
    """Decorator: fill :data:`SHARED_DOC` into ``func``'s docstring, so that
    the sections every generator shares are written once."""
    doc = func.__doc__ or ""
    for placeholder, text in SHARED_DOC.items():
        doc = doc.replace(placeholder, text)
    func.__doc__ = doc
    return func


# ---------------------------------------------------------------------------
# Validation helpers
# ---------------------------------------------------------------------------


def int_param(name: str, value: Any, lo: int, hi: int | None = None) -> int:
    """An integer parameter in [lo, hi]; CLI strings are parsed, ``"2.5"`` and ``True`` refused."""
    return Param(lo, int, low=lo, high=hi).convert(name, value, error=InstanceError)


def float_param(name: str, value: Any, *, gt: float | None = None, ge: float | None = None,
                 lt: float | None = None, le: float | None = None) -> float:
    """A finite float parameter with optional strict (gt, lt) or loose (ge, le) bounds."""
    out = Param(0.0, float).convert(name, value, error=InstanceError)
    if not math.isfinite(out):
        raise InstanceError(f"parameter {name!r}: must be finite, got {value!r}")
    checks = ((gt, lambda: out > gt, f"> {gt}"), (ge, lambda: out >= ge, f">= {ge}"),
              (lt, lambda: out < lt, f"< {lt}"), (le, lambda: out <= le, f"<= {le}"))
    for bound, ok, text in checks:
        if bound is not None and not ok():
            raise InstanceError(f"parameter {name!r}: must be {text}, got {out:g}")
    return out


def derived_number(value: float, what: str, param: str, given: float) -> float:
    """``value``, a number of the instance computed from the user's parameter ``param``.

    A parameter can be a valid number and still give a field binary64 cannot
    hold (docs/instances.md, "Magnitudes"): inf, or a subnormal that
    :func:`~deplbench.instances.magnitudes.check_magnitudes` refuses. The
    message names the parameter the user set and what it gave, not the
    generated field (``clusters[0].capacity``) the user never wrote.

    Raises
    ------
    InstanceError
        ``parameter 'time_max': 1e-307 gives a cluster capacity 2·K̄·max w²/time_max that overflows …``.
    """
    if not math.isfinite(value):
        why = "that overflows binary64"
    elif value != 0 and abs(value) < MIN_NORMAL:
        why = f"of {value:.3g}, subnormal in binary64 (below {MIN_NORMAL:.3g}: too few significant bits)"
    else:
        return value
    raise InstanceError(f"parameter {param!r}: {given:g} gives {what} {why}; choose a value nearer 1")


def choice_param(name: str, value: Any, choices) -> str:
    """One of ``choices`` (strings)."""
    return Param(choices[0], str, choices=tuple(choices)).convert(name, value, error=InstanceError)


def seed_param(seed: Any) -> int:
    return int_param("seed", seed, 0)


def significant(x: float, digits: int = 6) -> float:
    """Round a drawn number to ``digits`` significant digits.

    Keeps instance files readable; reproducibility does not depend on it
    (the same seed gives the same draws before rounding).
    """
    return float(f"{float(x):.{digits}g}")


def inverse_gamma(mean: float, var: float) -> dict:
    """Moment-matched inverse-gamma X (DepL Table I → eq. (8))."""
    dist = InverseGamma.from_moments(mean, var)
    return {"kind": "inverse_gamma", "shape": dist.shape, "scale": dist.scale}


def student_t(df: float, loc: float, scale: float) -> dict:
    return {"kind": "student_t", "df": df, "loc": loc, "scale": scale}


#: The single reference dataset of the realistic and knapsack families (γ = 1).
_ONE_DATASET = ({"name": "d0", "size": 1.0, "usefulness": 1.0},)


def instance_data(name: str, initial_loss: float, loss_max: float, omega: float, time_max: float,
                   horizon: int, models: list[dict], switches: list[dict], clusters: list[dict],
                   provenance: dict, datasets=_ONE_DATASET, transfer_costs: list[dict] | None = None) -> dict:
    """The instance JSON of a generator, before validation by :func:`build_instance`."""
    data = {
        "name": name, "initial_loss": initial_loss, "loss_max": loss_max, "omega": omega,
        "time_max": time_max, "horizon": horizon, "models": models, "switches": switches,
        "clusters": clusters, "datasets": [dict(d) for d in datasets], "provenance": provenance,
    }
    if transfer_costs is not None:
        data["transfer_costs"] = transfer_costs
    return data


def build_instance(data: dict) -> Instance:
    """Validate generated data; a failure here is a generator bug or bad params."""
    return parse_instance(data)
