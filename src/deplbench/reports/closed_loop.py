"""Closed-loop evaluation in the report: the table beside the static one, a
figure like PACT's Fig. 6 (left), and the PACT claim.

Reads the ``closed_loop`` column of the task records (written when a sweep
sets ``[sweep.evaluation] closed_loop = {...}``;
:func:`deplbench.solvers.run.closed_loop`). Every row with it gives up to
three closed-loop series on the same seeded runs:

``plan``          the algorithm's static plan, run to its end whatever the
                  loss (a fixed policy; same draws as the static evaluator);
``plan_stopped``  the same plan stopped as soon as the observed ℓ ≤ ℓmax;
``policy``        the algorithm's own re-planning policy (closed-loop PACT,
                  receding-horizon DepL), when it has one.

The PACT claim (PACT paper Sec. VI-C: "PACT outperforms the alternative
solutions, and closely matches the optimum") is judged in
:mod:`deplbench.reports.claims` from :func:`pact_comparison`.

References
----------
PACT paper Sec. VI-B/C, Fig. 6 (left); docs/DESIGN.md "Closed-loop evaluation".
"""

from __future__ import annotations

import math

import pandas as pd

from deplbench.reports.elements import Section, Table
from deplbench.reports.figures import COST_AXIS, TARGET_AXIS, add_legend, small_multiples
from deplbench.reports.readability import tag
from deplbench.reports.reference import EXACT, reference_kind
from deplbench.reports.styles import info_for

#: The closed-loop series of a record, in display order, and their labels.
MODES = (("plan", "plan (run to its end)"), ("plan_stopped", "plan, stopped at ℓmax"),
         ("policy", "own policy (re-plans)"))

CLOSED_LOOP_COLUMNS = (
    "set", "loss_max", "algorithm", "mode", "static_cost", "static_quantile", "static_verdict",
    "runs", "p_success", "p_success_low", "p_success_high", "cost_mean", "cost_sem", "cost_q50",
    "cost_q99", "epochs_mean", "time_mean", "loss_quantile", "deadline_missed", "policy_calls", "sim_s",
    "p_success_level", "p_success_method",
)

#: Columns of :func:`pact_comparison`.
PACT_COMPARISON_COLUMNS = (
    "loss_max", "pact_open", "pact_closed", "pact_closed_sem", "pact_closed_p_success", "optimum",
    "optimum_status", "optimum_stopped", "static_learn", "static_learn_stopped", "one_switch",
    "one_switch_stopped", "instance_key", "optimum_source")

#: The PACT paper's set and the algorithms its claim names (registry names).
PACT_SET = "pact-vgg11"
PACT, STATIC_LEARN, ONE_SWITCH = "pact", "static-learn", "one-switch"


def _set_of(row) -> str:
    return row["paper_set"] if row.get("paper_set") else str(row.get("family") or "")


