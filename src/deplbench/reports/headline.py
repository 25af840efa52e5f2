"""The report at a glance: the box above the table of contents.

For each of the papers' instance sets (else each family with a proven
optimum): the proven optimum's range and source, every series' cost ratio
to it, and how many of its plans met ℓmax out of sample (and, where the
evaluation certifies it, with a certified bound on the violation
probability); then the claims' verdicts, one line each. Every number is
also in ``tables/headline.csv`` and in the sections below.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from deplbench.reports.bracket import CERTIFIED_FEASIBLE
from deplbench.reports.data import PAPER_SETS
from deplbench.reports.elements import Section, Table
from deplbench.reports.stats import optimum_per_instance
from deplbench.reports.styles import SeriesInfo, info_for, ordered

HEADLINE_COLUMNS = ("set", "algorithm", "exact", "plans", "with_optimum", "ratio_median",
                    "ratio_min", "ratio_max", "met_target_oos", "evaluated",
                    "certified_met")


def _groups(ratios: pd.DataFrame) -> tuple[str, list[tuple[str, pd.DataFrame]]]:
    """(what a group is, [(name, rows)]): paper sets first, else families."""
    if ratios.empty:
        return "set", []
    sets = [(s, ratios[ratios["paper_set"] == s]) for s in PAPER_SETS
            if (ratios["paper_set"] == s).any()]
    if sets:
        return "paper set", sets
    fams = [(f, g) for f, g in ratios.groupby("family", sort=True) if g["ratio"].notna().any()]
    return "family", fams


def headline_table(ratios: pd.DataFrame, styles: dict[str, SeriesInfo]) -> pd.DataFrame:
    """One row per (group, series): ratio to the proven optimum and the
    out-of-sample target check.

    ``ratio_*`` = cost / proven optimum over the series' plans on instances
    with one (every configuration of the series counts); ``met_target_oos``
    = plans whose out-of-sample ω-quantile estimate is ≤ ℓmax, of
    ``evaluated``; ``certified_met`` = plans whose record carries the
    certified verdict "certified feasible" (a Clopper–Pearson bound on
    P(ℓ(K) > ℓmax) ≤ 1 − ω at the evaluation's confidence), blank when no
    record carries a certified verdict.
    """
    _, groups = _groups(ratios)
    rows = []
    for name, g in groups:
        for alg in ordered(g["algorithm"], styles):
            ga = g[g["algorithm"] == alg]
            r = ga["ratio"].dropna().to_numpy(float)
            ev = ga[ga["quantile_oos"].notna() & ga["loss_max"].notna()]
            cert = ga["certified_verdict"].astype(str)
            has_cert = (cert != "").any()
            certified = int((cert == CERTIFIED_FEASIBLE).sum())
            rows.append({
                "set": name, "algorithm": alg, "exact": "yes" if info_for(styles, alg).exact else "no",
                "plans": len(ga), "with_optimum": int(r.size),
                "ratio_median": float(np.median(r)) if r.size else math.nan,
                "ratio_min": float(r.min()) if r.size else math.nan,
                "ratio_max": float(r.max()) if r.size else math.nan,
                "met_target_oos": int((ev["quantile_oos"] <= ev["loss_max"]).sum()),
                "evaluated": len(ev),
                "certified_met": certified if has_cert else math.nan})
    if not rows:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in HEADLINE_COLUMNS})
    return pd.DataFrame(rows, columns=list(HEADLINE_COLUMNS))


def _span(values: pd.Series, fmt: str = ".6g") -> str:
    """"a–b", or "a" when every value is the same."""
    lo, hi = float(values.min()), float(values.max())
    return f"{lo:{fmt}}" if lo == hi else f"{lo:{fmt}}–{hi:{fmt}}"


def _optimum_line(name: str, g: pd.DataFrame, opt: pd.DataFrame, kind: str) -> str:
    keys = set(g["instance_key"])
    o = opt[opt["instance_key"].isin(keys)]
    title = f"{name} ({PAPER_SETS[name]})" if name in PAPER_SETS else name
    if o.empty:
        return f"{title}: no proven optimum on this {kind}'s instances."
    lm = g.loc[g["instance_key"].isin(set(o["instance_key"])), "loss_max"].dropna()
    src = ", ".join(f"{k} {v}" for k, v in o["optimum_source"].value_counts().items())
    targets = f" at ℓmax {_span(lm, 'g')}" if lm.size else ""
    return (f"{title}: proven optimum on {len(o)} instance(s){targets}: cost "
            f"{_span(o['optimum'])} (source: {src}).")


def _claim_line(row) -> str:
    measured = str(row.measured)
    short = measured.split("; ")[0]
    if len(short) > 160:
        short = short[:157] + "…"
    return f"[{row.verdict}] {row.claim} — {short}"


def _bracket_line(name: str, brackets: pd.DataFrame | None) -> str | None:
    if brackets is None or brackets.empty:
        return None
    b = brackets[brackets["set"] == name]
    if b.empty:
        return None
    lb, ub = b["lb"].dropna(), b["ub"].dropna()
    conf = b["confidence"].dropna()
    parts = [f"{name}: certified bracket LB ≤ z* ≤ UB on {len(b)} instance(s) "
             f"(ℓmax {_span(b['loss_max'], 'g')})"]
    if len(lb):
        parts.append(f"LB {_span(lb)}")
    if len(ub):
        parts.append(f"UB (best certified plan) {_span(ub)}")
    else:
        parts.append("no plan certified (no UB)")
    if len(conf):
        parts.append(f"joint confidence ≥ {conf.min():.3g}")
    return "; ".join(parts) + "."


def headline(df: pd.DataFrame, ratios: pd.DataFrame, claims: pd.DataFrame | None,
             styles: dict[str, SeriesInfo], brackets: pd.DataFrame | None = None) -> Section:
    """The at-a-glance box as a :class:`Section` (id ``glance``).

    ``brackets`` is :func:`deplbench.reports.bracket.bracket_table` output:
    the certified bracket on the chance-constrained optimum, quoted per set.
    """
    box = Section("glance", "At a glance",
                  "Ratio = cost / proven optimum of the same instance (section 2); met ℓmax "
                  "= the plan's out-of-sample ω-quantile estimate ≤ ℓmax (section 5); "
                  "certified = the record's certified verdict (a bound on the violation "
                  "probability at its stated confidence). Details in the sections below.")
    kind, groups = _groups(ratios)
    if not groups:
        box.missing("No plan on an instance with a proven optimum: nothing to summarise.")
    else:
        opt = optimum_per_instance(df)
        for name, g in groups:
            box.note(_optimum_line(name, g, opt, kind))
            line = _bracket_line(name, brackets)
            if line:
                box.note(line)
    table = headline_table(ratios, styles)
    if not table.empty and table["certified_met"].isna().all():
        table = table.assign(certified_met=math.nan)
    box.add(Table("headline", f"Per {kind}: every algorithm against the optimum", table,
                  HEADLINE_COLUMNS))
    if claims is not None and not claims.empty:
        for row in claims.itertuples(index=False):
            box.note(_claim_line(row))
    return box
