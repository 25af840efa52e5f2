"""Check an outside solver's solution file against a library model (``library verify``).

One job: read a solution in the usual ``.sol`` form — one ``name value``
line per variable, as SCIP, MIPLIB's checker and HiGHS (its ``# Columns``
section) write; comment and header lines are skipped, any other line that is
not ``name value`` is refused, variables not listed are 0 — and judge it against the instance's model of the named kind:

* **feasibility**: every bound, every integrality (|x − round x| ≤
  :data:`INT_TOL`), every linear row and, for the MINLP, every cone row
  a·N² ≤ cc·t, each within :data:`FEAS_TOL` · max(1, |right-hand side|)
  (cones: times max(1, a·N², |cc·t|)); the violated ones are named;
* **objective**: c·x, and its relative gap to the ``.solu`` value of that kind;
* **the plan** it encodes (the formulation's own decoding): its exact real-x
  cost, in-sample violations, and its out-of-sample verdict
  (:func:`~deplbench.formulations.evaluation.evaluate.evaluate_plan`, including the
  exact-probability keys ``violation_lo``, ``violation_hi``,
  ``exact_verdict`` where the evaluator provides them).

The model is rebuilt from the instance file and the manifest's recipe
(:func:`~deplbench.formulations.milp.saa_model.build_saa_model`, which is
deterministic) and its fingerprint must equal the manifest's
``model_sha256``: a library written by another code version is refused
rather than judged against a different model.
"""

from __future__ import annotations

import hashlib
import math
import os
import re

import numpy as np

from deplbench.benchmarks.library.build import KINDS, library_files
from deplbench.benchmarks.library.solu import read_solu
from deplbench.errors import SolverError
from deplbench.formulations.evaluation.settings import VERIFY_SAMPLES
from deplbench.jsonio import interval_text
from deplbench.limits import read_bytes

#: Feasibility tolerance of rows, bounds and cones (relative to max(1, |rhs|)).
FEAS_TOL = 1e-6
#: Integrality tolerance.
INT_TOL = 1e-6
#: Violations listed by name (the count says how many there are in all).
MAX_LISTED = 10

#: A solver's objective header: SCIP ``objective value: 3``, MIPLIB ``=obj= 3``, HiGHS ``Objective 3``.
_OBJECTIVE = re.compile(r"^(?:objective value:|=obj=|objective)\s*[-+]?\.?[0-9]", re.IGNORECASE)
#: The same header with its value.
_OBJECTIVE_VALUE = re.compile(r"^(?:objective value:|=obj=|objective)\s*([-+]?\.?[0-9]\S*)", re.IGNORECASE)
_SKIP = ("=obj=", "objective", "solution", "model", "feasible", "infeasible", "optimal", "mip_rel_gap",
         "t ", "primal", "dual", "status")


