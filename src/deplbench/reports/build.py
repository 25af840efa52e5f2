"""Build a static report directory from a results store.

:func:`build_report` is the whole pipeline: read the store frame (and
optional pytest-benchmark JSON), compute the tables, draw the figures, audit
the claims, and write ``index.html``, ``figures/*.png|svg``,
``tables/*.csv|md`` and ``manifest.json`` into the output folder.

Every section is drawn from whatever the store holds. Missing data is a
statement in the report ("no MILP rows in this store"), never an
exception; a section that fails for an unforeseen reason is replaced by an
error paragraph (and listed in the manifest) so the rest still appears.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from deplbench.reports import claims as claims_mod
from deplbench.reports import figures as figs
from deplbench.reports import tables as tabs
from deplbench.reports.data import (
    PAPER_SETS, SIZE_PARAMETERS, ReportData, ReportError, load_bench_json, load_store,
    prepare,
)
from deplbench.reports.elements import Figure, Note, Section, Table, markdown_table
from deplbench.reports.html import render
from deplbench.reports.stats import (
    optimum_per_instance, reference_config, reference_labels, with_ratios,
)

#: Which paper figure each instance set reproduces (captions).
_SET_FIGS = {"alexnet": "DepL Fig. 5", "mobilenet": "DepL Fig. 6",
             "pact-vgg11": "PACT Fig. 6"}


@dataclass
class ReportOptions:
    """Knobs of :func:`build_report` (validated by :func:`validate_options`).

    Attributes
    ----------
    title : str
        Page title.
    sgm_shift : float
        Shift s (seconds) of the shifted geometric mean of solve times.
    scale : float
        Figure size multiplier (0.5 makes small, fast figures for tests).
    dpi : int
        PNG resolution.
    formats : tuple of str
        Figure formats, a subset of ("png", "svg"); PNG is embedded.
    """

    title: str = "deplbench report"
    sgm_shift: float = 1.0
    scale: float = 1.0
    dpi: int = 110
    formats: tuple[str, ...] = ("png", "svg")


@dataclass
class ReportSummary:
    """What :func:`build_report` wrote.

    Attributes
    ----------
    out_dir : Path
        The report folder; ``index`` is its ``index.html``.
    sections : list of (id, title)
    figures, tables : list of str
        File stems written under ``figures/`` and ``tables/``.
    missing : list of str
        Every missing-data statement made.
    errors : list of str
        Sections that failed to build (empty for a healthy report).
    claims : pandas.DataFrame
        The claims-audit table.
    """

    out_dir: Path
    index: Path
    sections: list[tuple[str, str]] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    claims: pd.DataFrame | None = None


def validate_options(opts: ReportOptions) -> None:
    """Raise :class:`ReportError` naming the first invalid option."""
    if not isinstance(opts.title, str) or not opts.title.strip():
        raise ReportError("title: must be a non-empty string")
    if not (isinstance(opts.sgm_shift, (int, float)) and math.isfinite(opts.sgm_shift)
            and opts.sgm_shift > 0):
        raise ReportError(f"sgm_shift: must be a positive number of seconds, got "
                          f"{opts.sgm_shift!r}")
    if not (isinstance(opts.scale, (int, float)) and 0.2 <= opts.scale <= 5):
        raise ReportError(f"scale: must lie in [0.2, 5], got {opts.scale!r}")
    if not (isinstance(opts.dpi, int) and 30 <= opts.dpi <= 600):
        raise ReportError(f"dpi: must be an integer in [30, 600], got {opts.dpi!r}")
    fm = tuple(opts.formats)
    if not fm or any(f not in ("png", "svg") for f in fm) or len(set(fm)) != len(fm):
        raise ReportError(f"formats: must be distinct values among png, svg; got {fm!r}")


# --------------------------------------------------------------------------
# context shared by the section builders


@dataclass
class _Ctx:
    data: ReportData
    df: pd.DataFrame
    ratios: pd.DataFrame
    fits: pd.DataFrame
    bench: pd.DataFrame
    bench_given: bool
    opts: ReportOptions
    notes: list[str]


def solver_default(algorithm: str, name: str) -> float | None:
    """Default of a numeric solver parameter from the registry, or None.

    A store row records the parameters its sweep set; one it left out ran
    at the solver's default, which Property 3's bound needs (η, ε).
    """
    try:
        from deplbench.solvers.registry import get_solver

        solver = get_solver(algorithm)
        par = (getattr(solver, "parameters", None) or {}).get(name)
    except Exception:  # unknown name or a layer not importable: no default
        return None
    value = getattr(par, "default", par)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _fill_defaults(df: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    """Fill η and ε of rows that did not record them with solver defaults."""
    if df.empty:
        return df
    df = df.copy()
    for alg in sorted(df["algorithm"].unique()):
        for p in ("eta", "epsilon"):
            mask = (df["algorithm"] == alg) & df[p].isna()
            if not mask.any():
                continue
            d = solver_default(alg, p)
            if d is not None:
                df.loc[mask, p] = d
                notes.append(f"{int(mask.sum())} '{alg}' row(s) record no {p}; the "
                             f"solver's default {p} = {d:g} is assumed")
    return df


# --------------------------------------------------------------------------
# sections


def _section_data(ctx: _Ctx) -> Section:
    s = Section("data", "0. What this store holds",
                "Every row is one finished task attempt of ResultsStore.frame(). The "
                "table counts them per family, sweep, algorithm and configuration "
                "(config lists only the solver parameters that vary in that family).")
    df = ctx.df
    if df.empty:
        s.missing("The store is empty: no task has finished yet, so every section "
                  "below is empty. Run a sweep first (deplbench run SWEEP --db DB).")
    for n in ctx.notes:
        s.note(n)
    s.add(Table("overview", "Runs per family, sweep and algorithm", tabs.overview(df),
                tabs.OVERVIEW_COLUMNS))
    return s


def _paper_sets(ratios: pd.DataFrame) -> list[str]:
    present = set(ratios["paper_set"]) if not ratios.empty else set()
    return [label for label, _ in PAPER_SETS if label in present]


def _fig9_targets(values) -> list[float]:
    """The paper's guaranteed losses 5, 9, 13 if run, else ≤ 3 spread targets."""
    vals = sorted(float(v) for v in set(values) if pd.notna(v))
    if all(any(math.isclose(v, p) for v in vals) for p in (5.0, 9.0, 13.0)):
        return [5.0, 9.0, 13.0]
    if len(vals) <= 3:
        return vals
    return [vals[0], vals[len(vals) // 2], vals[-1]]


def _section_paper(ctx: _Ctx) -> Section:
    s = Section("paper", "1. The papers' figures reproduced",
                "Drawn from the rows whose instance belongs to one of the papers' sets "
                "(family, instance name or generator parameters mention AlexNet, "
                "MobileNet, or PACT/VGG11). Each algorithm is drawn at its reference "
                "configuration (the one the sweep ran most often); every number is in "
                "the CSV beside the figure.")
    r = ctx.ratios
    sets = _paper_sets(r)
    others = sorted(set(ctx.df["family"]) - set(r.loc[r["paper_set"] != "", "family"])) \
        if not ctx.df.empty else []
    if not sets:
        s.missing("No rows from the papers' instance sets (AlexNet, MobileNet, PACT "
                  "VGG11) with a plan: none of Figs. 5–9 or PACT's cost-vs-ℓmax can be "
                  "drawn from this store.")
    if others and sets:
        s.note("Families not part of the papers' figures (see sections 2–4): "
               + ", ".join(others))
    # runs of the papers' sets that returned no plan are absent from every
    # figure below; say which, so a missing line is not read as "not run"
    if not ctx.df.empty:
        noplan = ctx.df[(ctx.df["paper_set"] != "") & ~ctx.df["has_plan"]]
        for ps, g in noplan.groupby("paper_set", sort=True):
            parts = []
            for alg, ga in g.groupby("algorithm", sort=True):
                st = ", ".join(f"{k} {v}" for k, v in ga["status"].value_counts().items())
                parts.append(f"{alg} {len(ga)} ({st})")
            s.missing(f"{ps}: runs without a plan, absent from the figures: "
                      + "; ".join(parts) + ".")
    refs = reference_labels(r[r["paper_set"] != ""]) if sets else {}
    ref_txt = "; ".join(f"{a}: {c}" for (_, a), c in sorted(refs.items()) if c)
    ref_txt = f" Reference configurations: {ref_txt}." if ref_txt else ""

    cvt = tabs.cost_vs_target(r)
    s.add(Table("fig5_cost_vs_target", "Cost vs loss-quantile target (Figs. 5/6 left, "
                "PACT Fig. 6 left)", cvt, tabs.COST_VS_TARGET_COLUMNS,
                "cost_* over the instances (seeds) at each ℓmax; ratio_mean = mean "
                "cost / proven optimum where one is known." + ref_txt))
    for ps in sets:
        which = _SET_FIGS.get(ps, ps)
        s.add_figure(figs.cost_vs_target(cvt, ps, ctx.opts.scale),
                     f"cost_vs_target_{ps.replace('-', '_')}",
                     f"{which} (left): cost vs ℓmax — {ps}",
                     "Lines: mean cost over instances; band: min–max.",
                     missing=f"{ps}: no plan with a target ℓmax to draw cost vs target ({which}).")

    norm = tabs.normalised_expected_loss(r)
    s.add(Table("fig5_normalised_expected_loss", "Expected final loss normalised to the "
                "optimum (Fig. 5 centre)", norm, tabs.NORM_LOSS_COLUMNS,
                "E[ℓ(K)] of each plan / E[ℓ(K)] of the exact optimum on the same instance "
                "and targets (brute force, else MILP with status optimal). Below 1: the "
                "plan learns more than the quantile target requires."))
    for ps in [p for p in sets if p != "pact-vgg11"]:
        s.add_figure(figs.normalised_loss(norm, ps, ctx.opts.scale), f"normalised_loss_{ps}",
                     f"{_SET_FIGS[ps]} (centre): normalised expected loss — {ps}",
                     "Dotted line: the optimum.",
                     missing=f"{ps}: no exact-optimum row (milp/brute-force, status optimal) with "
                             "an evaluation to normalise the expected loss by (Fig. 5 centre).")

    eta = tabs.eta_effect(r)
    s.add(Table("fig5_eta_effect", "Effect of η (Fig. 5 right)", eta,
                tabs.ETA_EFFECT_COLUMNS, "Every configuration with a recorded η."))
    for ps in [p for p in sets if p != "pact-vgg11"]:
        s.add_figure(figs.eta_effect(eta, ps, ctx.opts.scale), f"eta_effect_{ps}",
                     f"{_SET_FIGS[ps]} (right): effect of η — {ps}",
                     "Darker = smaller η (coarser expanded graph).",
                     missing=f"{ps}: fewer than two values of η were run, so the effect of η "
                             f"({_SET_FIGS[ps]} right) cannot be drawn.")

    for field_, name, label, fig_no in (
            ("epochs_per_model", "fig7_epochs_per_model", "epochs", "Fig. 7"),
            ("cost_per_model", "fig8_cost_per_model", "cost", "Fig. 8")):
        t = tabs.per_model(r, field_)
        s.add(Table(name, f"{label.capitalize()} per model version ({fig_no})", t,
                    tabs.PER_MODEL_COLUMNS,
                    f"Mean {label} per model over the instances at each target "
                    f"(evaluation.{field_}); a model a plan did not use counts as 0."))
        for ps in sets:
            s.add_figure(figs.per_model(t, ps, f"mean {label}", ctx.opts.scale),
                         f"{name}_{ps.replace('-', '_')}", f"{fig_no}-style: {label} per model — {ps}",
                         "One panel per algorithm; stacked bars per target.",
                         missing=f"{ps}: no evaluation.{field_} in the stored evaluations ({fig_no}).")

    for ps in sets:
        sub = r[(r["paper_set"] == ps)]
        sub = sub[[bool(e.get("mean")) for e in sub["evaluation_d"]]] if not sub.empty else sub
        sub = reference_config(sub)
        targets = _fig9_targets(sub["loss_max"]) if not sub.empty else []
        # one instance per target, the one most algorithms ran, so the lines compare
        picked = []
        for lm in targets:
            g = sub[sub["loss_max"] == lm]
            counts = g.groupby("instance_key")["algorithm"].nunique()
            if counts.empty:
                continue
            best = sorted(counts[counts == counts.max()].index)[0]
            picked.append(g[g["instance_key"] == best])
        rows = pd.concat(picked) if picked else sub.iloc[0:0]
        s.add_figure(figs.trajectories(rows, targets, ctx.opts.scale),
                     f"fig9_trajectories_{ps.replace('-', '_')}",
                     f"Fig. 9-style: loss trajectories — {ps}",
                     "Line: expected loss per epoch (entry 0 = ℓ(0)); band: 1st–99th "
                     "percentile of the out-of-sample trajectories; dotted: ℓmax. One "
                     "instance per target (the one most algorithms ran).",
                     missing=f"{ps}: no evaluation with per-epoch mean/p01/p99 arrays (Fig. 9).")
    return s


def _section_gaps(ctx: _Ctx) -> Section:
    s = Section("gaps", "2. Optimality gaps",
                "The proven optimum of an instance (same instance and targets) is, by "
                "priority: diagnostics.dp_optimum (the covering-knapsack DP, knapsack "
                "families), brute force with status optimal, the MILP with status "
                "optimal (its feasible real-x plan's cost). Ratio = cost / optimum.")
    df, r = ctx.df, ctx.ratios
    opt = optimum_per_instance(df)
    if opt.empty:
        s.missing("No proven optimum in this store: no milp or brute-force row with "
                  "status optimal and no diagnostics.dp_optimum, so no gap can be "
                  "computed.")
    else:
        src = opt["optimum_source"].value_counts()
        s.note(f"{len(opt)} instance(s) have a proven optimum (sources: "
               + ", ".join(f"{k} {v}" for k, v in src.items()) + ").")
    s.add(Table("gaps", "Gap to the proven optimum per family and algorithm",
                tabs.gaps(r), tabs.GAPS_COLUMNS,
                "gap_pct = 100·(cost/optimum − 1) over plans whose instance has an "
                "optimum. below_optimum counts plans cheaper than a proven optimum: they "
                "violate the in-sample constraint the optimum is proven under."))
    s.add(Table("oracle_agreement", "Agreement of the exact oracles",
                tabs.oracle_agreement(df), tabs.ORACLE_COLUMNS,
                "Where several of DP / brute force / MILP proved an optimum for one "
                "instance, their relative spread (> 1e-6 = disagreeing)."))
    ms = tabs.milp_status(df)
    if ms.empty:
        s.missing("No milp rows in this store: MILP status counts, gaps at the time "
                  "limit and its runtime scaling are not available.")
    s.add(Table("milp_status", "MILP status counts", ms, tabs.MILP_STATUS_COLUMNS))
    ml = tabs.milp_time_limit(df)
    if not ms.empty and ml.empty:
        s.note("No MILP run hit its time limit.")
    s.add(Table("milp_time_limit", "MILP gap at the time limit", ml,
                tabs.MILP_LIMIT_COLUMNS,
                "gap = the solver's relative gap (incumbent − bound)/incumbent when it "
                "stopped at the limit."))
    sh = ctx.opts.sgm_shift
    s.add(Table("runtime_sgm", "Solve time: shifted geometric mean",
                tabs.runtime_sgm(df, sh), tabs.SGM_COLUMNS,
                f"sgm = exp(mean(log(t + s))) − s with shift s = {sh:g} s, over every "
                "finished attempt (failures and time limits at their measured time). MIP "
                "benchmarking uses the same statistic with s = 10 s for hour-long runs "
                "(Achterberg 2007); our solves take seconds, hence 1 s by default "
                "(--sgm-shift)."))
    mats = tabs.profile_matrices(df)
    s.add_figure(figs.profiles(mats, ctx.opts.scale), "performance_profiles",
                 "Dolan–Moré performance profiles",
                 "Per family (at most 6, most problems first): ρ(τ) = share of "
                 "problems (instance + targets) on which the algorithm is within a "
                 "factor τ of the best one; no plan = failure (the curve never "
                 "reaches 1). Dolan & Moré, Math. Program. 91 (2002).",
                 missing="No family has two or more algorithms on two or more common "
                         "instances: performance profiles need common problems.")
    s.add(Table("performance_profiles", "Performance profile values",
                tabs.profile_summary(mats), tabs.PROFILE_COLUMNS,
                "best = ρ(1): share of problems where the algorithm is (one of) the best."))
    return s


def _section_ratio(ctx: _Ctx) -> Section:
    s = Section("ratio", "3. Competitive ratio vs η and ε",
                "Measured cost / proven optimum of every algorithm run with a "
                "resolution η (DepL's expanded graph) and allocation tolerance ε, "
                "beside Property 3's claimed ratio (1/η)(1+ε). A minimisation ratio "
                "cannot be below 1, which the claimed formula is for every η > 1 + ε.")
    t = tabs.ratio_vs(ctx.ratios)
    if t.empty:
        s.missing("No plan with a recorded η on an instance with a proven optimum: the "
                  "competitive ratio against η and ε is not measured in this run.")
    s.add(Table("competitive_ratio", "Competitive ratio per η and ε", t,
                tabs.RATIO_VS_COLUMNS,
                "within_bound = share of instances whose ratio ≤ (1/η)(1+ε)."))
    for p in ("eta", "epsilon"):
        if t.empty or t[p].nunique() < 2:
            if not t.empty:
                s.missing(f"Only one value of {tabs.size_label(p)} was run: the ratio "
                          f"against {tabs.size_label(p)} is a single point, not drawn.")
            continue
        s.add_figure(figs.ratio_vs(t, p, ctx.opts.scale), f"ratio_vs_{p}",
                     f"Competitive ratio vs {tabs.size_label(p)}",
                     "Solid: measured median (band min–max); dashed: Property 3's "
                     "(1/η)(1+ε); dotted: ratio 1. Log-log axes.",
                     missing=f"Nothing to draw against {tabs.size_label(p)}.")
    return s


def _section_complexity(ctx: _Ctx) -> Section:
    s = Section("complexity", "4. Complexity: runtime scaling",
                "Runtime against each size parameter on log-log axes. A slope is fitted "
                "by OLS on log(runtime) vs log(size) over runs whose other parameters "
                "are identical (column fixed), with a 95 % t-interval (n − 2 degrees "
                "of freedom). Property 2 claims O(|D|² + |M|²K²/η⁴ + 1/ε): exponent 2 "
                "for |D|, |M|, K̄; −4 for η as printed, +4 as implied by the vertex "
                "count |M|Kη² with O(V²); −1 for ε. A big-O exponent is an upper bound: "
                "a slope whose whole interval lies above it contradicts the claim. Only "
                "completed solves count (time limits are censored, errors measure "
                "nothing). Note that a sum of terms shows its dominant term's slope.")
    fits = ctx.fits
    s.add(Table("complexity_fits", "Fitted log-log slopes", fits,
                tabs.FIT_COLUMNS,
                "source = store (runtime_s) or bench (pytest-benchmark median)."))
    if fits.empty:
        s.missing("No size parameter (η, ε, |M|, K̄, |D|, |N|, S) takes ≥ 3 distinct "
                  "values with the others fixed in this store"
                  + ("" if ctx.bench_given else " (and no --bench-json was given)")
                  + ": no slope can be fitted.")
    best = tabs.best_fits(fits, by_family=True) if not fits.empty else fits
    is_knap = best["family"].astype(str).str.contains("knapsack", case=False) \
        if not best.empty else pd.Series(dtype=bool)
    general = best[~is_knap] if not best.empty else best
    for p in SIZE_PARAMETERS:
        f = figs.complexity(general, p, ctx.opts.scale) if not general.empty else None
        if f is None:
            if not fits.empty:
                s.missing(f"{tabs.size_label(p)} was not varied (≥ 3 values, others "
                          "fixed) outside the knapsack families in this run.")
            continue
        s.add(Figure(f"complexity_{p}", f"Runtime vs {tabs.size_label(p)}", f,
                     "Points: runs of each series' largest fit group; solid: OLS fit "
                     "(slope, 95 % CI); dashed: the claimed exponent; dotted: the "
                     "exponent the vertex count implies (η only)."))
    knap = best[is_knap & (best["parameter"] == "n_models")] if not best.empty else best
    if knap.empty:
        s.missing("No knapsack-family sweep over the number of items: the MILP's growth "
                  "on knapsack classes cannot be set beside DepL's.")
    else:
        f = figs.complexity(knap, "n_models", ctx.opts.scale, max_series=18)
        s.add(Figure("complexity_knapsack", "Knapsack classes: runtime vs items |M|", f,
                     "One series per algorithm and item class (Property 1's reduction: "
                     "one model per item). The MILP's growth beside DepL's and the DP's; "
                     "dashed: Property 2's |M|² for reference."))
    if ctx.bench_given:
        bt = tabs.bench_summary(ctx.bench)
        if bt.empty:
            s.missing("The --bench-json files hold no benchmark entries.")
        s.add(Table("bench", "pytest-benchmark measurements", bt, tabs.BENCH_COLUMNS,
                    "Seconds; median over rounds."))
    else:
        s.missing("No pytest-benchmark JSON given (--bench-json DIR): only the store's "
                  "runtimes are fitted.")
    return s


def _section_claims(ctx: _Ctx) -> Section:
    s = Section("claims", "5. Claims audit",
                "One row per claim of SPEC §6: what the paper says, what this run "
                "measured, and the verdict (holds / does not hold / not measured in this "
                "run). Verdicts are mechanical: 'virtually matches' means median gap ≤ "
                f"{100 * claims_mod.MATCH_MEDIAN_GAP:g} % and 90th-percentile gap ≤ "
                f"{100 * claims_mod.MATCH_P90_GAP:g} %; 'over 27 %' means a target-mean "
                "saving vs best-exp ≥ 27 % at some ℓmax; a complexity exponent fails when "
                "its 95 % interval lies wholly above the claimed one (for ε, asymptotic "
                "as ε → 0: wholly below), from ≥ 4 runs; Property 3 fails "
                "when any plan's ratio exceeds (1/η)(1+ε).")
    table = claims_mod.audit(ctx.df, ctx.ratios, ctx.fits)
    s.add(Table("claims_audit", "Claims audit", table, claims_mod.CLAIMS_COLUMNS))
    pairs, scope = claims_mod.depl_vs_best_exp_pairs(ctx.ratios)
    s.add(Table("depl_vs_best_exp", "DepL vs best-exp, paired by instance", pairs,
                claims_mod.PAIRS_COLUMNS,
                "saving = 1 − cost(DepL)/cost(best-exp)" + (f"; scope: {scope}" if scope
                                                            else "")))
    misses = tabs.target_misses(ctx.df)
    if misses.empty:
        s.missing("No plan in this store: no out-of-sample quantile to report.")
    s.add(Table("target_misses", "Plans that missed the quantile target (3)", misses,
                tabs.MISSES_COLUMNS,
                "Judged out of sample: missed = ω-quantile estimate > ℓmax; "
                "missed_confirmed = the confidence interval lies wholly above ℓmax "
                "(verdict infeasible); undecided = the interval straddles ℓmax."))
    s.add(Table("oos_quantiles", "Out-of-sample quantile of every plan",
                tabs.oos_quantiles(ctx.df), tabs.OOS_COLUMNS,
                "quantile_oos and its confidence interval from the evaluator's fresh "
                "draws; met_target compares the point estimate with ℓmax."))
    return s


SECTION_BUILDERS: tuple[Callable[[_Ctx], Section], ...] = (
    _section_data, _section_paper, _section_gaps, _section_ratio,
    _section_complexity, _section_claims)


# --------------------------------------------------------------------------
# writing


def _prepare_out(out_dir: str | Path) -> Path:
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ReportError(f"--out: {out} exists and is not a directory")
    for sub in ("figures", "tables"):
        (out / sub).mkdir(parents=True, exist_ok=True)
        # a rebuilt report must not keep files of the previous build that the
        # new index no longer links (they would look current)
        for old in (out / sub).iterdir():
            if old.is_file() and old.suffix in (".png", ".svg", ".csv", ".md"):
                old.unlink()
    return out


def _write_table(out: Path, t: Table) -> None:
    t.frame.to_csv(out / "tables" / f"{t.name}.csv", index=False)
    md = f"# {t.title}\n\n" + (f"{t.caption}\n\n" if t.caption else "")
    md += markdown_table(t.frame) if len(t.columns) else "(no columns)\n"
    (out / "tables" / f"{t.name}.md").write_text(md, encoding="utf-8")


def _write_figure(out: Path, f: Figure, opts: ReportOptions) -> None:
    for fmt in opts.formats:
        meta = {"Software": None} if fmt == "png" else {"Date": None}
        with warnings.catch_warnings():
            # small --scale figures with long legends cannot be laid out tightly;
            # matplotlib then draws them unadjusted, which is fine for a report
            warnings.filterwarnings("ignore", message="constrained_layout not applied")
            f.fig.savefig(out / "figures" / f"{f.name}.{fmt}", dpi=opts.dpi, metadata=meta)


def build_report(source, out_dir: str | Path, bench_json: str | Path | None = None,
                 options: ReportOptions | None = None) -> ReportSummary:
    """Build the static report.

    Parameters
    ----------
    source : pandas.DataFrame or path-like
        ``ResultsStore.frame()`` output, or the path of a results store.
    out_dir : path-like
        Output folder (created; figure/table files of a previous build are
        replaced).
    bench_json : path-like, optional
        A pytest-benchmark JSON file or a folder of them.
    options : ReportOptions, optional
        Title, SGM shift, figure scale/dpi/formats.

    Returns
    -------
    ReportSummary
        Paths and names of everything written.

    Raises
    ------
    ReportError
        Unreadable store or benchmark path, an output path that is a file,
        invalid options. Missing *data* never raises.
    """
    opts = options or ReportOptions()
    validate_options(opts)
    if isinstance(source, pd.DataFrame):
        data = prepare(source)
    elif not isinstance(source, (str, os.PathLike)):
        raise ReportError(f"source: expected a DataFrame from ResultsStore.frame() or the "
                          f"path of a results store, got {type(source).__name__}")
    else:
        data = prepare(load_store(source), source=str(source))
    bench, bench_notes = load_bench_json(bench_json)
    out = _prepare_out(out_dir)

    notes = list(data.notes) + bench_notes
    df = _fill_defaults(data.df, notes)
    ratios = with_ratios(df)
    try:
        fits = tabs.complexity_fits(df, bench)
    except Exception as exc:  # keep the report; the complexity section says why
        fits = tabs.complexity_fits(df.iloc[0:0])
        notes.append(f"complexity fits failed: {type(exc).__name__}: {exc}")
    ctx = _Ctx(data, df, ratios, fits, bench, bench_json is not None, opts, notes)

    summary = ReportSummary(out_dir=out, index=out / "index.html")
    sections: list[Section] = []
    for builder in SECTION_BUILDERS:
        try:
            sec = builder(ctx)
        except Exception as exc:  # one broken section must not hide the others
            name = builder.__name__.removeprefix("_section_")
            sec = Section(name, f"Section '{name}'")
            sec.elements.append(Note(
                f"This section could not be built ({type(exc).__name__}: {exc}). "
                "This is a bug in deplbench.reports; the other sections are unaffected.",
                error=True))
            summary.errors.append(f"{name}: {type(exc).__name__}: {exc}\n"
                                  + traceback.format_exc(limit=3))
        sections.append(sec)

    for sec in sections:
        summary.sections.append((sec.id, sec.title))
        for el in sec.elements:
            if isinstance(el, Table):
                _write_table(out, el)
                summary.tables.append(el.name)
                if el.name == "claims_audit":
                    summary.claims = el.frame
            elif isinstance(el, Figure):
                _write_figure(out, el, opts)
                summary.figures.append(el.name)
                el.fig.clear()  # release memory: reports can hold many figures
            elif isinstance(el, Note) and el.missing:
                summary.missing.append(el.text)
    dup = {n for n in summary.tables if summary.tables.count(n) > 1} | {
        n for n in summary.figures if summary.figures.count(n) > 1}
    if dup:  # two elements writing one file would silently lose one of them
        summary.errors.append(f"duplicate file stems: {sorted(dup)}")

    meta = [f"Source: {data.source} — {len(df)} row(s), "
            f"{df['family'].nunique() if not df.empty else 0} family(ies), "
            f"{df['algorithm'].nunique() if not df.empty else 0} algorithm(s).",
            "Code version(s): " + (", ".join(sorted(v for v in set(df["code_version"]) if v))
                                   or "unknown") if not df.empty else "Code version: n/a",
            f"Generated {_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M UTC}. "
            "Self-contained: open index.html offline; figures in figures/, tables (CSV, "
            "Markdown) in tables/."]
    summary.index.write_text(render(opts.title, meta, sections, tuple(opts.formats)),
                             encoding="utf-8")
    manifest = {
        "title": opts.title, "source": data.source, "rows": int(len(df)),
        "sections": [{"id": i, "title": t} for i, t in summary.sections],
        "figures": [f"figures/{n}.{fmt}" for n in summary.figures for fmt in opts.formats],
        "tables": [f"tables/{n}.{ext}" for n in summary.tables for ext in ("csv", "md")],
        "missing": summary.missing, "errors": summary.errors,
        "claims": json.loads(summary.claims.to_json(orient="records"))
        if summary.claims is not None else [],
        "options": {"sgm_shift_s": opts.sgm_shift, "scale": opts.scale, "dpi": opts.dpi,
                    "formats": list(opts.formats)},
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str),
                                       encoding="utf-8")
    return summary
