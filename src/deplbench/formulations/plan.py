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

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from deplbench.errors import PlanError


class Epoch(BaseModel):
    """One active epoch: model m(k), cluster n with y(k, n) = 1, allocation x(k, n)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    model: str
    cluster: str
    allocation: float = Field(allow_inf_nan=False)


class Plan(BaseModel):
    """Per-epoch choices plus the dataset assignment z(d, n)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    epochs: list[Epoch] = Field(default_factory=list)
    datasets: dict[str, list[str]] = Field(default_factory=dict)

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
    """Validate a JSON-like dict into a :class:`Plan` (raises PlanError)."""
    if not isinstance(data, dict):
        raise PlanError(f"plan: expected a JSON object, got {type(data).__name__}")
    try:
        return Plan.model_validate(data)
    except ValidationError as exc:
        parts = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"]) or "<root>"
            parts.append(f"{loc}: {err['msg']}")
        raise PlanError("invalid plan: " + "; ".join(parts)) from None


def load_plan(path: str | Path) -> Plan:
    """Read a plan JSON file (a bare plan, or a solver result with a ``plan`` key)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PlanError(f"{path}: cannot read plan file ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise PlanError(f"{path}: not a UTF-8 text file (byte {exc.start}: {exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise PlanError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if isinstance(data, dict) and "plan" in data and "epochs" not in data:
        if data["plan"] is None:
            raise PlanError(f"{path}: the result holds no plan (status {data.get('status')!r})")
        data = data["plan"]
    return parse_plan(data)


__all__ = ["Epoch", "Plan", "parse_plan", "load_plan"]