def read_sol(path: str) -> dict[str, float]:
    """``{name: value}`` of a ``.sol`` file (see the module docstring).

    A file with no ``name value`` line is a solution only when a solver's
    header gives its objective as 0 (SCIP's ``objective value:``, MIPLIB's
    ``=obj=``, HiGHS's ``Objective``): SCIP lists no variable of an all-zero
    solution. Any other file giving no variable value (empty, comments and
    blank lines only, headers only, a nonzero objective alone) is refused:
    read as "every variable 0" it would be judged as a solution no solver
    wrote. A line that is neither a header, a comment nor ``name value``
    (a name without its value) is refused naming its number and text.

    Raises
    ------
    SolverError
        When the file is missing, empty or gives no variable value (only
        comments, blank lines or headers without an objective of 0), a line
        is not ``name value``, a value is not a number, or a name is given
        twice (the message names the file and line, its text and names
        escaped by ``repr``).
    """
    if not os.path.exists(path):
        raise SolverError(f"solution: no file {str(path)!r}")
    lines = read_bytes(path, "solution", SolverError).decode("utf-8", errors="replace").splitlines()
    heads = [i for i, t in enumerate(lines) if t.startswith("# Columns")]
    if heads:                         # HiGHS: only the primal "# Columns" section
        first = heads[0] + 1
        last = next((i for i in range(first, len(lines)) if lines[i].startswith("#")), len(lines))
        span = range(first, last)
    else:
        span = range(len(lines))
    out: dict[str, float] = {}
    for i in span:
        text = lines[i].strip()
        low = text.lower()
        if not text or text.startswith(("#", "=")) or low.startswith(_SKIP) or ":" in text.split()[0]:
            continue
        parts = text.split()
        if len(parts) < 2:
            # a name without its value (or a value without its name) is no solution line: refused,
            # since skipping it would judge a file of names alone as the all-zero solution
            raise SolverError(f"solution: {path}, line {i + 1}: {lines[i]!r} is not a `name value` line "
                              "(a name without a value?)")
        try:
            value = float(parts[1])
        except ValueError:
            raise SolverError(f"solution: {path}, line {i + 1}: value {parts[1]!r} of {parts[0]!r} is not a "
                              "number") from None
        if not math.isfinite(value):
            # nan compares false with every bound and row: it would pass them all
            raise SolverError(f"solution: {path}, line {i + 1}: value {parts[1]!r} of {parts[0]!r} is not a "
                              "finite number")
        if parts[0] in out:
            raise SolverError(f"solution: {path}, line {i + 1}: variable {parts[0]!r} given twice")
        out[parts[0]] = value
    if not out and not _zero_objective(lines):
        what = ("is empty" if not lines else "holds only blank lines" if not any(t.strip() for t in lines) else
                "holds no `name value` line, and its objective header is not 0 (SCIP's all-zero solution "
                "alone lists no variable)" if any(_OBJECTIVE.match(t.strip()) for t in lines) else
                "holds no `name value` line and no objective (only comments, blank lines or headers)")
        raise SolverError(f"solution: {path}: the file {what}; a solution lists one `name value` line per "
                          "nonzero variable")
    return out


def _zero_objective(lines: list[str]) -> bool:
    """Whether a solver's objective header states 0: the one file without
    ``name value`` lines that is a solution (SCIP lists no variable of an
    all-zero solution, whose objective is 0). A header with another value
    and no variable cannot be the all-zero solution: the values are missing."""
    for t in lines:
        m = _OBJECTIVE_VALUE.match(t.strip())
        if m:
            try:
                return float(m.group(1)) == 0.0
            except ValueError:
                return False
    return False


def rebuild_model(root: str, rec: dict, tolerance: float):
    """The entry's model, rebuilt and checked against the manifest's fingerprint."""
    from deplbench.formulations.milp.backends import quiet_stdout
    from deplbench.formulations.milp.saa_model import build_saa_model, model_digest
    from deplbench.instances.model import load_instance

    path = os.path.join(root, rec["instance"])
    want = rec.get("instance_sha256")
    if want is not None and os.path.isfile(path):
        # an edited instance file changes the model too: name the file, the change the user can undo
        # (the bounded read every user file goes through)
        if hashlib.sha256(read_bytes(path, "instance", SolverError, decompress=False)).hexdigest() != want:
            raise SolverError(f"library: {rec['instance']} of {rec['name']!r} is not the file the library "
                              "was built with (its SHA-256 differs from the manifest's instance_sha256); "
                              "restore it or rebuild the library")
    inst = load_instance(path)
    with quiet_stdout():
        model = build_saa_model(inst, rec["scenarios"], rec.get("seed", 0), rec.get("formulation") or "fast",
                                pwl_tolerance=tolerance)
    if model_digest(model) != rec.get("model_sha256"):
        raise SolverError(f"library: the model of {rec['name']!r} rebuilt by this deplbench differs from the "
                          "library's (another code version wrote it); rebuild the library")
    return inst, model


