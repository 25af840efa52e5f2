"""An :class:`~deplbench.instances.model.Instance` handed to the Python API, checked again.

An instance read by :func:`~deplbench.instances.model.load_instance` or
:func:`~deplbench.instances.model.parse_instance` has been validated, but
the Python API also accepts instances built in code, and pydantic does not
validate ``instance.model_copy(update={"omega": 5.0})`` nor an element
appended to ``instance.models``. Such an instance would fail deep inside a
solve (``cannot convert float NaN to integer``) or give a silent wrong
number, so :func:`~deplbench.solvers.run.solve`,
:func:`~deplbench.solvers.run.closed_loop` and
:func:`~deplbench.formulations.evaluation.evaluate.evaluate_plan` check it
first and raise :class:`~deplbench.errors.InstanceError` naming the field.

Two depths, by cost, each with the rules and messages of
:func:`~deplbench.instances.model.load_instance` (one place for each rule:
the model's field declarations and its rule functions):

* ``full=True`` (``solve``, ``closed_loop``): every rule of the format
  again, by validating the instance's own fields afresh as
  :func:`~deplbench.instances.model.parse_instance` does (its cost grows
  with the number of models and switches; small beside a solve);
* ``full=False`` (``evaluate_plan``, which algorithms call for every
  candidate plan): the top-level numbers ω, ℓ(0), ℓmax, Tmax, K̄ against
  their declared types and ranges, ℓmax < ℓ(0)
  (:func:`~deplbench.instances.model.check_targets`), unique names
  (:func:`~deplbench.instances.model.check_unique_names`) and the
  magnitudes of the top-level numbers
  (:func:`~deplbench.instances.magnitudes.check_target_magnitudes`); cheap
  whatever the size.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any

from deplbench.errors import DeplbenchError, InstanceError

__all__ = ["check_instance", "SCALAR_FIELDS"]

#: The top-level numbers every evaluation reads (eqs. (3), (4), (8)).
SCALAR_FIELDS = ("initial_loss", "loss_max", "omega", "time_max", "horizon")


@cache
def _scalar_model() -> Any:
    """A pydantic model of :data:`SCALAR_FIELDS` with Instance's own declarations
    (type, ranges, validators), so that a fault reads as ``load_instance`` says it."""
    from pydantic import create_model

    from deplbench.instances.model import Instance

    fields: dict[str, Any] = {}
    for name in SCALAR_FIELDS:
        field = Instance.model_fields[name]
        fields[name] = (Annotated[(field.annotation, *field.metadata)], ...)    # the type with its ranges
    return create_model("InstanceScalars", **fields)


def check_instance(instance: Any, *, full: bool = True,
                   type_error: type[DeplbenchError] = InstanceError) -> None:
    """Refuse an instance that breaks the format's rules, naming the field.

    Parameters
    ----------
    instance : Instance
        The instance passed to the API.
    full : bool, optional
        Every rule (default), or only the top-level numbers and unique
        names (module docstring).
    type_error : type, optional
        The error raised when ``instance`` is not an Instance at all (the
        caller's own kind, e.g. PlanError for ``evaluate_plan``).

    Raises
    ------
    type_error
        ``"instance: expected an Instance (deplbench.instances.model), got dict"``.
    InstanceError
        ``"instance: "`` and the message :func:`~deplbench.instances.model.load_instance`
        gives for the same fault (``"instance: omega: must lie in [1e-12, 1 − 1e-12], got 5.0 ..."``,
        ``"instance: models: duplicate names ['m1']"``, ...).
    """
    from pydantic import ValidationError

    from deplbench.instances.magnitudes import check_target_magnitudes
    from deplbench.instances.model import (
        Instance,
        check_shape,
        check_targets,
        check_unique_names,
        format_validation_error,
    )

    if not isinstance(instance, Instance):
        raise type_error(f"instance: expected an Instance (deplbench.instances.model), "
                         f"got {type(instance).__name__}")
    try:
        if full:
            # from plain data, as parse_instance reads a file: nested models built in code are
            # checked too (pydantic takes a model instance as valid without looking inside)
            data = instance.model_dump(warnings=False)     # a wrong type is reported below, not warned
            check_shape(data)
            Instance.model_validate(data)
            return
        _scalar_model().model_validate({name: getattr(instance, name) for name in SCALAR_FIELDS})
        check_targets(instance)
        check_unique_names(instance)
        check_target_magnitudes(instance)
    except ValidationError as exc:
        raise InstanceError(f"instance: {format_validation_error(exc)}") from None
    except ValueError as exc:      # a rule function's message, or check_shape's InstanceError: both name the field
        raise InstanceError(f"instance: {exc}") from None
