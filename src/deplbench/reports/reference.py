"""Every plan against the proven reference of its instance.

What is compared with what
--------------------------
Each task record says which optimum its algorithm's result is a reference
for (record column ``reference``, from :attr:`deplbench.solvers.base.Solver.reference`):

``exact-static``
    ``milp-exact``: ``cost`` = UB, ``lower_bound`` = LB of the true
    chance-constrained static optimum z*, deterministic (UB = LB when solved).
``certified-static``
    ``milp-certified``: ``cost`` = UB (the best certified plan),
    ``lower_bound`` = LB, each valid at the record's stated confidence.
``adaptive``
    ``adaptive-opt``: ``lower_bound`` = a proven lower bound on the least
    expected cost of any closed-loop policy with P(success) ≥ ω; ``cost`` =
    the one-sided empirical-Bernstein upper confidence bound (Maurer &
    Pontil 2009) on the mean cost of a policy certified feasible, at level
    1 − (1 − c)/2, jointly at the record's confidence c (default 0.95) with
    the one-sided Clopper–Pearson lower bound on that policy's P(success)
    (union bound): an upper bound on the optimum at confidence c, not a
    sample mean. The card's "confidence" is c.
``saa``
    the MILP on S scenarios: the optimum of its sample only, kept as the
    "SAA ratio" and never called the optimum of the problem.

A static plan is compared with the exact-static reference where one exists,
else with the certified bracket (cost/UB and cost/LB: the true ratio
cost/z* lies between them, at the bracket's confidence). A closed-loop
policy (record ``cl_mode == "policy"``) is compared, by its mean
closed-loop cost, with the adaptive optimum. References are picked from
the records, never by algorithm name; records written before the column
existed are read as: a ``diagnostics.bracket`` → certified-static, an exact
solver with S scenarios → saa, a scenario-free exact solver →
exact-static.

Feasibility of a plan is read in this order: the exact verdict
(``exact_verdict``: "proven feasible" / "proven infeasible" / "undecided",
from exact violation probabilities), then the certified verdict (a
Clopper–Pearson bound on P(ℓ(K) > ℓmax) at the evaluation's confidence);
the Monte Carlo ω-quantile estimate is kept as the cross-check.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from deplbench.reports.data import finite_or

#: The reference kinds a record may declare (``Solver.reference``).
EXACT, CERTIFIED, ADAPTIVE, SAA = "exact-static", "certified-static", "adaptive", "saa"

#: Exact verdicts of the evaluation (``exact_verdict``).
PROVEN_FEASIBLE, PROVEN_INFEASIBLE = "proven feasible", "proven infeasible"
CERTIFIED_FEASIBLE = "certified feasible"

#: Relative tolerance under which a ratio counts as 1 (rounding of costs).
RATIO_TOL = 1e-6

REFERENCE_COLUMNS = ("instance_key", "kind", "ub", "lb", "source", "confidence")

PLAN_COLUMNS = ("group", "algorithm", "instance_key", "loss_max", "omega", "cost", "policy",
                "reference", "ratio_ub", "ratio_lb", "ratio_saa", "feasibility", "mc_met",
                "missed", "p_success", "ratio_adaptive")


def _field(row, name: str):
    """A record column, else the same key of the stored evaluation."""
    v = row.get(name)
    if v is None or (isinstance(v, float) and math.isnan(v)) or v == "":
        ev = row.get("evaluation_d")
        v = ev.get(name) if isinstance(ev, dict) else None
    return v


def reference_kind(df: pd.DataFrame) -> pd.Series:
    """The reference kind of every row ("" for a plain algorithm)."""
    if df.empty:
        return pd.Series(dtype=object, index=df.index)
    declared = (df["reference"].fillna("").astype(str) if "reference" in df
                else pd.Series("", index=df.index))
    out = []
    for dec, diag, exact, scen in zip(declared, df["diagnostics_d"], df["is_exact"],
                                      df["scenarios"]):
        if dec:
            out.append(dec)
        elif isinstance(diag, dict) and isinstance(diag.get("bracket"), dict):
            out.append(CERTIFIED)
        elif bool(exact):
            out.append(SAA if pd.notna(scen) else EXACT)
        else:
            out.append("")
    return pd.Series(out, index=df.index, dtype=object)


def _at_own_level(diag: dict, row) -> bool:
    """Whether an adaptive-opt record brackets the optimum at its instance's ω
    (its target ``diagnostics["omega"]``, when recorded, equals the row's ω)."""
    target, omega = finite_or(diag.get("omega")), finite_or(row.get("omega"))
    return math.isnan(target) or math.isnan(omega) or abs(target - omega) <= 1e-12


def references(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (instance, reference kind): the bounds UB and LB.

    Per kind the row with the narrowest relative width (UB − LB)/UB is kept
    (each is valid on its own); for ``saa`` the run with the most scenarios
    S (fewer scenarios loosen the SAA and lower its cost). An ``adaptive``
    record whose target level (parameter ``omega``) is not the instance's ω
    brackets another optimum and is left out (the matched-risk comparison,
    :mod:`deplbench.reports.adaptive`, uses it).

    Returns
    -------
    pandas.DataFrame
        :data:`REFERENCE_COLUMNS`; ``lb`` = ``ub`` for an SAA optimum and for
        an exact-static row solved to optimality without a separate bound.
    """
    if df.empty:
        return pd.DataFrame(columns=list(REFERENCE_COLUMNS))
    kind = reference_kind(df)
    rows = []
    ok = df["status"].isin(("optimal", "feasible", "time_limit"))
    for idx in df.index[(kind != "") & ok]:
        r, k = df.loc[idx], kind[idx]
        diag = r["diagnostics_d"] if isinstance(r["diagnostics_d"], dict) else {}
        if k == ADAPTIVE and not _at_own_level(diag, r):
            # a bracket at a stricter level (parameter omega, for matched-risk
            # comparisons) is not the optimum at the instance's ω: its LB may
            # exceed that optimum
            continue
        b = diag.get("bracket") if isinstance(diag.get("bracket"), dict) else {}
        # a bracket without a certified plan has no UB (its row's cost is not one)
        ub = (finite_or((b.get("upper_bound") or {}).get("value", math.nan)) if b
              else finite_or(r["cost"]))
        lb = finite_or(r["lower_bound"])
        if k == SAA:
            if r["status"] != "optimal":
                continue
            lb = ub
        elif k == EXACT and math.isnan(lb) and r["status"] == "optimal":
            lb = ub
        if math.isnan(ub) and math.isnan(lb):
            continue
        # a certified bracket's own level; an adaptive bracket's joint one (UB and P(success) together)
        conf = (finite_or(b.get("confidence")) if b else finite_or(diag.get("confidence")) if k == ADAPTIVE
                else math.nan)
        rows.append({"instance_key": r["instance_key"], "kind": k, "ub": ub, "lb": lb,
                     "source": r["algorithm"], "confidence": conf,
                     "_w": (ub - lb) / ub if ub > 0 and not math.isnan(lb) else math.inf,
                     "_s": -finite_or(r["scenarios"]) if k == SAA else 0.0})
    if not rows:
        return pd.DataFrame(columns=list(REFERENCE_COLUMNS))
    out = pd.DataFrame(rows).fillna({"_s": 0.0})
    out = out.sort_values(["instance_key", "kind", "_s", "_w"], kind="stable")
    return out.drop_duplicates(["instance_key", "kind"])[list(REFERENCE_COLUMNS)].reset_index(drop=True)


def _feasibility(r) -> tuple[str, float, bool]:
    """(feasibility text, Monte Carlo met (1/0/NaN), missed ℓmax) of one plan."""
    exact = _field(r, "exact_verdict")
    cert = _field(r, "certified_verdict")
    q, lm = finite_or(r.get("quantile_oos")), finite_or(r.get("loss_max"))
    mc = float(q <= lm) if not (math.isnan(q) or math.isnan(lm)) else math.nan
    if exact == PROVEN_FEASIBLE:
        return PROVEN_FEASIBLE, mc, False
    if exact == PROVEN_INFEASIBLE:
        return PROVEN_INFEASIBLE, mc, True
    if cert == CERTIFIED_FEASIBLE:
        return CERTIFIED_FEASIBLE, mc, False
    return "not proven", mc, mc == 0.0


def _group_of(r) -> str:
    return r["paper_set"] or r["family"]


def plan_ratios(df: pd.DataFrame) -> pd.DataFrame:
    """Every plan (and every closed-loop policy) against its reference.

    Returns
    -------
    pandas.DataFrame
        :data:`PLAN_COLUMNS`: ``ratio_ub`` = cost / UB, ``ratio_lb`` = cost /
        LB (an upper bound on cost / z*), ``reference`` the kind used
        (exact-static before certified-static; adaptive for a policy, whose
        cost is its mean closed-loop cost); ``ratio_saa`` = cost / SAA
        optimum; ``feasibility`` as in the module docstring, ``mc_met`` the
        Monte Carlo cross-check, ``missed`` = proven infeasible, or Monte
        Carlo estimate above ℓmax where no proof decides; for a policy,
        ``p_success`` is its closed-loop P(success) and ``missed`` says it
        is below ω. ``ratio_adaptive`` = a static plan's cost / the adaptive
        optimum's UB where one exists (NaN for a policy, which is judged
        against it in ``ratio_ub``): static plans are judged against the
        exact static optimum first, and this ratio says what observing the
        loss could save on top.
    """
    if df.empty or not df["has_plan"].any():
        return pd.DataFrame(columns=list(PLAN_COLUMNS))
    refs = references(df)
    by = {(k, kind): (ub, lb) for k, kind, ub, lb in
          refs[["instance_key", "kind", "ub", "lb"]].itertuples(index=False, name=None)}
    rows = []
    for _, r in df[df["has_plan"]].iterrows():
        key, cost = r["instance_key"], finite_or(r["cost"])
        policy = r.get("cl_mode") == "policy" and not math.isnan(finite_or(r.get("cl_cost_mean")))
        if policy:
            cost = finite_or(r.get("cl_cost_mean"))
            kinds = (ADAPTIVE,)
        else:
            kinds = (EXACT, CERTIFIED)
        ref, ub, lb = "", math.nan, math.nan
        for kd in kinds:
            if (key, kd) in by:
                ref, (ub, lb) = kd, by[(key, kd)]
                break
        saa = by.get((key, SAA), (math.nan, math.nan))[0]
        # a static plan beside the adaptive optimum too (the value of observing the loss)
        adaptive = math.nan if policy else by.get((key, ADAPTIVE), (math.nan, math.nan))[0]
        feas, mc, missed = _feasibility(r)
        ps = finite_or(r.get("cl_p_success")) if policy else math.nan
        if policy:
            om = finite_or(r.get("omega"))
            lo = finite_or(r.get("cl_p_success_low"))
            # NaN compares False: an unknown ω or P(success) never passes
            feas = ("certified P(success) ≥ ω" if lo >= om
                    else "P(success) estimate ≥ ω" if ps >= om
                    else "not simulated" if math.isnan(ps) else "P(success) < ω")
            missed = feas == "P(success) < ω"
        rows.append({"group": _group_of(r), "algorithm": r["algorithm"], "instance_key": key,
                     "loss_max": finite_or(r["loss_max"]), "omega": finite_or(r.get("omega")),
                     "cost": cost, "policy": bool(policy), "reference": ref,
                     "ratio_ub": cost / ub if ub > 0 else math.nan,
                     "ratio_lb": cost / lb if lb > 0 else math.nan,
                     "ratio_saa": finite_or(r["cost"]) / saa if saa > 0 else math.nan,
                     "feasibility": feas, "mc_met": mc, "missed": bool(missed),
                     "p_success": ps,
                     "ratio_adaptive": cost / adaptive if adaptive > 0 else math.nan})
    return pd.DataFrame(rows, columns=list(PLAN_COLUMNS))


#: Columns of :func:`series_runs`.
RUN_COLUMNS = ("group", "algorithm", "instance_key", "has_plan", "status")


def series_runs(df: pd.DataFrame) -> pd.DataFrame:
    """Every run of every series, with a plan or without one.

    :func:`plan_ratios` keeps the runs that returned a plan (or a policy's
    cost); a summary that counts "n of N" needs the others too, so that a
    series that found no plan on an instance is not counted as if it had
    never run there. Runs with status ``skipped`` (the method does not apply
    to the instance) are not runs and are left out.

    Returns
    -------
    pandas.DataFrame
        :data:`RUN_COLUMNS`, one row per run; ``group`` as in
        :func:`plan_ratios` (paper set, else family).
    """
    if df.empty:
        return pd.DataFrame(columns=list(RUN_COLUMNS))
    ran = df[df["status"] != "skipped"]
    return pd.DataFrame({"group": [p or f for p, f in zip(ran["paper_set"], ran["family"])],
                         "algorithm": ran["algorithm"].to_numpy(),
                         "instance_key": ran["instance_key"].to_numpy(),
                         "has_plan": ran["has_plan"].to_numpy(bool),
                         "status": ran["status"].to_numpy()}, columns=list(RUN_COLUMNS))


def per_instance(frame: pd.DataFrame, value: str, by: tuple[str, ...] = ("instance_key",)
                 ) -> np.ndarray:
    """``value`` with one entry per distinct instance (the median over the
    rows of one instance: several configurations of one series solving the
    same instance are one observation, not several)."""
    f = frame[frame[value].notna()]
    if f.empty:
        return np.array([], float)
    return f.groupby(list(by))[value].median().to_numpy(float)


__all__ = [
    "RATIO_TOL",
    "ADAPTIVE",
    "CERTIFIED",
    "CERTIFIED_FEASIBLE",
    "EXACT",
    "PLAN_COLUMNS",
    "RUN_COLUMNS",
    "PROVEN_FEASIBLE",
    "PROVEN_INFEASIBLE",
    "REFERENCE_COLUMNS",
    "SAA",
    "per_instance",
    "plan_ratios",
    "series_runs",
    "reference_kind",
    "references",
]