def closed_loop_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (record, closed-loop series), static columns beside.

    ``static_cost`` / ``static_quantile`` / ``static_verdict`` are the
    record's static evaluation (cost (2) of the plan, out-of-sample
    ω-quantile, verdict); the other columns are the closed-loop summary
    (``formulations.evaluation.closed_loop.ClosedLoopResult.summary``): P(success) with
    its two-sided Clopper–Pearson interval, mean (± standard error) and
    quantiles of the cost actually spent, mean epochs and time, the
    ω-quantile of the final loss, runs aborted at Tmax, policy calls and the
    simulation's wall time.
    """
    rows = []
    if df.empty or "closed_loop_d" not in df:
        return pd.DataFrame(columns=list(CLOSED_LOOP_COLUMNS))
    for _, r in df.iterrows():
        cl = r["closed_loop_d"]
        if not isinstance(cl, dict) or not cl:
            continue
        for mode, _label in MODES:
            s = cl.get(mode)
            if not isinstance(s, dict):
                continue
            ci = s.get("p_success_ci") or [math.nan, math.nan]
            cost = s.get("cost") or {}
            rows.append({
                "set": _set_of(r), "loss_max": r["loss_max"], "algorithm": r["algorithm"], "mode": mode,
                "static_cost": r["cost"], "static_quantile": r.get("quantile_oos"),
                "static_verdict": r.get("verdict"), "runs": s.get("runs"),
                "p_success": s.get("p_success"), "p_success_low": ci[0], "p_success_high": ci[1],
                "cost_mean": cost.get("mean"), "cost_sem": s.get("cost_sem"), "cost_q50": cost.get("q50"),
                "cost_q99": cost.get("q99"), "epochs_mean": (s.get("epochs") or {}).get("mean"),
                "time_mean": (s.get("time") or {}).get("mean"), "loss_quantile": s.get("loss_quantile"),
                "deadline_missed": s.get("deadline_missed"), "policy_calls": s.get("policy_calls"),
                "sim_s": s.get("wall_s"),
                "p_success_level": s.get("confidence", cl.get("confidence")),
                "p_success_method": s.get("p_success_method") or "",
            })
    if not rows:
        return pd.DataFrame(columns=list(CLOSED_LOOP_COLUMNS))
    t = pd.DataFrame(rows, columns=list(CLOSED_LOOP_COLUMNS))
    order = {m: i for i, (m, _) in enumerate(MODES)}
    return (t.assign(_o=t["mode"].map(order)).sort_values(["set", "loss_max", "algorithm", "_o"])
            .drop(columns="_o").reset_index(drop=True))


def pact_comparison(df: pd.DataFrame) -> pd.DataFrame:
    """Per instance of the PACT set (one row per ℓmax and distinct instance:
    seeded variants at one ℓmax are separate rows): PACT's costs (open loop = its static
    plan; closed loop = its policy's mean, with standard error) beside the
    optimum's, StaticLearn's and OneSwitch's plans (static cost, and mean
    cost when stopped at ℓmax in closed loop).

    The optimum is the exact static optimum (``milp-exact``, proven) where
    it ran, else the SAA optimum of an exact solver on its own scenarios
    (status optimal preferred; a time-limited incumbent is used and flagged
    in ``optimum_status``); ``optimum_source`` names which.
    """
    cols = list(PACT_COMPARISON_COLUMNS)
    if df.empty:
        return pd.DataFrame(columns=cols)
    sub = df[(df["paper_set"] == PACT_SET) & df["has_plan"]] if "paper_set" in df else df.iloc[0:0]
    if sub.empty:
        return pd.DataFrame(columns=cols)
    out = []

    def stopped(r):
        cl = r["closed_loop_d"] if isinstance(r["closed_loop_d"], dict) else {}
        s = cl.get("plan_stopped")
        return (s.get("cost") or {}).get("mean", math.nan) if isinstance(s, dict) else math.nan

    for (lm, key), g in sub.groupby(["loss_max", "instance_key"], sort=True):
        row = {c: math.nan for c in cols}
        row["loss_max"] = float(lm)
        row["instance_key"] = key
        row["optimum_status"] = ""
        row["optimum_source"] = ""
        p = g[g["solver"] == PACT]
        if not p.empty:
            r = p.iloc[0]
            row["pact_open"] = r["cost"]
            cl = r["closed_loop_d"] if isinstance(r["closed_loop_d"], dict) else {}
            pol = cl.get("policy") if isinstance(cl.get("policy"), dict) else None
            if pol:
                row["pact_closed"] = pol["cost"]["mean"]
                row["pact_closed_sem"] = pol.get("cost_sem", math.nan)
                row["pact_closed_p_success"] = pol.get("p_success", math.nan)
        ex = g[g["is_exact"]]
        if not ex.empty:
            ex = ex.assign(_k=(reference_kind(ex) != EXACT).astype(int),
                           _o=(ex["status"] != "optimal").astype(int)).sort_values(["_k", "_o", "cost"])
            r = ex.iloc[0]
            row["optimum"], row["optimum_status"] = r["cost"], r["status"]
            if r["_k"] == 0:
                what = "exact static optimum, proven"
            elif pd.notna(r["scenarios"]):
                what = f"SAA optimum, S = {r['scenarios']:g}, not proven"
            else:
                what = str(reference_kind(ex.iloc[:1]).iloc[0]) or "no proof"
            row["optimum_source"] = f"{r['solver']} ({what})"
            row["optimum_stopped"] = stopped(r)
        for name, key in ((STATIC_LEARN, "static_learn"), (ONE_SWITCH, "one_switch")):
            h = g[g["solver"] == name]
            if not h.empty:
                r = h.sort_values("cost").iloc[0]
                row[key], row[f"{key}_stopped"] = r["cost"], stopped(r)
        out.append(row)
    return pd.DataFrame(out, columns=cols)


def fig6_left(table: pd.DataFrame, styles, scale: float = 1.0):
    """PACT Fig. 6 (left)-style: cost vs ℓmax on the PACT set; solid = static
    plan cost, dashed = mean cost in closed loop (the algorithm's own policy
    where it has one, else its plan stopped at ℓmax), bars ± 1.96 s.e. More
    than :data:`~deplbench.reports.figures.MAX_SERIES` algorithms are split
    over panels (small multiples, a shared cost axis)."""
    t = table[table["set"] == PACT_SET] if not table.empty else table
    if t.empty:
        return None
    groups, fig, axes = small_multiples(t["algorithm"], styles, scale, sharey=True)
    for col, algs in enumerate(groups):
        ax = axes[0, col]
        for alg in algs:
            _fig6_series(ax, t[t["algorithm"] == alg], alg, info_for(styles, alg))
        ax.set_xlabel(TARGET_AXIS)
        ax.set_ylabel(COST_AXIS)
        ax.set_title(f"{PACT_SET}: static vs closed loop", fontsize=8)
        ax.grid(alpha=0.3)
    add_legend(fig, list(axes.ravel()))
    return fig


def _fig6_series(ax, g: pd.DataFrame, alg: str, st) -> None:
    """One algorithm's static (solid) and closed-loop (dashed) curves."""
    base = g[g["mode"] == "plan"].sort_values("loss_max")
    if not base.empty:
        tag(ax.plot(base["loss_max"], base["static_cost"], color=st.colour, marker=st.marker, ls="-",
                    ms=3, label=f"{alg}: plan (static)"), alg)
    cl = g[g["mode"] == "policy"]
    what = "closed loop (own policy)"
    if cl.empty:
        cl, what = g[g["mode"] == "plan_stopped"], "plan stopped at ℓmax"
    cl = cl.sort_values("loss_max")
    if not cl.empty:
        # no standard error (one run, none recorded): no bar at that point, never one of width 0
        sem = pd.to_numeric(cl["cost_sem"], errors="coerce").to_numpy(float)
        tag(list(ax.errorbar(cl["loss_max"], cl["cost_mean"], yerr=1.96 * sem,
                             color=st.colour, marker=st.marker, ls="--", ms=3, capsize=2,
                             label=f"{alg}: {what}").lines[:1]), alg)


