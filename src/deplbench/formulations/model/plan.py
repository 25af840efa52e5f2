"""Plans: the decisions of problem (2)–(6) for one run.

A :class:`Plan` lists, per active epoch k = 1..K, the model version m(k), the
training cluster n (y(k, n) = 1) and its allocation x(k, n); and, once for the
whole run, which datasets each cluster holds (z(d, n) = 1). K is the length of
the epoch list.

Examples
--------
>>> plan = Plan(epochs=[Epoch(model="m0", cluster="A", allocation=2.0)],
...             datasets={"A": ["d0"]})
>>> plan.n_epochs, plan.models
(1, ['m0'])
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, FailFast, Field, StrictStr, ValidationError

from deplbench.errors import PlanError
from deplbench.instances.model import (
    MAX_HORIZON,
    check_shape,
    format_validation_error,
    key_loc,
    read_json,
    reject_unknown_fields,
)
from deplbench.limits import as_path

#: Bytes of a plan file allowed per epoch. A pretty-printed epoch of a
#: ``solve -o`` result (its object and its three per-epoch loss bands) takes
#: about 200 B with short names; 1 KiB leaves some 800 B for its model and
#: cluster names (about 400 ASCII characters each, or 65 non-ASCII ones,
#: which JSON writes as ``\uXXXX`` escapes).
PLAN_EPOCH_BYTES = 1024
#: Largest plan file read: :data:`PLAN_EPOCH_BYTES` for each of the
#: ``MAX_HORIZON`` epochs a plan may have, rounded up to whole MiB (98 MiB).
#: Parsing builds up to about 8 bytes of Python objects per byte of text (a
#: list of small objects), so the epoch count, known only once the file is
#: parsed, cannot bound the memory: a file of tiny epochs at the input limit
#: (256 MiB) would need about 2 GB; at this cap it stays under 1 GB, and a
#: larger file is refused from its size before it is read.
MAX_PLAN_BYTES = -(-MAX_HORIZON * PLAN_EPOCH_BYTES // 2**20) * 2**20
#: Where :data:`MAX_PLAN_BYTES` comes from, as a refusal names it.
_PLAN_LIMIT_NAME = (f"deplbench.formulations.model.plan.MAX_PLAN_BYTES: {PLAN_EPOCH_BYTES} B for each of the "
                    f"{MAX_HORIZON} epochs a plan may have")


class Epoch(BaseModel):
    """One active epoch: model m(k), cluster n with y(k, n) = 1, allocation x(k, n).

    Strict types (docs/DESIGN.md, "Input rules"): names are JSON strings,
    the allocation a finite JSON number — never ``"2.0"`` or ``true``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    model: StrictStr
    cluster: StrictStr
    allocation: float = Field(allow_inf_nan=False, strict=True)


