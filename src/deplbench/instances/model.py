"""The instance model and its JSON format (DepL paper Sec. III, eqs. (1)–(8)).

One validated pydantic v2 model, :class:`Instance`, carries everything the
problem (2)–(6) needs: models (full DNN and compressed versions) with their
loss law (8), the allowed model switches with their loss jumps, the training
clusters, the datasets, the transfer costs β(d, n), the targets ℓ(0), ℓmax, ω,
Tmax, the horizon K̄, and the two variant flags where the paper's printed
equations contradict its text (docs/DESIGN.md, "Model semantics"):

``transfer_cost_mode``
    ``"once"`` (default, the text: a one-time transfer before training) or
    ``"per_epoch"`` (β inside Σ_k in the printed eq. (2)).
``data_rule``
    ``"intended"`` (default, the text: inactive nodes neither receive nor use
    datasets, so a cluster may hold data only if it trains at least once) or
    ``"printed"`` (eq. (6) for every k: a cluster holding data trains in every
    epoch).

Validation lives in the model's validators and raises messages that name the
field (``clusters[1].capacity: ...``); :func:`parse_instance` and
:func:`load_instance` turn them into :class:`~deplbench.errors.InstanceError`.

Examples
--------
>>> from deplbench.instances.model import parse_instance
>>> inst = parse_instance({
...     "name": "toy", "initial_loss": 10, "loss_max": 5, "omega": 0.9,
...     "time_max": 10, "horizon": 4,
...     "models": [{"name": "m0", "size": 0, "compute": 1, "loss_scale": 2,
...                 "loss_offset": 0, "decay": "none",
...                 "improvement": {"kind": "point", "value": 1}}],
...     "clusters": [{"name": "A", "capacity": 10, "unit_cost": 1, "bandwidth": 1}],
...     "datasets": [{"name": "d0", "size": 1, "usefulness": 1}]})
>>> inst.n_models, inst.n_clusters
(1, 1)
"""

from __future__ import annotations

import unicodedata
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Final, Literal

import numpy as np
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    FailFast,
    Field,
    PrivateAttr,
    ValidationError,
    model_validator,
)

from deplbench.errors import InstanceError
from deplbench.instances import datalaw
from deplbench.instances.distributions import Distribution
from deplbench.instances.jsondoc import MAX_NESTING, check_shape, key_loc, read_json, reject_unknown_fields
from deplbench.instances.magnitudes import MAX_TIME_MAX, MIN_OMEGA, check_magnitudes, omega_range, time_max_range
from deplbench.limits import as_path

FORMAT_VERSION: Final = 1
#: Largest accepted horizon K̄. Every layer allocates arrays with a K̄ axis
#: (decay tables, scenario draws), so an absurd K̄ such as 10^9 would pass
#: validation and then exhaust memory (the process is killed, no message);
#: 10^5 epochs is three orders of magnitude beyond the paper's K̄ = 100.
MAX_HORIZON = 100_000
#: Number fields are strict (docs/instances.md §1): a JSON number and nothing
#: else. Without ``strict`` pydantic reads ``true`` as 1 and ``"0.9"`` as 0.9,
#: silently.
_Finite = Annotated[float, Field(allow_inf_nan=False, strict=True)]


def _read_only(array: np.ndarray) -> np.ndarray:
    """``array``, read-only: an instance's cached arrays (``unit_cost``, ``capacity``, ...) are
    shared by every later call, so an in-place change (``inst.unit_cost *= 2``) would make
    every solve and evaluation disagree with the instance's own fields; numpy refuses it."""
    array.setflags(write=False)
    return array


def _plain_int(value: Any) -> Any:
    """NumPy integers are integers (callers compute sizes with NumPy)."""
    return int(value) if isinstance(value, np.integer) else value


def _not_bool(value: Any) -> Any:
    # ``True == 1`` in Python, so ``Literal[1]`` alone accepts ``true``.
    if isinstance(value, bool):
        raise ValueError(f"must be the integer {FORMAT_VERSION}, got {value!r}")
    return value


#: An integer field: a JSON integer (or a NumPy integer), never a bool, a
#: float or a string.
StrictInt = Annotated[int, BeforeValidator(_plain_int), Field(strict=True)]


#: Characters that print nothing: white space and format characters (zero-width space U+200B, joiners,
#: the BOM, bidirectional marks).
_INVISIBLE = ("Zs", "Cf")


