"""The report's sections, one builder each, in display order.

Each builder takes the shared :class:`Context` (the prepared frame, the
ratios, the complexity fits, the series styles) and returns a
:class:`~deplbench.reports.elements.Section` of tables, figures and notes.
Missing data is a statement in the section ("no exact solver ran in this
store"), never an exception; :mod:`deplbench.reports.build` replaces a
section that fails for an unforeseen reason by an error paragraph.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import pandas as pd

from deplbench.reports import bracket as bracket_mod
from deplbench.reports import claims as claims_mod
from deplbench.reports import complexity as cx
from deplbench.reports import complexity_figure as cx_fig
from deplbench.reports import figures as figs
from deplbench.reports import population
from deplbench.reports import solvers as solvers_mod
from deplbench.reports import tables as tabs
from deplbench.reports.anytime import section_anytime
from deplbench.reports.closed_loop import section_closed_loop
from deplbench.reports.data import PAPER_SETS, SIZE_PARAMETERS, ReportData
from deplbench.reports.elements import Figure, Section, Table
from deplbench.reports.measured import section_measured
from deplbench.reports.reference import plan_ratios
from deplbench.reports.repetitions import section_timing
from deplbench.reports.stats import optimum_per_instance, reference_config, reference_labels
from deplbench.reports.styles import SeriesInfo

#: The generator family whose complexity is drawn apart: Property 1's
#: reduction of 0-1 knapsack (one model per item), where the MILP's growth
#: is compared with DepL's and the DP's.
KNAPSACK_FAMILY = "knapsack"


@dataclass
class Context:
    """What every section builder reads."""

    data: ReportData
    df: pd.DataFrame
    ratios: pd.DataFrame
    fits: pd.DataFrame
    bench: pd.DataFrame
    bench_given: bool
    opts: object
    notes: list[str]
    styles: dict[str, SeriesInfo]
    bracket: dict[str, pd.DataFrame]

    @property
    def scale(self) -> float:
        return self.opts.scale


def section_data(ctx: Context) -> Section:
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
    s.add(Table("algorithms", "Algorithms in this store", tabs.algorithms(df, ctx.styles),
                tabs.ALGORITHM_COLUMNS,
                "One row per series (a sweep entry's label, default the solver's registry "
                "name), with what its records say about the solver: display label, "
                "exactness and plotting style."))
    return s


def _paper_sets(ratios: pd.DataFrame) -> list[str]:
    present = set(ratios["paper_set"]) if not ratios.empty else set()
    return [label for label in PAPER_SETS if label in present]


def _fig9_targets(values) -> list[float]:
    """The paper's guaranteed losses 5, 9, 13 if run, else ≤ 3 spread targets."""
    vals = sorted(float(v) for v in set(values) if pd.notna(v))
    if all(any(math.isclose(v, p) for v in vals) for p in (5.0, 9.0, 13.0)):
        return [5.0, 9.0, 13.0]
    if len(vals) <= 3:
        return vals
    return [vals[0], vals[len(vals) // 2], vals[-1]]


def section_paper(ctx: Context) -> Section:
    s = Section("paper", "1. The papers' figures reproduced",
                "Drawn from the rows whose record names one of the papers' instance sets "
                "(column instance_set, a sweep's [[instances]].set: "
                + ", ".join(PAPER_SETS) + "). Each series (a sweep entry) is drawn at its "
                "reference "
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
    ref_txt = "; ".join(f"{a} ({ps}): {c}" for (ps, a), c in sorted(refs.items()) if c)
    ref_txt = f" Reference configurations: {ref_txt}." if ref_txt else ""

    cvt = tabs.cost_vs_target(r)
    s.add(Table("fig5_cost_vs_target", "Cost vs loss-quantile target (Figs. 5/6 left, "
                "PACT Fig. 6 left)", cvt, tabs.COST_VS_TARGET_COLUMNS,
                "cost_* over the instances (seeds) at each ℓmax; ratio_mean = mean "
                "cost / the exact solvers' optimum (SAA for the MILP); ratio_ref_* = cost / "
                "the reference of the same instance (reference_kind: exact-static, else the "
                "certified bracket's UB, else the SAA optimum)." + ref_txt))
    for ps in sets:
        which = PAPER_SETS[ps]
        s.add_figure(figs.cost_vs_target(cvt, ps, ctx.styles, ctx.scale),
                     f"cost_vs_target_{ps.replace('-', '_')}",
                     f"{which} (left): cost vs ℓmax — {ps}",
                     "Left: cost / the reference of the same instance (exact optimum, else "
                     "the certified bracket's UB, else the SAA optimum: the panel title says "
                     "which), mean over instances, band min–max, dotted: 1. Right: the cost "
                     "itself (mean, band min–max).",
                     missing=f"{ps}: no plan with a target ℓmax to draw cost vs target ({which}).")

    norm = tabs.normalised_expected_loss(r)
    s.add(Table("fig5_normalised_expected_loss", "Expected final loss normalised to the "
                "optimum (Fig. 5 centre)", norm, tabs.NORM_LOSS_COLUMNS,
                "E[ℓ(K)] of each plan / E[ℓ(K)] of the exact optimum on the same instance "
                "and targets (the exact row that gives the proven optimum). Below 1: the "
                "plan learns more than the quantile target requires."))
    for ps in [p for p in sets if p != "pact-vgg11"]:
        s.add_figure(figs.normalised_loss(norm, ps, ctx.styles, ctx.scale),
                     f"normalised_loss_{ps}",
                     f"{PAPER_SETS[ps]} (centre): normalised expected loss — {ps}",
                     "Dotted line: the optimum.",
                     missing=f"{ps}: no exact-optimum row (an exact solver, status optimal) with "
                             "an evaluation to normalise the expected loss by (Fig. 5 centre).")

    eta = tabs.eta_effect(r)
    s.add(Table("fig5_eta_effect", "Effect of η (Fig. 5 right)", eta,
                tabs.ETA_EFFECT_COLUMNS, "Every configuration with a recorded η."))
    for ps in [p for p in sets if p != "pact-vgg11"]:
        s.add_figure(figs.eta_effect(eta, ps, ctx.styles, ctx.scale), f"eta_effect_{ps}",
                     f"{PAPER_SETS[ps]} (right): effect of η — {ps}",
                     "One panel per solver run at two or more η: a line per series and η, "
                     "the series' own colour at the η it runs most, shades of it at the "
                     "others; the dash follows η.",
                     missing=f"{ps}: fewer than two values of η were run, so the effect of η "
                             f"({PAPER_SETS[ps]} right) cannot be drawn.")

    for field_, name, label, unit, fig_no in (
            ("epochs_per_model", "fig7_epochs_per_model", "epochs", "epochs", "Fig. 7"),
            ("cost_per_model", "fig8_cost_per_model", "cost", "cost units", "Fig. 8")):
        t = tabs.per_model(r, field_)
        s.add(Table(name, f"{label.capitalize()} per model version ({fig_no})", t,
                    tabs.PER_MODEL_COLUMNS,
                    f"Mean {label} per model over the instances at each target "
                    f"(evaluation.{field_}); a model a plan did not use counts as 0."))
        for ps in sets:
            s.add_figure(figs.per_model(t, ps, f"mean {label} [{unit}]", ctx.styles, ctx.scale),
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
        s.add_figure(figs.trajectories(rows, targets, ctx.styles, ctx.scale),
                     f"fig9_trajectories_{ps.replace('-', '_')}",
                     f"Fig. 9-style: loss trajectories — {ps}",
                     "One panel per algorithm; per target ℓmax a line (expected loss per "
                     "epoch, entry 0 = ℓ(0)) and its band (1st–99th percentile of the "
                     "out-of-sample trajectories) in a shade of the algorithm's colour; "
                     "dotted: that ℓmax. One instance per target (the one most algorithms "
                     "ran).",
                     missing=f"{ps}: no evaluation with per-epoch mean/p01/p99 arrays (Fig. 9).")
        below = figs.negative_means(rows) if not rows.empty else []
        if below:
            s.note(f"{ps}: the expected loss goes below 0 for " + "; ".join(below)
                   + ". The loss model has no floor: each epoch lowers the loss by "
                   "γ·A_m·decay_m(k)·X (eq. (8)), and Σ decay_m(k) grows without bound, "
                   "so a plan that trains far past its target ℓmax (an open-loop plan "
                   "built from pessimistic predictions) is extrapolated below 0.")
    return s


def section_gaps(ctx: Context) -> Section:
    s = Section("gaps", "2. Optimality gaps",
                "The optimum used here (same instance_sha: same instance, "
                "targets and variants) is the cost of an exact solver's row (record "
                "column exact) with status optimal; where several exact solvers ran, the "
                "one with the lowest reference_priority its solver declares, and per "
                "solver the run with the most in-sample scenarios S (a scenario-free "
                "solver such as the covering-knapsack DP first). Ratio = cost / optimum. For the "
                "MILP that optimum is the SAA optimum of its S scenarios: exact for that "
                "sample, not for the chance-constrained problem (the glance box and the "
                "certified bracket below use the proven references).")
    df, r = ctx.df, ctx.ratios
    opt = optimum_per_instance(df)
    if opt.empty:
        s.missing("No proven optimum in this store: no row of an exact solver with "
                  "status optimal, so no gap can be computed.")
    else:
        proven = opt[opt["optimum_kind"] == "proven"]
        saa = opt[opt["optimum_kind"] == "saa"]
        src = proven["optimum_source"].value_counts()
        txt = (f"{len(proven)} instance(s) have a proven optimum (sources: "
               + ", ".join(f"{k} {v}" for k, v in src.items()) + ")" if len(proven)
               else "No instance has a proven optimum")
        if len(saa):
            s_src = saa.groupby(["optimum_source", "optimum_scenarios"]).size()
            txt += (f"; {len(saa)} more only an SAA optimum ("
                    + ", ".join(f"{k} {v}, S = {sc:g}" for (k, sc), v in s_src.items())
                    + "): exact for its scenarios, not proven for the chance-constrained problem; "
                    "ratios to it are labelled 'vs SAA optimum'")
        s.note(txt + ".")
    s.add(Table("gaps", "Gap to the exact solvers' optimum (SAA for the MILP) per family "
                "and algorithm", tabs.gaps(r), tabs.GAPS_COLUMNS,
                "gap_pct = 100·(cost/optimum − 1) over plans whose instance has an "
                "optimum (source in optimum_sources). below_optimum counts plans cheaper "
                "than it. Against an SAA optimum (milp, S scenarios) that says only that "
                "the plan breaks the constraint on those S scenarios: such a plan can "
                "still be feasible for the chance constraint itself; its out-of-sample "
                "and certified verdicts (section 5, the glance box) decide. Against a "
                "scenario-free exact optimum (knapsack DP, exact-static) a cheaper plan "
                "cannot be feasible."))
    s.add(Table("oracle_agreement", "Agreement of the exact solvers",
                tabs.oracle_agreement(df), tabs.ORACLE_COLUMNS,
                "Where several exact solvers proved an optimum of the chance-constrained problem for one "
                "instance (scenario-free: exact-static, the knapsack DP), their relative spread (> 1e-6 = "
                "disagreeing). An SAA optimum (the MILP on S scenarios) is exact for its sample only, so it is "
                "no oracle here: with_saa_and_exact counts the instances with both, saa_vs_exact_max_gap is the "
                "largest |SAA optimum/proven optimum − 1| among them (a gap, not a disagreement)."))
    ms = tabs.milp_status(df)
    if ms.empty:
        s.missing("No exact-solver rows in this store (no record with exact = true): "
                  "status counts and gaps at the time limit are not available.")
    s.add(Table("milp_status", "Exact solvers: status counts", ms,
                tabs.MILP_STATUS_COLUMNS,
                "Every solver whose records say exact = true (the MILP, brute force, the "
                "knapsack DP, or a plugin)."))
    ml = tabs.milp_time_limit(df)
    if not ms.empty and ml.empty:
        s.note("No exact-solver run hit its time limit.")
    s.add(Table("milp_time_limit", "Exact solvers: gap at the time limit", ml,
                tabs.MILP_LIMIT_COLUMNS,
                "gap = the solver's relative gap (incumbent − bound)/incumbent when it "
                "stopped at the limit."))
    solvers_mod.add_solver_table(s, df)         # MILP solver vs solver (reports/solvers.py)
    sh = ctx.opts.sgm_shift
    br = ctx.bracket
    s.add(Table("certified_brackets", "Certified bracket on the chance-constrained optimum",
                br["brackets"], bracket_mod.BRACKET_COLUMNS,
                "LB ≤ z* ≤ UB on the true chance-constrained optimum z* (rows of "
                "milp-certified; joint confidence in column confidence; methods in lb_method, "
                "ub_method; docs/certify.md). The SAA optimum above is exact only for its "
                "sample; this bracket holds for the problem itself."))
    if br["brackets"].empty:
        s.missing("No milp-certified row in this store: no certified bracket on the "
                  "chance-constrained optimum; ratios use the SAA optimum only.")
    s.add(Table("bracket_ratios", "Ratios against the certified bracket", br["ratios"],
                bracket_mod.RATIO_COLUMNS,
                "cost/UB: distance to the best certified plan; cost/LB: an upper bound on the "
                "true competitive ratio at confidence lb_confidence. Only plans certified "
                "feasible (Clopper–Pearson) are compared; cost_over_saa_opt is the SAA ratio, "
                "kept and labelled.", collapse=True))
    s.add(Table("runtime_sgm", "Solve time: shifted geometric mean",
                tabs.runtime_sgm(df, sh), tabs.SGM_COLUMNS,
                f"sgm = exp(mean(log(t + s))) − s with shift s = {sh:g} s, over every "
                "finished attempt (failures and time limits at their measured time). MIP "
                "benchmarking uses the same statistic with s = 10 s for hour-long runs "
                "(Achterberg 2007); our solves take seconds, hence 1 s by default "
                "(--sgm-shift)."))
    mats = tabs.profile_matrices(df)
    s.add_figure(figs.profiles(mats, ctx.styles, ctx.scale), "performance_profiles",
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
    population.section_elements(s, plan_ratios(df), df, ctx.styles, ctx.scale)
    return s


def section_ratio(ctx: Context) -> Section:
    s = Section("ratio", "3. Competitive ratio vs η and ε",
                "Measured cost / proven optimum (or, labelled '[vs SAA optimum (S = …)]' in the series "
                "name and the reference column, cost / the SAA optimum where no proven one exists: "
                "exact for its sample only, so not a competitive ratio) of every algorithm whose records carry a "
                "resolution η (DepL's expanded graph) and allocation tolerance ε, as run, "
                "beside Property 3's claimed ratio (1/η)(1+ε). A minimisation ratio "
                "cannot be below 1, which the claimed formula is for every η > 1 + ε. A "
                "series is one solver with all parameters but η and ε fixed, so DepL's "
                "default entry and its η sweep form one line.")
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
        single = figs.single_point_series(t, p)
        if single:
            s.note(f"Run at a single {tabs.size_label(p)} (a point, not a line; in the "
                   f"table): " + ", ".join(single) + ".")
        s.add_figure(figs.ratio_vs(t, p, ctx.styles, ctx.scale), f"ratio_vs_{p}",
                     f"Competitive ratio vs {tabs.size_label(p)}",
                     "Left, linear axis around 1: measured median, band min–max. Right, "
                     "log-log: the same beside Property 3's (1/η)(1+ε) (dashed, ×). "
                     "Dotted: ratio 1, the optimum. The optimum is proven, except for a series named "
                     "'[vs SAA optimum (S = …)]': the SAA optimum of its instance, not proven.",
                     missing=f"Nothing to draw against {tabs.size_label(p)}.")
    return s


def section_complexity(ctx: Context) -> Section:
    s = Section("complexity", "4. Complexity: runtime and work counted",
                "Runtime, and the work counters solvers report (diagnostics.work: "
                "vertices, branch-and-bound nodes, ...), against each size parameter on "
                "log-log axes. A slope is fitted by OLS on log(measure) vs log(size) over "
                "runs of one solver whose other parameters are identical (column fixed), "
                "with a 95 % t-interval (n − 2 degrees of freedom; column ci_kind). Counters are exact "
                "and deterministic, so their interval is no confidence interval but a fit-residual band: it "
                "only reflects departure from a power law; on runtimes it is a t confidence interval "
                "holding the timing noise of a shared machine. "
                "Property 2 claims O(|D|² + |M|²K²/η⁴ + 1/ε): exponent 2 for |D|, |M|, "
                "K̄; −4 for η as printed, +4 as implied by the vertex count |M|Kη² with "
                "O(V²); −1 for ε. A big-O exponent is an upper bound: a slope whose whole "
                "interval lies above it contradicts the claim. Only completed solves count "
                "(time limits are censored, errors measure nothing). A sum of terms shows "
                "its dominant term's slope.")
    fits = ctx.fits
    s.add(Table("complexity_fits", "Fitted log-log slopes", fits, cx.FIT_COLUMNS,
                "source = store (runtime_s, or a counter of diagnostics.work: column "
                "measure) or bench (pytest-benchmark median).", collapse=True))
    counters = cx.counter_vs_time(fits)
    s.add(Table("complexity_counters", "Work counters beside runtime", counters,
                cx.COUNTER_COLUMNS,
                "Per solver and size parameter: each counter's fitted slope (exact "
                "counts) with its 95 % fit-residual band (t, n − 2 dof; no sampling error), "
                "beside the runtime slope on the same "
                "runs, the exponent Property 2 prints, and the one the algorithm's own "
                "structure implies (for a vertex counter: |M|·K·η², DepL Sec. V)."))
    if counters.empty:
        s.missing("No solver in this store reports work counters (diagnostics.work) "
                  "over ≥ 3 sizes: the complexity verdicts rest on wall-clock time only.")
    if fits.empty:
        s.missing("No size parameter (η, ε, |M|, K̄, |D|, |N|, S) takes ≥ 3 distinct "
                  "values with the others fixed in this store"
                  + ("" if ctx.bench_given else " (and no --bench-json was given)")
                  + ": no slope can be fitted.")
    best = cx.best_fits(fits, by_family=True) if not fits.empty else fits
    is_knap = (best["family"] == KNAPSACK_FAMILY) if not best.empty else pd.Series(dtype=bool)
    general = best[~is_knap] if not best.empty else best
    for p in SIZE_PARAMETERS:
        f = cx_fig.complexity(general, p, ctx.styles, ctx.scale) if not general.empty else None
        if f is None:
            if not fits.empty:
                s.missing(f"{tabs.size_label(p)} was not varied (≥ 3 values, others "
                          f"fixed) outside the {KNAPSACK_FAMILY} family in this run.")
            continue
        s.add(Figure(f"complexity_{p}", f"Runtime vs {tabs.size_label(p)}", f,
                     "Points: runs of each series' largest fit group; lines: OLS fit "
                     "(slope, 95 % t confidence interval, n − 2 dof); dashed: the claimed exponent; dotted: the "
                     "exponent the vertex count implies (η only)."))
    work = cx.best_fits(fits[fits["measure"] != cx.TIME], by_family=True, measure=None) \
        if not fits.empty else fits
    for p in SIZE_PARAMETERS:
        if work.empty or not (work["parameter"] == p).any():
            continue
        f = cx_fig.complexity(work, p, ctx.styles, ctx.scale)
        s.add(Figure(f"complexity_work_{p}", f"Work counted vs {tabs.size_label(p)}", f,
                     "Exact counts of diagnostics.work per run; lines: OLS fit (slope, "
                     "95 % fit-residual band, t with n − 2 dof: exact counts, no confidence "
                     "interval); dashed: Property 2's exponent for the runtime; dotted: "
                     "the exponent of the vertex count |M|·K·η² (DepL Sec. V)."))
    knap = best[is_knap & (best["parameter"] == "n_models")] if not best.empty else best
    if knap.empty:
        s.missing(f"No {KNAPSACK_FAMILY}-family sweep over the number of items: the exact "
                  "solvers' growth on knapsack classes cannot be set beside DepL's.")
    else:
        f = cx_fig.complexity(knap, "n_models", ctx.styles, ctx.scale, max_series=18,
                            xlabel="n, knapsack items (one model version each) [items]")
        s.add(Figure("complexity_knapsack", "Knapsack classes: runtime vs items n", f,
                     "One series per algorithm and item class (Property 1's reduction: "
                     "one model per item). The exact solvers' growth beside DepL's; "
                     "dashed: Property 2's |M|² for reference."))
    if ctx.bench_given:
        bt = cx.bench_summary(ctx.bench)
        if bt.empty:
            s.missing("The --bench-json files hold no benchmark entries.")
        s.add(Table("bench", "pytest-benchmark measurements", bt, cx.BENCH_COLUMNS,
                    "Seconds; median over rounds."))
    else:
        s.missing("No pytest-benchmark JSON given (--bench-json DIR): only the store's "
                  "runtimes are fitted.")
    return s


def section_claims(ctx: Context) -> Section:
    s = Section("claims", "5. Claims audit",
                "One row per claim of the DepL paper (Properties 2–3 of Sec. V, Sec. IV-A, "
                "Sec. VI-B and the abstract) and of PACT's Fig. 6 (judged at matched risk against the "
                "adaptive optimum and open loop; closed loop against static plans not applicable, "
                "section 6): what the paper says, what this run "
                "measured, and the verdict (holds / does not hold / not decided / not applicable (mean vs "
                "quantile) / not measured in this run). Verdicts are mechanical: 'virtually matches' means "
                "the whole exact order-statistic interval on the median gap over distinct instances ≤ "
                f"{100 * claims_mod.MATCH_MEDIAN_GAP:g} % (the 90th percentile is printed, not judged); "
                "'over 27 %' means the interval on the median paired saving vs best-exp wholly ≥ 27 %; a "
                "complexity exponent fails when "
                "its 95 % t-interval (a fit-residual band on exact counters) lies wholly above the claimed one "
                "(for ε, asymptotic "
                "as ε → 0: wholly below), from ≥ 4 runs, judged on the work counters "
                "where the solver reports them and on runtime otherwise; Property 3 fails "
                "when any plan's ratio exceeds (1/η)(1+ε). 'The paper's DepL' is solver "
                "depl without calibrate (which trades the proven quantile bound for a "
                "statistical one).")
    table = claims_mod.audit(ctx.df, ctx.ratios, ctx.fits)
    s.add(Table("claims_audit", "Claims audit", table, claims_mod.CLAIMS_COLUMNS))
    s.add(Table("claims_bracket", "Figs. 5–6 claims re-judged on the certified bracket",
                ctx.bracket["claims"], bracket_mod.CLAIM_COLUMNS,
                "The same thresholds, with the certified bracket LB ≤ z* ≤ UB as the "
                "yardstick instead of the SAA optimum (column yardstick); only plans certified "
                "feasible count. 'not decided' = the bracket is too wide to tell."))
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
                "draws (level ci_level, method ci_method, as the record states them); "
                "met_target compares the point estimate with ℓmax.", collapse=True))
    return s


SECTION_BUILDERS: tuple[Callable[[Context], Section], ...] = (
    section_data, section_paper, section_gaps, section_ratio, section_complexity,
    section_claims, section_closed_loop, section_anytime, section_timing, section_measured)