class Plan(BaseModel):
    """Per-epoch choices plus the dataset assignment z(d, n): one run's decisions of problem (2)–(6).

    Attributes
    ----------
    epochs : list of Epoch
        One entry per active epoch k: model m(k), cluster n with
        y(k, n) = 1 and allocation x(k, n).
    datasets : dict of str to list of str
        Cluster name → the datasets d it holds (z(d, n) = 1).

    See Also
    --------
    load_plan : read a plan file.
    deplbench.formulations.evaluation.evaluate.evaluate_plan : judge a plan.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    # FailFast: one error per list, not one per bad item (instances.model.Instance says why)
    epochs: Annotated[list[Epoch], FailFast()] = Field(default_factory=list)
    datasets: dict[StrictStr, Annotated[list[StrictStr], FailFast()]] = Field(default_factory=dict)

    @property
    def n_epochs(self) -> int:
        return len(self.epochs)

    @property
    def models(self) -> list[str]:
        return [e.model for e in self.epochs]

    @property
    def clusters(self) -> list[str]:
        return [e.cluster for e in self.epochs]

    @property
    def allocations(self) -> list[float]:
        return [e.allocation for e in self.epochs]

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()

    def to_json(self) -> str:
        return self.model_dump_json(indent=2) + "\n"

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json(), encoding="utf-8")


def parse_plan(data: Any) -> Plan:
    """Validate a JSON-like dict into a :class:`Plan`.

    Raises
    ------
    PlanError
        Naming each offending field as the instance format does
        (``epochs[2].allocation: ...``, ``datasets['A 1']: ...``); an
        object without ``epochs`` (``{}``) is refused, not read as the
        plan of no epochs. A plan of more than ``MAX_HORIZON`` epochs is
        refused too, before its objects are built: no instance admits it.
        So is an allocation ≤ 0 (:func:`check_allocations`).
    """
    if isinstance(data, Plan):
        return data
    if not isinstance(data, dict):
        raise PlanError(f"plan: expected a JSON object, got {type(data).__name__}")
    reject_unknown_fields(data, Plan.model_fields, "plan", PlanError)
    if "epochs" not in data:
        # {} (an empty or truncated file's object) would otherwise be read as
        # the plan of no epochs and judged as if a solver had written it
        raise PlanError("plan: missing field 'epochs' (a plan of no epochs is written \"epochs\": [])")
    epochs = data["epochs"]
    if isinstance(epochs, list) and len(epochs) > MAX_HORIZON:
        # no instance admits it (K̄ ≤ MAX_HORIZON), and its objects alone would take about 1 KB an epoch
        raise PlanError(f"epochs: {len(epochs)} epochs exceed the largest horizon an instance may have "
                        f"(K̄ ≤ {MAX_HORIZON}): infeasible on every instance, refused before it is built")
    check_shape(data, root="plan", error=PlanError)
    try:
        plan = Plan.model_validate(data)
    except ValidationError as exc:
        raise PlanError("invalid plan: " + format_validation_error(exc, root="plan")) from None
    return check_allocations(plan)


def check_allocations(plan: Plan) -> Plan:
    """Refuse a plan with an allocation x(k, n) ≤ 0; return it unchanged otherwise.

    Time (1) divides by x and cost (2) multiplies by it: a negative x would
    lower the cost reported for a plan, a zero one make its time infinite.
    No solver emits one (the allocations are the positive solution of the
    allocation problem), so such a file is not a plan to judge.

    Raises
    ------
    PlanError
        ``epochs[0].allocation: must be > 0, got -5.0`` (the first offence).
    """
    for k, e in enumerate(plan.epochs):
        if not e.allocation > 0:
            raise PlanError(f"epochs[{k}].allocation: must be > 0, got {e.allocation!r}")
    return plan


def load_plan(path: str | Path) -> Plan:
    """Read a plan JSON file (a bare plan, or a solver result with a ``plan`` key).

    Parameters
    ----------
    path : str or Path
        A plan as ``Plan.save`` writes it, or a ``deplbench solve --json``
        result holding one.

    Returns
    -------
    Plan

    Raises
    ------
    PlanError
        Larger than :data:`MAX_PLAN_BYTES` (refused before it is read),
        unreadable, non-UTF-8 or invalid JSON (``NaN``/``Infinity`` included),
        or not a valid plan; every message starts with the file name.
    """
    path = as_path(path, "path", PlanError)
    data = read_json(path, what="plan", error=PlanError, limit=MAX_PLAN_BYTES, limit_name=_PLAN_LIMIT_NAME)
    if isinstance(data, dict) and "plan" in data and "epochs" not in data:
        if data["plan"] is None:
            raise PlanError(f"{path}: the result holds no plan (status {data.get('status')!r})")
        data = data["plan"]
    try:
        return parse_plan(data)
    except PlanError as exc:
        raise PlanError(f"{path}: {exc}") from None


def datasets_loc(cluster: str) -> str:
    """The location of a cluster's dataset list in messages: ``datasets.A1``,
    or ``datasets['A 1']`` for a name that is not an ASCII identifier."""
    return key_loc("datasets", cluster, "plan")


def check_plan_names(instance, plan: Plan) -> None:
    """Every model, cluster and dataset the plan names exists in ``instance``.

    Parameters
    ----------
    instance : Instance
    plan : Plan

    Raises
    ------
    PlanError
        ``epochs[k].model: unknown model 'x'``, ``epochs[k].cluster: ...``,
        ``datasets.A: unknown cluster ...`` / ``unknown dataset ...`` /
        ``a dataset is listed twice`` (the first offence).
    """
    for k, e in enumerate(plan.epochs):
        if e.model not in instance.model_index:
            raise PlanError(f"epochs[{k}].model: unknown model {e.model!r}")
        if e.cluster not in instance.cluster_index:
            raise PlanError(f"epochs[{k}].cluster: unknown cluster {e.cluster!r}")
    for cluster, held in plan.datasets.items():
        loc = datasets_loc(cluster)
        if cluster not in instance.cluster_index:
            raise PlanError(f"{loc}: unknown cluster {cluster!r}")
        for j, d in enumerate(held):
            if d not in instance.dataset_index:
                raise PlanError(f"{loc}[{j}]: unknown dataset {d!r}")
        if len(set(held)) != len(held):
            raise PlanError(f"{loc}: a dataset is listed twice")


__all__ = ["Epoch", "Plan", "parse_plan", "check_allocations", "load_plan", "check_plan_names", "datasets_loc"]