def section_closed_loop(ctx) -> Section:
    """The report section (registered in :data:`deplbench.reports.sections.SECTION_BUILDERS`)."""
    s = Section("closed_loop", "6. Closed-loop evaluation (algorithms judged as they run)",
                "The static sections judge plans drawn up before training. Here each task "
                "whose sweep asked for it ([sweep.evaluation] closed_loop) is also simulated on "
                "seeded runs that observe the loss after every epoch "
                "(formulations/evaluation/closed_loop.py): its plan run to its end (the same draws as the "
                "static evaluator: same final losses), the plan stopped as soon as ℓ ≤ ℓmax, and "
                "the algorithm's own re-planning policy where it has one (PACT re-plans every "
                "epoch, as its paper runs it; receding-horizon DepL). A run succeeds when it "
                "ends with ℓ ≤ ℓmax within Tmax and K̄; cost is what the run actually spent. "
                "A fair comparison sets a re-planning policy beside the other plans stopped at "
                "ℓmax (they observe the loss too), not only beside their static cost. "
                "docs/DESIGN.md, 'Closed-loop evaluation'.")
    t = closed_loop_table(ctx.df)
    if t.empty:
        s.missing("No record carries a closed-loop simulation: run a sweep with "
                  "[sweep.evaluation] closed_loop = { runs = 10000, seed = 0 } (quick.toml and "
                  "paper.toml do so for the PACT set).")
    from deplbench.reports.adaptive import levels_text

    s.add(Table("closed_loop", "Closed loop beside static, per task and series", t,
                CLOSED_LOOP_COLUMNS,
                "static_*: the record's static evaluation of the plan. mode: plan / plan_stopped / "
                "policy (module reports/closed_loop.py). p_success with its two-sided "
                "Clopper–Pearson interval at "
                f"{levels_text(t['p_success_level'] if not t.empty else (), 'p_success_level')}"
                "; cost_mean ± cost_sem (standard error), quantiles over runs; loss_quantile "
                "= ω-quantile of ℓ(K) over the runs; sim_s = simulation wall time."))
    comp = pact_comparison(ctx.df)
    s.add(Table("pact_comparison", "PACT's setting (PACT Fig. 6 left): costs per target", comp,
                PACT_COMPARISON_COLUMNS,
                "pact_open = PACT's static plan (re-planned from robust predictions); pact_closed = "
                "mean cost of closed-loop PACT (± pact_closed_sem); *_stopped = that plan's mean cost "
                "when stopped at ℓmax in closed loop; optimum = the exact static optimum of the instance "
                "(milp-exact, proven), else the SAA optimum of an exact solver on its own scenarios (not a "
                "proven optimum of the chance-constrained problem); optimum_source says which."))
    if comp.empty:
        s.missing(f"No plan on the {PACT_SET} set: PACT's Fig. 6 (left) cannot be drawn.")
    from deplbench.reports.adaptive import stricter_level_series

    # an adaptive-opt entry at a stricter level than ω (the matched-risk PACT
    # claim's reference) is another risk: not a curve of this figure
    stricter = stricter_level_series(ctx.df)
    # the paper's instance (seed 0) only: a curve over ℓmax through several
    # seeded variants at one ℓmax would join unrelated instances; the
    # population is judged in the claims (table pact_matched)
    paper = closed_loop_table(ctx.df[ctx.df["instance_seed"].isin(["", "0"])]) if not t.empty else t
    s.add_figure(fig6_left(paper[~paper["algorithm"].isin(stricter)] if stricter else paper, ctx.styles,
                           ctx.scale),
                 "pact_fig6_left",
                 "PACT Fig. 6 (left)-style: cost vs ℓmax, static and closed loop, on the paper's instance",
                 "The paper's PACT-VGG11 instance (seed 0) at each target; the seeded variants are "
                 "judged in the claims (table pact_matched). "
                 "Solid: each algorithm's static plan cost. Dashed: mean cost in closed loop — "
                 "the algorithm's own policy where it has one, else its plan stopped at ℓmax; "
                 "bars ± 1.96 standard errors over the runs (a 95 % normal-approximation interval on the mean)."
                 + (f" Left out: {', '.join(sorted(stricter))} (adaptive-opt at a stricter level than ω, "
                    "for the matched-risk claim; table pact_matched)." if stricter else ""),
                 missing=f"No closed-loop simulation on the {PACT_SET} set.")
    _adaptive_part(s, ctx)
    return s


