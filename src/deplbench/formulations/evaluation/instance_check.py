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

Two depths, by cost:

* ``full=True`` (``solve``, ``closed_loop``): every rule of the format
  again, by validating the instance's own fields afresh (its cost grows
  with the number of models and switches; small beside a solve);
* ``full=False`` (``evaluate_plan``, which algorithms call for every
  candidate plan): the top-level numbers ω, ℓ(0), ℓmax, Tmax, K̄ against
  their declared ranges, ℓmax < ℓ(0), and unique names (cheap whatever
  the size).
"""

from __future__ import annotations

from typing import Annotated, Any

from deplbench.errors import DeplbenchError, InstanceError

__all__ = ["check_instance", "SCALAR_FIELDS"]

#: The top-level numbers every evaluation reads (eqs. (3), (4), (8)).
SCALAR_FIELDS = ("initial_loss", "loss_max", "omega", "time_max", "horizon")

_ADAPTERS: dict[str, Any] = {}


def _adapter(name: str):
    """A validator of the field ``name`` of Instance, with its declared type and ranges."""
    if name not in _ADAPTERS:
        from pydantic import TypeAdapter

        from deplbench.instances.model import Instance

        field = Instance.model_fields[name]
        declared: Any = Annotated[(field.annotation, *field.metadata)]    # the type with its ranges
        _ADAPTERS[name] = TypeAdapter(declared)
    return _ADAPTERS[name]


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
        ``"instance: omega: Input should be less than 1"``, ``"instance:
        models: duplicate names ['m1']"``, ...
    """
    from pydantic import ValidationError

    from deplbench.instances.model import Instance, format_validation_error

    if not isinstance(instance, Instance):
        raise type_error(f"instance: expected an Instance (deplbench.instances.model), "
                         f"got {type(instance).__name__}")
    if full:
        try:
            # from plain data: nested models built in code are checked too
            # (pydantic takes a model instance as valid without looking inside)
            Instance.model_validate(instance.model_dump())
        except ValidationError as exc:
            raise InstanceError(f"instance: {format_validation_error(exc)}") from None
        return
    for name in SCALAR_FIELDS:
        try:
            _adapter(name).validate_python(getattr(instance, name))
        except ValidationError as exc:
            msg = exc.errors()[0]["msg"]
            if msg.startswith("Value error, "):     # our own rule: it states the value already
                raise InstanceError(f"instance: {name}: {msg[len('Value error, '):]}") from None
            raise InstanceError(f"instance: {name}: {msg}, got {getattr(instance, name)!r}") from None
    if not instance.loss_max < instance.initial_loss:
        raise InstanceError(f"instance: loss_max: must be below initial_loss "
                            f"({instance.loss_max} >= {instance.initial_loss})")
    for name in ("models", "clusters", "datasets"):
        items = getattr(instance, name)
        names = [item.name for item in items]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise InstanceError(f"instance: {name}: duplicate names {dup}")