def _vector(model, kind: str, values: dict) -> np.ndarray:
    """Column values in model order; unknown names are an error naming them."""
    from deplbench.formulations.milp.saa_model import minlp_column_names

    index = {n: i for i, n in enumerate(model.col_names)}
    for i, n in enumerate(minlp_column_names(model.col_names)):
        index.setdefault(n, i)
    bad = sorted(set(values) - set(index))
    if bad:
        raise SolverError(f"solution: {len(bad)} variable(s) not in the {kind} model of this instance, e.g. "
                          f"{', '.join(map(repr, bad[:3]))}")
    x = np.zeros(len(model.col_names))
    for n, v in values.items():
        x[index[n]] = v
    return x


def _violations(model, kind: str, x: np.ndarray) -> list[tuple[float, str]]:
    """(size, message) of every violated bound, integrality, row and cone."""
    out = []
    names = model.col_names
    for i in np.flatnonzero(~np.isfinite(x)):
        out.append((math.inf, f"bound: {names[i]} = {float(x[i])!r} is not a finite number"))
    for i in np.flatnonzero(x < model.lb - FEAS_TOL * np.maximum(1.0, np.abs(model.lb))):
        out.append((model.lb[i] - x[i], f"bound: {names[i]} = {float(x[i])!r} < lower bound {float(model.lb[i])!r}"))
    for i in np.flatnonzero(x > model.ub + FEAS_TOL * np.maximum(1.0, np.abs(model.ub))):
        out.append((x[i] - model.ub[i], f"bound: {names[i]} = {float(x[i])!r} > upper bound {float(model.ub[i])!r}"))
    frac = np.abs(x - np.rint(x))
    for i in np.flatnonzero(model.integer & (frac > INT_TOL)):
        out.append((frac[i], f"integrality: {names[i]} = {float(x[i])!r} is not integer"))
    A, lo, hi, rnames = model.pwl_rows() if kind == "pwl" else (model.A, model.row_lo, model.row_hi,
                                                                 model.row_names)
    act = A @ x
    with np.errstate(invalid="ignore"):
        below = lo - act - FEAS_TOL * np.maximum(1.0, np.abs(lo))
        above = act - hi - FEAS_TOL * np.maximum(1.0, np.abs(hi))
    for r in np.flatnonzero(below > 0):
        out.append((lo[r] - act[r], f"row {rnames[r]}: activity {float(act[r])!r} < {float(lo[r])!r}"))
    for r in np.flatnonzero(above > 0):
        out.append((act[r] - hi[r], f"row {rnames[r]}: activity {float(act[r])!r} > {float(hi[r])!r}"))
    if kind == "minlp":
        c = model.cone
        lhs = c["a"] * x[c["n"]] ** 2
        rhs = x[c["cost"]] * x[c["time"]]
        tol = FEAS_TOL * np.maximum(1.0, np.maximum(np.abs(lhs), np.abs(rhs)))
        for k in np.flatnonzero(lhs - rhs > tol):
            out.append((lhs[k] - rhs[k],
                        f"row cone_{c['name'][k]}: a·N² = {float(lhs[k])!r} > cc·t = {float(rhs[k])!r}"))
    # largest first within each kind (bounds, integrality, rows): no kind hides another
    kind_of = {"bound": 0, "integrality": 1}
    out.sort(key=lambda v: (kind_of.get(v[1].split(":")[0], 2), -v[0]))
    return out


def _listed(viol: list[tuple[float, str]]) -> list[str]:
    """At most MAX_LISTED messages of each kind (bounds, integrality, rows);
    among rows the largest violation of each row family (its name without a
    trailing number, e.g. every tangent of one configuration) comes first,
    so that one broken block does not hide another."""
    out: list[str] = []
    per: dict[str, int] = {}
    rows = [m for _, m in viol if m.startswith("row ")]
    for _, msg in viol:
        head = msg.split(":")[0]
        if head in ("bound", "integrality") and per.get(head, 0) < MAX_LISTED:
            per[head] = per.get(head, 0) + 1
            out.append(msg)
    first, seen = [], set()
    for msg in rows:
        family = re.sub(r"_\d+$", "", msg.split(":")[0])
        if family not in seen:
            seen.add(family)
            first.append(msg)
    out += (first + [m for m in rows if m not in set(first)])[:MAX_LISTED]
    return out


