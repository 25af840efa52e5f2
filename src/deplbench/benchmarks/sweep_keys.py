"""Every key a sweep file may hold: the table the sweep parser checks keys
against (:mod:`deplbench.benchmarks.sweep_parse`) and ``docs/sweeps.md`` is
generated from (:mod:`deplbench.benchmarks.sweep_docs`), so the reference
cannot list a key the parser refuses or miss one it accepts.

Values are checked by the parser (types, bounds, names; one-line
:class:`~deplbench.errors.SweepError` naming the key); an algorithm's
``params``/``grid`` by the solver's own :class:`~deplbench.params.Param`
table, a family's by its generator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SweepKey:
    """One key of a sweep table: TOML type, default, meaning, an example value."""

    type: str
    default: Any
    help: str
    example: str


#: ``[section] → {key: SweepKey}``; sections as the parser names them.
SWEEP_KEYS: dict[str, dict[str, SweepKey]] = {
    "top level": {
        "sweep": SweepKey("table", "{}", "the sweep's own settings ([sweep])", "[sweep]"),
        "instances": SweepKey("array of tables", "required", "instance groups ([[instances]], at least one)",
                              "[[instances]]"),
        "algorithms": SweepKey("array of tables", "required", "algorithm entries ([[algorithms]], at least one)",
                               "[[algorithms]]"),
    },
    "sweep": {
        "name": SweepKey("string", "the file's stem", "the sweep's name (stored with every row)", '"quick"'),
        "description": SweepKey("string", '""', "free text", '"demo"'),
        "time_limit_s": SweepKey("number", "600", "hard wall-clock limit per task, seconds (> 0, ≤ 10⁶); the solver is "
                              "stopped a margin before it, with status time_limit and what it has", "120"),
        "evaluation": SweepKey("table", "{}", "out-of-sample judging of every plan ([sweep.evaluation])",
                               "{ samples = 20000, seed = 0 }"),
        "repetitions": SweepKey("integer", "1", "runs of every task (1..1000), each stored as a row of its "
                                "own; the report gives the runtime's median and IQR over them", "3"),
        "max_tasks": SweepKey("integer", "100000", "cap on the tasks the sweep may expand to (> 0); raise it "
                              "explicitly for a larger grid", "200000"),
    },
    "sweep.evaluation": {
        "samples": SweepKey("integer", "the solver's default", "evaluation samples per plan (> 0)", "20000"),
        "seed": SweepKey("integer", "0", "seed of the evaluation draws (0 to 2**63 − 1)", "0"),
        "closed_loop": SweepKey("table", "absent (no closed loop)",
                                "also simulate plans closed loop: runs, seed, confidence, sets",
                                '{ runs = 10000, seed = 0, sets = ["pact-vgg11"] }'),
    },
    "instances": {
        "id": SweepKey("string", "required", "unique name of the group; algorithms refer to it", '"alexnet"'),
        "set": SweepKey("string", "the id", "the paper/figure set; groups sharing a set are read together",
                        '"alexnet"'),
        "family": SweepKey("string", "required unless path", "generator family (`deplbench generate`)",
                           '"realistic"'),
        "path": SweepKey("string", "none", "an instance JSON file instead of a family (relative to the sweep "
                         "file); a glob "
                         "(`*`, `?`, `[...]`, `**`) gives one instance per matching file inside the sweep "
                         "file's folder tree (symbolic links to folders are not followed; each file counts "
                         "toward `max_tasks`, times `repetitions`)",
                         '"my_instance.json"'),
        "params": SweepKey("table", "{}", "fixed generator parameters", '{ family = "alexnet" }'),
        "grid": SweepKey("table of arrays", "{}", "generator parameters to vary (cartesian product)",
                         "{ n_items = [10, 20] }"),
        "seeds": SweepKey("array of integers", "[0]", "generator seeds (each 0 to 2**63 − 1)", "[0, 1, 2]"),
        "seed": SweepKey("integer", "0", "one generator seed (instead of seeds)", "3"),
        "targets": SweepKey("table", "{}", "ℓmax and ω overrides, each a number or an array (cartesian product)",
                            "{ loss_max = [5.0, 9.0], omega = 0.99 }"),
        "solvers": SweepKey("array of strings", "none", "MILP solvers: each exact task once per solver",
                            '["highs", "scip"]'),
    },
    "algorithms": {
        "name": SweepKey("string", "required", "registry name (`deplbench algorithms`) or oracle", '"depl"'),
        "label": SweepKey("string", "the name", "display label, to tell entries of one algorithm apart; one "
                          "algorithm per label (a report draws one series per label)", '"depl-eta"'),
        "params": SweepKey("table", "{}", "fixed solver parameters (checked against the solver's table)",
                           "{ epsilon = 0.1 }"),
        "grid": SweepKey("table of arrays", "{}", "solver parameters to vary (cartesian product)",
                         "{ eta = [25, 50, 100] }"),
        "instances": SweepKey("array of strings", "every group", "instance group ids this entry runs on",
                              '["alexnet"]'),
        "time_limit_s": SweepKey("number", "[sweep].time_limit_s", "overrides the sweep's per-task limit", "300"),
        "repetitions": SweepKey("integer", "[sweep].repetitions", "runs of each task of this entry", "5"),
        "solvers": SweepKey("array of strings", "the solver parameter's default",
                            "MILP solvers: each task once per solver (exact algorithms with a solver parameter)",
                            '["highs", "scip"]'),
    },
}


def keys(section: str) -> set[str]:
    """The keys allowed in ``section`` (a key of :data:`SWEEP_KEYS`)."""
    return set(SWEEP_KEYS[section])


__all__ = ["SweepKey", "SWEEP_KEYS", "keys"]