def _printable_name(value: str) -> str:
    # names label rows of tables, CSV files and one-line messages: a blank one
    # would leave an empty label, a control character would break the line
    if not value.strip() or all(unicodedata.category(ch) in _INVISIBLE for ch in value):
        raise ValueError(f"must not be blank (only white space or invisible characters), got {value!r}")
    if value != value.strip() or unicodedata.category(value[0]) == "Cf" or unicodedata.category(value[-1]) == "Cf":
        # "A" and "A " (or "A" + U+200B) would count as two names yet print as one
        raise ValueError(f"must not start or end with white space or an invisible character, got {value!r}")
    if any(unicodedata.category(ch) in ("Cc", "Zl", "Zp") for ch in value):
        raise ValueError(f"must not hold control characters or line breaks (tab, newline, U+2028, ...), "
                         f"got {value!r}")
    return value


def first_names(names, shown: int = 12) -> str:
    """The sorted names, the first ``shown`` of them and how many more: a message stays one readable line
    whatever the instance's size."""
    names = sorted(names)
    more = len(names) - shown
    return repr(names[:shown])[:-1] + (f", ... and {more} more]" if more > 0 else "]")


#: A name: non-empty, no white space at either end, no control character or line break.
Name = Annotated[str, Field(min_length=1), AfterValidator(_printable_name)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelVersion(_Strict):
    """A model version m ∈ M (full DNN or a compressed one), eq. (8).

    The run term at global epoch k is ``−γ(S) · loss_scale · decay(k) · X`` with
    ``decay(k) = 1/sqrt(k + loss_offset)`` (``"inv_sqrt"``, eq. (8)) or 1
    (``"none"``, the deterministic knapsack reduction of Property 1).
    """

    name: Name
    size: _Finite = Field(ge=0, description="s(m): model size, eq. (1) numerator of the communication term")
    compute: _Finite = Field(gt=0, description="c_m: per-epoch compute need on one reference dataset")
    loss_scale: _Finite = Field(gt=0, description="A_m of eq. (8)")
    loss_offset: _Finite = Field(default=0.0, ge=0, description="B_m of eq. (8)")
    decay: Literal["inv_sqrt", "none"] = "inv_sqrt"
    improvement: Distribution = Field(description="X_m of eq. (8): the per-epoch improvement multiplier")


class Switch(_Strict):
    """An allowed switch m → m' and its loss jump l_sw (positive on average)."""

    from_model: str
    to_model: str
    jump: Distribution


class Cluster(_Strict):
    """A training cluster n ∈ N: capacity r(n), unit cost κ(n), bandwidth b(n)."""

    name: Name
    capacity: _Finite = Field(gt=0, description="r(n), eq. (5)")
    unit_cost: _Finite = Field(ge=0, description="κ(n), eq. (2)")
    bandwidth: _Finite = Field(gt=0, description="b(n), eq. (1)")


class Dataset(_Strict):
    """A dataset d ∈ D: size σ_d and usefulness u_d (see ``datalaw``)."""

    name: Name
    size: _Finite = Field(gt=0)
    usefulness: _Finite = Field(gt=0)


class TransferCost(_Strict):
    """β(d, n): the network cost of sending dataset d to cluster n."""

    dataset: str
    cluster: str
    cost: _Finite = Field(ge=0)


class Provenance(BaseModel):
    """Where an instance came from: generator, parameters, seed, assumptions."""

    model_config = ConfigDict(extra="allow", frozen=True)
    generator: str = "manual"
    parameters: dict[str, Any] = Field(default_factory=dict)
    seed: StrictInt | None = None
    assumptions: Annotated[list[str], FailFast()] = Field(default_factory=list)


class Instance(_Strict):
    """One instance of problem (2)–(6) (DepL Sec. III); ``docs/instances.md`` documents every field.

    Attributes
    ----------
    initial_loss, loss_max, omega : float
        ℓ(0), and the target of eq. (3): the ω-quantile of ℓ(K) at most ℓmax.
    time_max : float
        Tmax, the deadline of eq. (4).
    horizon : int
        K̄, the largest number of epochs.
    transfer_cost_mode, data_rule : str
        The two variant flags of the module docstring.
    models, switches, clusters, datasets, transfer_costs : list
        The model versions with their loss laws (eq. (8)), the switch jumps,
        the clusters, the datasets and the transfer costs β(d, n).
    name, format_version, provenance
        The instance's name, the format's version (1), and the generator,
        parameters, seed and assumptions behind it.
    """

    format_version: Annotated[Literal[1], BeforeValidator(_not_bool)] = FORMAT_VERSION
    name: Name = "instance"
    initial_loss: _Finite = Field(description="ℓ(0)")
    loss_max: _Finite = Field(description="ℓmax: the bound on the ω-quantile of ℓ(K), eq. (3)")
    omega: Annotated[_Finite, BeforeValidator(omega_range)] = Field(ge=MIN_OMEGA, le=1 - MIN_OMEGA, description=(
        f"ω: the quantile level of eq. (3), in [{MIN_OMEGA:g}, 1 − {MIN_OMEGA:g}] (1 − ω must not round to 1)"))
    time_max: Annotated[_Finite, BeforeValidator(time_max_range)] = Field(gt=0, le=MAX_TIME_MAX, description=(
        f"Tmax, eq. (4); at most {MAX_TIME_MAX:g}, so that Tmax·(1 + 1e-9) stays finite"))
    horizon: StrictInt = Field(ge=1, le=MAX_HORIZON, description="K̄: the largest number of epochs")
    transfer_cost_mode: Literal["once", "per_epoch"] = "once"
    data_rule: Literal["intended", "printed"] = "intended"
    # FailFast: a list stops at its first bad item, so a file of 10^6 wrong items costs one error, not
    # 10^6 error records (gigabytes) and an error line of megabytes
    models: Annotated[list[ModelVersion], FailFast()] = Field(min_length=1)
    switches: Annotated[list[Switch], FailFast()] = Field(default_factory=list)
    clusters: Annotated[list[Cluster], FailFast()] = Field(min_length=1)
    datasets: Annotated[list[Dataset], FailFast()] = Field(min_length=1)
    transfer_costs: Annotated[list[TransferCost], FailFast()] = Field(default_factory=list)
    provenance: Provenance = Field(default_factory=Provenance)
    # on a reduced instance (formulations.model.preprocess): the original and the indices of its kept
    # models and switches there, so that its scenarios are the original's (no draw shifts)
    _scenario_source: tuple | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _consistency(self) -> "Instance":
        check_targets(self)
        check_unique_names(self)
        model_names = {m.name for m in self.models}
        seen = set()
        for i, sw in enumerate(self.switches):
            for attr in ("from_model", "to_model"):
                if getattr(sw, attr) not in model_names:
                    raise ValueError(
                        f"switches[{i}].{attr}: unknown model {getattr(sw, attr)!r} "
                        f"(models are {first_names(model_names)})"
                    )
            if sw.from_model == sw.to_model:
                raise ValueError(f"switches[{i}]: a switch from {sw.from_model!r} to itself is implicit, remove it")
            if (sw.from_model, sw.to_model) in seen:
                raise ValueError(f"switches[{i}]: duplicate switch {sw.from_model!r} -> {sw.to_model!r}")
            seen.add((sw.from_model, sw.to_model))
        cluster_names = {c.name for c in self.clusters}
        dataset_names = {d.name for d in self.datasets}
        pairs = set()
        for i, tc in enumerate(self.transfer_costs):
            if tc.dataset not in dataset_names:
                raise ValueError(f"transfer_costs[{i}].dataset: unknown dataset {tc.dataset!r}")
            if tc.cluster not in cluster_names:
                raise ValueError(f"transfer_costs[{i}].cluster: unknown cluster {tc.cluster!r}")
            if (tc.dataset, tc.cluster) in pairs:
                raise ValueError(f"transfer_costs[{i}]: duplicate entry for ({tc.dataset!r}, {tc.cluster!r})")
            pairs.add((tc.dataset, tc.cluster))
        check_magnitudes(self)  # finite, resolvable numbers in binary64 (instances.magnitudes)
        return self

    @property
    def is_deterministic(self) -> bool:
        """Whether every random term of eq. (8) — each model's improvement and each switch's
        jump — is a point mass: every plan's loss trajectory is then one exact path, so one
        scenario is every scenario and one trajectory judges a plan exactly."""
        return (all(m.improvement.is_deterministic for m in self.models)
                and all(sw.jump.is_deterministic for sw in self.switches))

    # ------------------------------------------------------------------ sizes
    @property
    def scenario_source(self) -> tuple | None:
        """(original, model indices, switch indices) of a reduced instance, else None."""
        return self._scenario_source

    @property
    def n_models(self) -> int:
        return len(self.models)

    @property
    def n_clusters(self) -> int:
        return len(self.clusters)

    @property
    def n_datasets(self) -> int:
        return len(self.datasets)

    # ---------------------------------------------------------------- indices
    @cached_property
    def model_index(self) -> dict[str, int]:
        return {m.name: i for i, m in enumerate(self.models)}

    @cached_property
    def cluster_index(self) -> dict[str, int]:
        return {c.name: i for i, c in enumerate(self.clusters)}

    @cached_property
    def dataset_index(self) -> dict[str, int]:
        return {d.name: i for i, d in enumerate(self.datasets)}

    @cached_property
    def switch_pairs(self) -> list[tuple[int, int]]:
        """Allowed switches (i, j), i ≠ j, as model indices; index p is the
        column of the scenario jump matrix."""
        return [(self.model_index[s.from_model], self.model_index[s.to_model]) for s in self.switches]

    @cached_property
    def switch_index(self) -> dict[tuple[int, int], int]:
        return {pair: p for p, pair in enumerate(self.switch_pairs)}

    @cached_property
    def allowed(self) -> np.ndarray:
        """Boolean (|M|, |M|) matrix: ``allowed[i, j]`` iff epoch k may use j
        after i (staying on a model is always allowed)."""
        a = np.eye(self.n_models, dtype=bool)
        for i, j in self.switch_pairs:
            a[i, j] = True
        return _read_only(a)

    # ------------------------------------------------------------ parameters
    @cached_property
    def model_compute(self) -> np.ndarray:
        return _read_only(np.array([m.compute for m in self.models]))

    @cached_property
    def model_size(self) -> np.ndarray:
        return _read_only(np.array([m.size for m in self.models]))

    @cached_property
    def capacity(self) -> np.ndarray:
        return _read_only(np.array([c.capacity for c in self.clusters]))

    @cached_property
    def unit_cost(self) -> np.ndarray:
        return _read_only(np.array([c.unit_cost for c in self.clusters]))

    @cached_property
    def bandwidth(self) -> np.ndarray:
        return _read_only(np.array([c.bandwidth for c in self.clusters]))

    @cached_property
    def transfer_matrix(self) -> np.ndarray:
        """β as a (|D|, |N|) array (absent entries are 0)."""
        beta = np.zeros((self.n_datasets, self.n_clusters))
        for tc in self.transfer_costs:
            beta[self.dataset_index[tc.dataset], self.cluster_index[tc.cluster]] = tc.cost
        return _read_only(beta)

    def decay_for(self, n_epochs: int) -> np.ndarray:
        """(n_epochs, |M|) array of decay_m(k), k = 1..n_epochs (eq. (8)).

        Defined past K̄ too, so a plan longer than the horizon can still be
        simulated (and reported as violating it)."""
        k = np.arange(1, n_epochs + 1, dtype=float)[:, None]
        offset = np.array([m.loss_offset for m in self.models])[None, :]
        inv_sqrt = np.array([m.decay == "inv_sqrt" for m in self.models])[None, :]
        return np.where(inv_sqrt, 1.0 / np.sqrt(k + offset), 1.0)

    def run_scale_for(self, n_epochs: int) -> np.ndarray:
        """(n_epochs, |M|) array of A_m · decay_m(k)."""
        return self.decay_for(n_epochs) * np.array([m.loss_scale for m in self.models])[None, :]

    @cached_property
    def decay_matrix(self) -> np.ndarray:
        """(K̄, |M|) array of decay_m(k) for k = 1..K̄ (eq. (8))."""
        return _read_only(self.decay_for(self.horizon))

    @cached_property
    def run_scale(self) -> np.ndarray:
        """(K̄, |M|) array of A_m · decay_m(k): the loss change at X = 1 and
        γ = 1 is ``−run_scale``."""
        return _read_only(self.decay_matrix * np.array([m.loss_scale for m in self.models])[None, :])

    def data_effect(self, dataset_names) -> tuple[float, float]:
        """(volume V(S), learning multiplier γ(S)) of a dataset set (``datalaw``)."""
        ds = [self.datasets[self.dataset_index[d]] for d in dataset_names]
        volume = datalaw.data_volume(d.size for d in ds)
        gamma = datalaw.learning_multiplier(
            datalaw.useful_volume([d.size for d in ds], [d.usefulness for d in ds])
        )
        return volume, gamma

    @property
    def all_datasets(self) -> list[str]:
        return [d.name for d in self.datasets]

    # ------------------------------------------------------------------- I/O
    def to_json(self) -> str:
        """Canonical JSON (byte-identical for identical instances)."""
        return self.model_dump_json(by_alias=True, indent=2) + "\n"

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json(), encoding="utf-8")

    def with_changes(self, **changes: Any) -> "Instance":
        """A re-validated copy with top-level fields replaced (e.g. targets).

        A reduced instance's :attr:`scenario_source` is kept while the models, switches
        and horizon — what its scenarios are drawn for — are unchanged."""
        data = self.model_dump(by_alias=True)
        data.update(changes)
        out = parse_instance(data)
        if self._scenario_source is not None and not {"models", "switches", "horizon"} & set(changes):
            out._scenario_source = self._scenario_source
        return out