def _plan_report(inst, model, x: np.ndarray, samples: int, seed: int) -> dict:
    """The plan a feasible solution encodes, exactly costed and judged out of sample."""
    from deplbench.formulations.evaluation.evaluate import evaluate_plan

    xm = np.array(x[:model.n_master_cols])
    xm[model.integer[:model.n_master_cols]] = np.rint(xm[model.integer[:model.n_master_cols]])
    choice = model.formulation.choice_from_solution(xm)
    if choice is None:
        return {"decoded": False, "message": "the solution's counts do not cover its epochs"}
    data = model.data
    plan = choice.to_plan(data)
    # exact=True: the rigorous violation bounds (no sampling) where the
    # instance's laws allow them; otherwise exact_reason says why not
    ev = evaluate_plan(inst, plan, samples=samples, seed=seed, trajectory=False, exact=True).to_dict()
    keep = ("cost", "verdict", "verdict_basis", "feasible", "quantile", "quantile_ci", "quantile_ci_level",
            "confidence", "ci_method", "samples", "exact", "mc_verdict", "certified_verdict", "mc_certified_verdict",
            "violation_count", "violation_lb", "violation_ub", "violation_lo", "violation_hi", "exact_verdict",
            "exact_reason")
    return {"decoded": True, "epochs": plan.n_epochs, "exact_cost": choice.cost,
            "in_sample_violations": int(choice.violations) * (data.S_nominal if data.deterministic else 1),
            "allowed_violations": int(data.p), "plan": plan.to_dict(),
            "out_of_sample": {k: ev[k] for k in keep if k in ev}}


def verify_solution(root: str, name: str, solution: str, kind: str = "pwl", samples: int = VERIFY_SAMPLES,
                    seed: int = 0) -> dict:
    """Judge the solution file ``solution`` against model ``kind`` of ``name``.

    Parameters
    ----------
    root : str
        A library directory.
    name : str
        An instance of the library with model files.
    solution : str
        A ``.sol`` file (module docstring).
    kind : {"pwl", "minlp"}
        Which model: the PWL MILP (pwl/<name>.mps.gz) or the MINLP (minlp/<name>.nl.gz).
    samples, seed : int
        Out-of-sample trajectories judging the decoded plan.

    Returns
    -------
    dict
        ``feasible``, ``violations`` (by name: the largest :data:`MAX_LISTED`
        bound, integrality and row violations each), ``n_violations``, ``objective``, ``solu`` (tag and value),
        ``gap`` ((objective − value)/max(1, |value|)), ``plan`` (for a
        feasible solution), ``tolerances``.

    Raises
    ------
    SolverError
        Unknown kind or name, an unreadable solution, a library written by
        another code version.
    """
    if kind not in KINDS:
        raise SolverError(f"model: must be one of {list(KINDS)}, got {kind!r}")
    manifest = library_files(root)
    rec = next((e for e in manifest["entries"] if e.get("name") == name), None)
    if rec is None:
        raise SolverError(f"name: {name!r} is not an instance of the library {str(root)!r}")
    if not rec.get(kind):
        raise SolverError(f"name: {name!r} has no model file ({rec.get('note') or 'none written'})")
    values = read_sol(solution)
    inst, model = rebuild_model(root, rec, float(manifest.get("pwl_tolerance", 1e-4)))
    x = _vector(model, kind, values)
    viol = _violations(model, kind, x)
    objective = float(model.cost @ x)
    solu = read_solu(os.path.join(root, KINDS[kind][2])).get(name)
    gap = None
    if solu is not None and solu.value is not None:
        gap = (objective - solu.value) / max(1.0, abs(solu.value))
    listed = _listed(viol)
    out = {"library": str(root), "name": name, "model": kind, "file": rec[kind], "solution": str(solution),
           "variables_given": len(values), "feasible": not viol, "n_violations": len(viol),
           "violations": listed, "objective": objective,
           "solu": None if solu is None else {"tag": solu.tag, "value": solu.value}, "gap": gap,
           "tolerances": {"feasibility": FEAS_TOL, "integrality": INT_TOL,
                          "pwl_relative": float(manifest.get("pwl_tolerance", math.nan))}}
    if not viol:
        out["plan"] = _plan_report(inst, model, x, samples, seed)
    return out