def _adaptive_part(s: Section, ctx) -> None:
    """Matched risk against the adaptive optimum (reports/adaptive.py)."""
    from deplbench.reports.adaptive import (
        MATCHED_COLUMNS,
        PACT_MATCHED_COLUMNS,
        PRICE_COLUMNS,
        ci_level_text,
        frontier_figure,
        matched_risk_table,
        pact_matched_table,
        price_of_adaptivity,
        ub_statement,
    )

    ub = ub_statement(ctx.df)
    m = matched_risk_table(ctx.df)
    ci = ci_level_text(m["ci_level"] if not m.empty else ())
    s.add(Table("matched_risk", "Matched risk: every policy and stopped plan against the adaptive optimum",
                m, MATCHED_COLUMNS,
                "The adaptive optimum = least expected cost of any policy that observes the loss and "
                f"succeeds with P ≥ ω (adaptive-opt: proven lower bound LB; {ub}). "
                f"p_success_low: lower end of the series' two-sided Clopper–Pearson interval at {ci}; "
                "meets_omega = p_success_low ≥ ω (an adaptive-opt policy is certified at ω on its own fresh "
                "runs, the share it gives up read from that certificate: its re-simulation here, a two-sided "
                "interval on fewer runs, may fall short of ω without contradicting it). lb_own = proven LB at "
                "p_success_low (the frontier's best "
                "bound at a level ≤ p_success_low), so with that one-sided confidence lb_own ≤ the optimum "
                "at the series' true P(success); ratio_own = cost_mean / lb_own, at that confidence ≥ "
                "cost_mean / that optimum — an estimate, as cost_mean is a sample mean. The ratio to the "
                "optimum at ω lies in [ratio_omega_low, ratio_omega_high] = [cost/UB, cost/LB] at the "
                "bracket's joint confidence (ratio_omega_level; cost_mean taken as exact, so the ends are "
                "estimates through it: ratio_omega_method)."))
    if m.empty:
        s.missing("No adaptive-opt record shares an instance with a closed-loop simulation: add "
                  "adaptive-opt to the sweep's PACT group (quick.toml does).")
    s.add(Table("pact_matched", "Closed-loop PACT against the adaptive optimum at PACT's certified level",
                pact_matched_table(ctx.df), PACT_MATCHED_COLUMNS,
                "One row per closed-loop PACT record on an instance with an adaptive bracket (the PACT claim's "
                "data). Each row's statements are made at a level chosen so that the claim's interval over "
                "instances holds at 95 % by the union bound when the adaptive-opt records' confidence leaves "
                "room (Bonferroni), else the claim states the lower joint level. pact_cost: closed-loop PACT's "
                "sample mean cost (an estimate); [pact_cost_low, pact_cost_high]: a two-sided "
                "normal-approximation (CLT) interval on its mean; pact_level: the one-sided Clopper–Pearson "
                "lower bound on PACT's P(success) from its successes and runs (for a record without its counts: "
                f"the lower end of its two-sided interval at {ci}); the two fail with probability ≤ pact_alpha "
                "together. lb: the proven bound on the adaptive optimum at that level (frontier level ≤ "
                "pact_level); ub: the upper confidence bound on the mean cost of an adaptive-opt policy "
                "certified at ub_level ≥ pact_level (empty when none is; " + ub + "), failing with probability "
                "≤ ub_alpha. PACT's excess over the optimum there lies in [gap_lo, gap_hi] = "
                "[pact_cost_low/ub − 1, pact_cost_high/lb − 1] with probability ≥ bracket_level = 1 − "
                "pact_alpha − ub_alpha; gap_lo = 0 without such a policy (PACT's own policy is certified at its "
                "level)."))
    price = price_of_adaptivity(ctx.df)
    s.add(Table("price_of_adaptivity", "Price of adaptivity: static optimum ÷ adaptive optimum", price,
                PRICE_COLUMNS,
                "static_optimum: the exact static optimum (records with reference exact-static), else the "
                "certified static bracket's UB (certified-static, labelled); price in [price_low, price_high] = "
                f"[static/UB, static/LB] of the adaptive bracket at price_level (adaptive_ub: {ub})."))
    if price.empty:
        s.missing("No instance has both an adaptive bracket and a static reference (exact-static or "
                  "certified-static): the price of adaptivity is not measured.")
    s.add_figure(frontier_figure(ctx.df, m, ctx.styles, ctx.scale), "adaptive_frontier",
                 "Cost–risk frontier: every policy against the adaptive optimum",
                 "Black line: proven lower bound on the least expected cost of any closed-loop policy at each "
                 "required P(success) (adaptive-opt's frontier); black star: its certified policy at its "
                 f"estimated P(success), drawn at UB (at ω, dotted line; {ub}). Filled markers: each "
                 "algorithm's own policy; open markers: its plan stopped at ℓmax, each at its estimated "
                 "P(success) and sample mean cost. No policy's true (P(success), mean cost) lies below the "
                 "line; a point may, within its sampling error.",
                 missing="No adaptive-opt record: the frontier cannot be drawn.")


__all__ = ["CLOSED_LOOP_COLUMNS", "PACT_COMPARISON_COLUMNS", "closed_loop_table", "pact_comparison", "fig6_left",
           "section_closed_loop", "PACT_SET"]