def check_targets(inst: Any) -> None:
    """ℓmax < ℓ(0) (eq. (3)), else ``ValueError`` naming the field: ℓ(0) when it is the odd one out (negative)."""
    if not inst.loss_max < inst.initial_loss:
        raise ValueError(f"initial_loss: must be above loss_max ({inst.initial_loss} <= {inst.loss_max})"
                         if inst.initial_loss < 0 <= inst.loss_max else f"loss_max: must be below "
                         f"initial_loss ({inst.loss_max} >= {inst.initial_loss}): the target would be met "
                         "with no training")


def check_unique_names(inst: Any) -> None:
    """No two models, clusters or datasets of one name, else ``ValueError`` naming the list."""
    for field in ("models", "clusters", "datasets"):
        dup = _duplicates(item.name for item in getattr(inst, field))
        if dup:
            raise ValueError(f"{field}: duplicate names {dup}")


def _duplicates(names) -> list[str]:
    """The names occurring more than once, sorted: one pass with a set.

    Linear in the number of names (``list.count`` per name would be quadratic:
    20,000 clusters would take minutes to load; docs/DESIGN.md, "Input rules")."""
    seen: set[str] = set()
    dup: set[str] = set()
    for name in names:
        if name in seen:
            dup.add(name)
        seen.add(name)
    return sorted(dup)