def format_verify(res: dict) -> str:
    """The text report of ``deplbench library verify``."""
    lines = [(f"{res['name']} ({res['model']}: {res['file']}), solution {res['solution']} "
              f"({res['variables_given']} values)")]
    if res["feasible"]:
        lines.append(f"feasible: yes (rows, bounds, integrality{', cones' if res['model'] == 'minlp' else ''} "
                     f"within {res['tolerances']['feasibility']:g})")
    else:
        lines.append(f"feasible: NO, {res['n_violations']} violation(s); largest:")
        lines += [f"  {m}" for m in res["violations"]]
    lines.append(f"objective: {res['objective']!r}")
    if res["solu"] is not None:
        s = res["solu"]
        lines.append(f".solu: {s['tag']} {s['value']!r}; gap {res['gap']:+.3e}" if res["gap"] is not None
                     else f".solu: {s['tag']}")
    plan = res.get("plan")
    if plan and plan.get("decoded"):
        oos = plan["out_of_sample"]
        lines.append(f"plan: {plan['epochs']} epochs, exact real-x cost {plan['exact_cost']!r}, in-sample "
                     f"violations {plan['in_sample_violations']} (allowed {plan['allowed_violations']})")
        lines.append(_monte_carlo_line(oos))
        lines.append(_exact_line(oos))
        lines.append(f"verdict: {oos.get('verdict')} ("
                     + ("proven by the exact bounds" if oos.get("verdict_basis") == "exact"
                        else "Monte Carlo estimate, not a proof") + ")")
    elif plan:
        lines.append(f"plan: not decoded ({plan.get('message')})")
    return "\n".join(lines)


def _monte_carlo_line(oos: dict) -> str:
    """The Monte Carlo statements, each with what it is: the quantile estimate
    and its interval's level and method, the estimate's verdict, the
    Clopper–Pearson certificate at its level."""
    ci, level = oos.get("quantile_ci"), oos.get("confidence")
    ci_level = oos.get("quantile_ci_level", level)      # a one-sided interval states its own
    interval = (f"; CI {interval_text(*ci)} at level {ci_level} ({oos.get('ci_method') or 'order-statistic'})"
                if ci else "")
    mc = oos.get("mc_verdict", oos.get("verdict"))
    cert = oos.get("mc_certified_verdict", oos.get("certified_verdict"))
    return (f"out of sample (Monte Carlo, {oos.get('samples')} draws): quantile estimate {oos.get('quantile')!r}"
            f"{interval}; estimate {mc}; chance constraint (3) alone: {cert} at level {level} "
            "(one-sided Clopper-Pearson)")


def _exact_line(oos: dict) -> str:
    """The exact verdict with its bounds on P(ℓ(K) > ℓmax), or why there is none."""
    verdict = oos.get("exact_verdict")
    lo, hi = oos.get("violation_lo"), oos.get("violation_hi")
    if verdict is None:
        return f"exact: no verdict ({oos.get('exact_reason') or 'the evaluator gave none'})"
    if lo is None or hi is None:
        return f"exact: {verdict}" + (f" ({oos['exact_reason']})" if oos.get("exact_reason") else "")
    return f"exact: {verdict} (violation probability in [{lo:.4g}, {hi:.4g}], no sampling)"


__all__ = ["FEAS_TOL", "INT_TOL", "format_verify", "read_sol", "rebuild_model", "verify_solution"]