#: Most validation errors a message lists (the rest counted): the message stays one readable line.
MAX_LISTED_ERRORS = 20


def format_validation_error(exc: ValidationError, prefix: str = "", root: str = "instance") -> str:
    lines = []
    errors = exc.errors()
    for err in errors[:MAX_LISTED_ERRORS]:
        loc = ""
        parts = err["loc"]
        if err["type"] == "extra_forbidden" and parts:
            # Name the unknown key as a key, under the object that holds it:
            # a key such as "0" or "a b" would not read as a location.
            parts, err = parts[:-1], {**err, "msg": f"unknown field {parts[-1]!r} (not part of the format)"}
            if not parts:
                parts = (root,)
        for part in parts:
            if isinstance(part, int):
                loc += f"[{part}]"
            else:
                # pydantic puts the discriminator tag in the location of
                # union members ("improvement.inverse_gamma.shape"): keep it,
                # it tells the user which distribution kind was checked. A key
                # that is not an identifier ("a b", "0") is quoted.
                loc = key_loc(loc, part, root)
        msg = err["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
            # Our model validator already names the field.
            lines.append(f"{prefix}{msg}" if not loc else f"{prefix}{loc}: {msg}")
        else:
            lines.append(f"{prefix}{loc or '<root>'}: {msg}")
    if len(errors) > MAX_LISTED_ERRORS:
        lines.append(f"and {len(errors) - MAX_LISTED_ERRORS} more error(s)")
    # "; " separates the errors, so no single message contains it.
    return "; ".join(lines)


def parse_instance(data: Any) -> Instance:
    """Validate a JSON-like dict into an :class:`Instance`.

    Raises
    ------
    InstanceError
        With a message naming each offending field and the rule it breaks.
    """
    if not isinstance(data, dict):
        raise InstanceError(f"instance: expected a JSON object, got {type(data).__name__}")
    reject_unknown_fields(data, Instance.model_fields, "instance", InstanceError)
    check_shape(data)
    try:
        return Instance.model_validate(data)
    except ValidationError as exc:
        raise InstanceError(f"invalid instance: {format_validation_error(exc)}") from None


def load_instance(path: str | Path) -> Instance:
    """Read and validate an instance JSON file.

    Parameters
    ----------
    path : str or Path
        A JSON file in the format of ``docs/instances.md``.

    Returns
    -------
    Instance

    Raises
    ------
    InstanceError
        If the file is missing, is not JSON, or is not a valid instance.
    """
    path = as_path(path, "path", InstanceError)
    data = read_json(path, what="instance")
    try:
        return parse_instance(data)
    except InstanceError as exc:
        raise InstanceError(f"{path}: {exc}") from None


def instance_schema() -> dict:
    """The JSON Schema of the instance format (``deplbench schema``)."""
    schema = Instance.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "deplbench instance"
    # The class docstring's summary, not its numpydoc sections.
    schema["description"] = (Instance.__doc__ or "").strip().splitlines()[0]
    return schema


__all__ = [
    "FORMAT_VERSION", "MAX_HORIZON", "MAX_NESTING", "Instance", "ModelVersion", "Switch", "Cluster", "Dataset",
    "TransferCost", "Provenance", "parse_instance", "load_instance", "read_json", "check_shape", "check_targets",
    "check_unique_names", "instance_schema", "format_validation_error", "key_loc", "reject_unknown_fields",
    "first_names"]
