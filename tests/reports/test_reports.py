"""Tests of deplbench.reports: a report built from small stores has every
section, every file it links, every promised table column, and says what
is missing instead of crashing."""

from __future__ import annotations

import html
import json
import math
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from deplbench.errors import DeplbenchError
from deplbench.reports import adaptive as ad_mod
from deplbench.reports import anytime as any_mod
from deplbench.reports import bracket as bracket_mod
from deplbench.reports import browser
from deplbench.reports import claims as claims_mod
from deplbench.reports import closed_loop as cl_mod
from deplbench.reports import complexity as cx
from deplbench.reports import measured as meas_mod
from deplbench.reports import population as pop_mod
from deplbench.reports import repetitions as rep_mod
from deplbench.reports import tables as tabs
from deplbench.reports.build import ReportOptions, build_report
from deplbench.reports.data import STORE_COLUMNS, ReportError, load_bench_json, prepare
from deplbench.reports.headline import CLAIM_GLANCE_COLUMNS, GLANCE_COLUMNS, HEADLINE_COLUMNS
from deplbench.reports.solvers import SOLVER_COLUMNS
from deplbench.reports.stats import loglog_fit, optimum_per_instance, performance_profile, shifted_geometric_mean
from deplbench.reports.styles import PALETTE, SHADES, fallback_style, series_info, shade

SECTION_IDS = ("data", "paper", "gaps", "ratio", "complexity", "claims", "closed_loop", "anytime", "timing",
               "measured")
SMALL = ReportOptions(scale=0.4, dpi=40, formats=("png",))
MODELS = ("fast-unsteady", "intermediate", "slow-steady")


# --------------------------------------------------------------------------
# synthetic stores (exactly the task-record columns)

#: Solver metadata as the runner stores it in every record (H3's registry).
META = {
    "milp": {"algorithm_label": "MILP", "exact": True,
             "style": {"colour": "#1f77b4", "marker": "o", "linestyle": "--"}},
    "knapsack-dp": {"algorithm_label": "knapsack DP", "exact": True,
                    "style": {"colour": "#7f7f7f", "marker": "*", "linestyle": ":"}},
    "depl": {"algorithm_label": "DepL", "exact": False,
             "style": {"colour": "#2ca02c", "marker": "^", "linestyle": "-"}},
    "best-exp": {"algorithm_label": "best-exp", "exact": False,
                 "style": {"colour": "#ff7f0e", "marker": "o", "linestyle": "-"}},
    "pact": {"algorithm_label": "PACT", "exact": False,
             "style": {"colour": "#9467bd", "marker": "D", "linestyle": ":"}},
}


def _row(**kw) -> dict:
    r = {c: None for c in STORE_COLUMNS}
    alg = kw.get("algorithm")
    r.update(META.get(alg, {}))
    r["label"] = alg
    params = kw.get("params") or {}
    for name in ("eta", "epsilon", "scenarios"):
        r[name] = params.get(name)
    r.update(kw)
    for c in ("instance_params", "params", "plan", "diagnostics", "evaluation", "env",
              "style"):
        if isinstance(r[c], (dict, list)):
            r[c] = json.dumps(r[c])
    return r


def _evaluation(rng, k, loss_max, spread):
    mean = np.linspace(20.0, 0.8 * loss_max, k + 1)
    return {"mean": mean.tolist(), "p01": (mean - spread).tolist(),
            "p99": (mean + spread).tolist(), "expected_loss": float(mean[-1]),
            "epochs_per_model": {m: int(rng.integers(0, k + 1)) for m in MODELS},
            "cost_per_model": {m: float(rng.uniform(1, 5)) for m in MODELS}}


def make_frame(seed: int = 0, depl_factor: float = 1.01, best_exp_factor: float = 1.4,
               eta_exponent: float = 2.0, violations: int = 0, work: bool = False,
               plugin: bool = False, bracket: bool = False) -> pd.DataFrame:
    """AlexNet/MobileNet target sweeps (milp, depl at two η, best-exp), a
    knapsack size sweep with the knapsack DP, an η runtime sweep and one
    error; ``work`` adds DepL vertex counters ∝ η², ``plugin`` a third-party
    solver 'zz-plugin' nobody in deplbench knows, with its own style,
    ``bracket`` a certified bracket (milp-certified) at ℓmax = 9 and certified
    verdicts on every plan but best-exp's."""
    rng = np.random.default_rng(seed)
    rows = []
    plug = dict(algorithm_label="ZZ", exact=False,
                style={"colour": "#123456", "marker": "X", "linestyle": "-."})
    for net in ("alexnet", "mobilenet"):
        for s in (0, 1):
            for lm in (5.0, 9.0, 13.0):
                opt = 100.0 / lm * (1 + 0.1 * s)
                common = dict(sweep="paper", family="realistic", instance_name=f"{net}-{s}",
                              instance_set=net, instance_params={"family": net},
                              instance_seed=s, instance_sha=f"{net}-{s}-{lm}",
                              n_models=3, horizon=100, loss_max=lm, omega=0.99,
                              code_version="0.1.0", plan={"epochs": []})
                runs = [("milp", "milp", {"scenarios": 50}, opt, 2.0, 0.2),
                        ("depl", "depl", {"eta": 200, "epsilon": 0.1}, opt * depl_factor,
                         0.3, 0.3),
                        ("depl", "depl-eta", {"eta": 50, "epsilon": 0.1},
                         opt * depl_factor * 1.04, 0.05, 0.3),
                        ("best-exp", "best-exp", {"eta": 200, "epsilon": 0.1},
                         opt * best_exp_factor, 0.1, 1.0)]
                if plugin:
                    runs.append(("zz-plugin", "zz-plugin", {"knob": 1}, opt * 1.2, 0.4, 0.3))
                if bracket and lm == 9.0:
                    b = {"status": "certified", "confidence": 0.95,
                         "lower_bound": {"value": opt * 0.99, "confidence": 0.975,
                                         "method": "order statistic of M SAA optima"},
                         "upper_bound": {"value": opt * 1.005, "method": "Clopper-Pearson"}}
                    rows.append(_row(
                        **common, key=f"{net}-{s}-{lm}-cert", algorithm="milp-certified",
                        algorithm_label="MILP bracket", exact=False, params={"scenarios": 500},
                        status="feasible", cost=opt * 1.005, lower_bound=opt * 0.99,
                        runtime_s=5.0, certified_verdict="certified feasible",
                        diagnostics={"bracket": b}))
                for alg, label, params, cost, rt, spread in runs:
                    k = int(30 / lm) + 2
                    q = lm * (0.99 if alg != "best-exp" else 1.05)
                    ev = _evaluation(rng, k, lm, spread)
                    rows.append(_row(
                        **common, key=f"{net}-{s}-{lm}-{label}", algorithm=alg,
                        **(plug if alg == "zz-plugin" else {}), label=label,
                        params=params, status="optimal" if alg == "milp" else "feasible",
                        cost=cost, lower_bound=opt if alg == "milp" else None,
                        gap=0.0 if alg == "milp" else None, runtime_s=rt,
                        quantile_oos=q, quantile_ci_low=q - 0.01, quantile_ci_high=q + 0.01,
                        ci_level=0.95, ci_method="order-statistic",
                        verdict="feasible" if q < lm else "infeasible", epochs=k,
                        expected_loss=ev["expected_loss"], evaluation=ev,
                        certified_verdict=("certified feasible" if alg != "best-exp"
                                           else "not certified") if bracket else None,
                        diagnostics={"submodularity": {"violated": violations, "checked": 12,
                                                       "exhaustive": True}}
                        if alg == "depl" else {}))
    for n in (5, 10, 20, 40):
        for s in (0, 1):
            dp = 10.0 + n
            runs = [("knapsack-dp", 1e-4 * n, dp, {}), ("milp", 0.01 * n ** 1.5, dp,
                                                         {"scenarios": 1}),
                    ("depl", 0.001 * n ** 2, dp * 1.02, {"eta": 100, "epsilon": 0.1})]
            if plugin:
                runs.append(("zz-plugin", 0.002 * n, dp * 1.1, {"knob": 1}))
            for alg, rt, cost, params in runs:
                rows.append(_row(
                    key=f"k{n}-{s}-{alg}", sweep="knapsack", family="knapsack",
                    instance_set="knapsack", instance_name=f"knap-{n}-{s}",
                    instance_params={"item_class": "uncorrelated", "n_items": n},
                    instance_seed=s, instance_sha=f"knap-{n}-{s}", n_models=n, horizon=10,
                    algorithm=alg, **(plug if alg == "zz-plugin" else {}), params=params,
                    status="optimal" if META.get(alg, {}).get("exact") else "feasible",
                    cost=cost, runtime_s=rt * rng.uniform(0.95, 1.05), loss_max=1.0,
                    omega=0.99, quantile_oos=0.9, quantile_ci_low=0.9, quantile_ci_high=0.9,
                    verdict="feasible", epochs=3, plan={"epochs": []},
                    evaluation={"mean": [2.0, 1.5, 0.9], "p01": [2.0, 1.5, 0.9],
                                "p99": [2.0, 1.5, 0.9]}))
    for eta in (10, 20, 40, 80):
        for s in (0, 1, 2):
            # the counters and the exponents the solver declares for them
            # (reports take implied exponents only from declarations)
            diag = {"work": {"vertices": 7 * eta ** 2, "edges": 3 * eta ** 2 + 11 * eta},
                    "work_exponents": {"vertices": {"eta": 2}, "edges": {"eta": 2}}} if work else {}
            rows.append(_row(
                key=f"eta{eta}-{s}", sweep="complexity", family="synthetic",
                instance_set="scale", instance_name=f"syn-{s}",
                instance_params={"n_models": 4, "horizon": 20}, instance_seed=s,
                instance_sha=f"syn-{s}", n_models=4, horizon=20, algorithm="depl",
                label="depl-eta", params={"eta": eta, "epsilon": 0.1}, status="feasible",
                cost=50.0, runtime_s=1e-4 * eta ** eta_exponent * rng.uniform(0.95, 1.05),
                loss_max=2.0, omega=0.99, quantile_oos=1.9, verdict="feasible", epochs=10,
                diagnostics=diag))
    rows.append(_row(key="err", sweep="paper", family="realistic", instance_name="alexnet-0",
                     instance_set="alexnet", instance_params={"family": "alexnet"},
                     instance_seed=0, algorithm="pact", params={}, status="error",
                     message="boom", error="Traceback ...", runtime_s=0.1, loss_max=5.0,
                     omega=0.99))
    return pd.DataFrame(rows, columns=list(STORE_COLUMNS))


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs, self.section_ids, self.tags = [], [], set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.add(tag)
        if tag == "img":
            self.refs.append(a["src"])
        if tag == "a" and not a.get("href", "").startswith("#"):
            self.refs.append(a["href"])
        if tag == "section":
            self.section_ids.append(a["id"])


def _parse(index: Path) -> _Links:
    p = _Links()
    p.feed(index.read_text(encoding="utf-8"))
    return p


def _promised_columns() -> dict[str, tuple]:
    """Every table the report writes → the columns it promises."""
    return {
        "overview": tabs.OVERVIEW_COLUMNS, "fig5_cost_vs_target": tabs.COST_VS_TARGET_COLUMNS,
        "fig5_normalised_expected_loss": tabs.NORM_LOSS_COLUMNS,
        "fig5_eta_effect": tabs.ETA_EFFECT_COLUMNS,
        "fig7_epochs_per_model": tabs.PER_MODEL_COLUMNS,
        "fig8_cost_per_model": tabs.PER_MODEL_COLUMNS, "gaps": tabs.GAPS_COLUMNS,
        "oracle_agreement": tabs.ORACLE_COLUMNS, "milp_status": tabs.MILP_STATUS_COLUMNS,
        "milp_time_limit": tabs.MILP_LIMIT_COLUMNS, "runtime_sgm": tabs.SGM_COLUMNS,
        "performance_profiles": tabs.PROFILE_COLUMNS, "exact_profiles": pop_mod.PROFILE_COLUMNS,
        "competitive_ratio": tabs.RATIO_VS_COLUMNS, "complexity_fits": tabs.FIT_COLUMNS,
        "bench": tabs.BENCH_COLUMNS, "claims_audit": claims_mod.CLAIMS_COLUMNS,
        "depl_vs_best_exp": claims_mod.PAIRS_COLUMNS, "target_misses": tabs.MISSES_COLUMNS,
        "oos_quantiles": tabs.OOS_COLUMNS, "algorithms": tabs.ALGORITHM_COLUMNS,
        "complexity_counters": cx.COUNTER_COLUMNS, "headline": HEADLINE_COLUMNS,
        "certified_brackets": bracket_mod.BRACKET_COLUMNS,
        "bracket_ratios": bracket_mod.RATIO_COLUMNS, "claims_bracket": bracket_mod.CLAIM_COLUMNS,
        "solver_comparison": SOLVER_COLUMNS,
        "closed_loop": cl_mod.CLOSED_LOOP_COLUMNS, "pact_comparison": cl_mod.PACT_COMPARISON_COLUMNS,
        "timing_spread": rep_mod.TIMING_COLUMNS, "primal_integral": any_mod.INTEGRAL_COLUMNS,
        "glance_alexnet": GLANCE_COLUMNS, "glance_mobilenet": GLANCE_COLUMNS,
        "glance_claims": CLAIM_GLANCE_COLUMNS,
        "matched_risk": ad_mod.MATCHED_COLUMNS, "price_of_adaptivity": ad_mod.PRICE_COLUMNS,
        "pact_matched": ad_mod.PACT_MATCHED_COLUMNS,
        "measured_models": meas_mod.MODEL_COLUMNS, "measured_grid_families": meas_mod.GRID_FAMILY_COLUMNS,
        "measured_alternatives": meas_mod.ALTERNATIVE_COLUMNS,
        "measured_independence": meas_mod.INDEPENDENCE_COLUMNS, "measured_variance": meas_mod.VARIANCE_COLUMNS,
        "measured_replay": meas_mod.REPLAY_COLUMNS, "measured_claims": claims_mod.CLAIMS_COLUMNS,
    }


def _check_report(out: Path, summary) -> str:
    """Shared structural checks; returns the HTML text."""
    assert summary.errors == []
    text = (out / "index.html").read_text(encoding="utf-8")
    parsed = _parse(out / "index.html")
    assert tuple(parsed.section_ids) == SECTION_IDS
    assert "script" not in parsed.tags and "link" not in parsed.tags
    for ref in parsed.refs:
        assert not re.match(r"^[a-z]+://", ref), f"network reference {ref}"
        assert (out / ref).is_file(), f"broken link {ref}"
    promised = _promised_columns()
    for name in summary.tables:
        csv = pd.read_csv(out / "tables" / f"{name}.csv")
        assert tuple(csv.columns) == tuple(promised[name]), name
        md = (out / "tables" / f"{name}.md").read_text(encoding="utf-8")
        header = next(line for line in md.splitlines() if line.startswith("| "))
        assert [c.strip() for c in header.strip("|").split(" | ")] == list(promised[name])
        assert f"tables/{name}.csv" in parsed.refs
    for name in summary.figures:
        assert f"figures/{name}.png" in parsed.refs
    manifest = json.loads((out / "manifest.json").read_text())
    for rel in manifest["figures"] + manifest["tables"]:
        assert (out / rel).is_file()
    return text


# --------------------------------------------------------------------------
# the full report


@pytest.fixture(scope="module")
def full_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("full")
    bench = tmp_path_factory.mktemp("bench")
    (bench / "run.json").write_text(json.dumps({"benchmarks": [
        {"name": f"test_depl_graph[{eta}]", "fullname": f"b.py::test_depl_graph[{eta}]",
         "group": "depl-graph", "params": {"eta": eta}, "extra_info": {},
         "stats": {"min": 1e-5 * eta ** 3, "median": 1.1e-5 * eta ** 3,
                   "mean": 1.2e-5 * eta ** 3, "stddev": 1e-6, "rounds": 5}}
        for eta in (8, 16, 32, 64)]}))
    (bench / "junk.json").write_text("{not json")
    # the figures' own size (scale 1) at a low dpi: one build serves the
    # structure checks and the readability check of every figure
    opts = ReportOptions(dpi=60, formats=("png", "svg"))
    summary = build_report(make_frame(work=True, plugin=True, bracket=True), out,
                           bench_json=bench,
                           options=opts)
    return out, summary


@pytest.mark.slow
def test_every_figure_of_the_full_report_is_readable(full_report):
    """Plugin series, brackets, work counters and benchmark timings (the
    synthetic store) drawn at the figures' own size: the readability check
    (deplbench.reports.readability) finds nothing."""
    _out, summary = full_report
    assert summary.errors == [] and summary.figures
    assert summary.figure_problems == []


@pytest.mark.slow
def test_full_report_structure(full_report):
    out, summary = full_report
    text = _check_report(out, summary)
    for name in summary.figures:  # both formats written and linked
        assert (out / "figures" / f"{name}.svg").is_file()
        assert f'href="figures/{name}.svg"' in text
    # the paper's figures for both sets, the profiles, the η complexity plot
    for fig in ("cost_vs_target_alexnet", "cost_vs_target_mobilenet",
                "normalised_loss_alexnet", "eta_effect_alexnet",
                "fig7_epochs_per_model_alexnet", "fig8_cost_per_model_alexnet",
                "fig9_trajectories_alexnet", "performance_profiles", "ratio_vs_eta",
                "complexity_eta", "complexity_knapsack"):
        assert fig in summary.figures, fig
    # a bad benchmark file is reported, not fatal
    assert "junk.json: not a pytest-benchmark JSON file" in text


@pytest.mark.slow
def test_full_report_numbers(full_report):
    out, summary = full_report
    gaps = pd.read_csv(out / "tables" / "gaps.csv")
    # the sweep entry's label is the series; its parameters did not vary
    depl = gaps[(gaps["family"] == "realistic") & (gaps["algorithm"] == "depl")]
    assert len(depl) == 1 and depl["ratio_median"].iloc[0] == pytest.approx(1.01)
    knap = gaps[(gaps["family"] == "knapsack") & (gaps["algorithm"] == "milp")]
    # the scenario-free exact solver is the reference optimum
    assert knap["optimum_sources"].iloc[0] == "knapsack-dp"
    assert knap["ratio_max"].iloc[0] == pytest.approx(1.0)
    status = pd.read_csv(out / "tables" / "milp_status.csv").set_index("algorithm")
    # every exact solver of the records, and nothing else
    assert set(status.index) == {"milp", "knapsack-dp"}
    assert status.loc["milp", "optimal"].sum() == 12 + 8
    assert status.loc["knapsack-dp", "optimal"].sum() == 8
    fits = pd.read_csv(out / "tables" / "complexity_fits.csv")
    eta = fits[(fits["source"] == "store") & (fits["parameter"] == "eta")
               & (fits["family"] == "synthetic")]
    assert eta["slope"].iloc[0] == pytest.approx(2.0, abs=0.1)
    assert eta["verdict"].iloc[0] == "contradicts"  # slope 2 vs claimed η^-4
    bench = fits[fits["source"] == "bench"]
    assert bench["slope"].iloc[0] == pytest.approx(3.0, abs=1e-6)
    misses = pd.read_csv(out / "tables" / "target_misses.csv").set_index("algorithm")
    assert misses.loc["best-exp", "missed"] == 12
    assert misses.loc["best-exp", "missed_confirmed"] == 12
    assert misses.loc["milp", "missed"] == 0
    oos = pd.read_csv(out / "tables" / "oos_quantiles.csv")
    assert set(oos["met_target"]) <= {"yes", "no", "not evaluated"}
    assert (oos["algorithm"] != "pact").all()  # the errored run has no plan


@pytest.mark.slow
def test_claims_audit_rows(full_report):
    _, summary = full_report
    c = summary.claims.set_index("claim")
    assert len(c) == 8 and set(c["verdict"]) <= set(claims_mod.VERDICTS)
    for col in ("compared", "reference", "statistic", "instances"):
        assert c[col].notna().all(), col      # the PACT rows too, even when not measured
    assert c.loc["Property 3: competitive ratio", "paper_says"].startswith("“The DepL solution")
    # no PACT-VGG11 rows in this store: PACT's Fig. 6 claim (closed loop, open loop, against the
    # adaptive optimum) is not measured
    assert (c.loc[[k for k in c.index if k.startswith("PACT Fig. 6")], "verdict"]
            == claims_mod.UNMEASURED).sum() == 3
    assert c.loc["Property 2: complexity", "verdict"] == claims_mod.FAILS
    assert c.loc["Property 3: competitive ratio", "verdict"] == claims_mod.FAILS
    assert c.loc["Sec. IV-A: submodularity", "verdict"] == claims_mod.HOLDS
    # against the certified bracket [0.99, 1.005]·opt DepL's gap lies in
    # [0.5 %, 2.02 %] on 4 distinct instances: too few for a 95 % interval
    # on the median (6 are needed), so neither Figs. 5–6 claim is decided
    assert c.loc["Figs. 5–6: DepL virtually matches the optimum", "verdict"] == \
        claims_mod.NOT_DECIDED
    assert c.loc["Figs. 5–6: DepL virtually matches the optimum", "instances"] == 4
    # saving 1 - 1.01/1.4 = 27.9 % ≥ 27 % on every paired instance (≥ 6 of
    # them): the whole interval on the median is above 27 %
    beats = c.loc["Figs. 5–6: DepL beats best-exp by over 27 %"]
    assert beats["verdict"] == claims_mod.HOLDS and beats["instances"] >= 6
    assert "27.9 % [27.9 %, 27.9 %]" in beats["measured"]


@pytest.mark.slow
def test_unknown_algorithm_in_every_listing_section(full_report):
    """A third-party solver nobody in deplbench has heard of appears in every
    section that lists algorithms, drawn in the style its records carry."""
    out, summary = full_report
    listing = ("overview", "algorithms", "fig5_cost_vs_target", "fig7_epochs_per_model",
               "fig8_cost_per_model", "gaps", "runtime_sgm", "performance_profiles",
               "target_misses", "oos_quantiles", "headline")
    for name in listing:
        t = pd.read_csv(out / "tables" / f"{name}.csv")
        assert "zz-plugin" in set(t["algorithm"]), name
    alg = pd.read_csv(out / "tables" / "algorithms.csv").set_index("algorithm")
    assert alg.loc["zz-plugin", "colour"] == "#123456"
    assert alg.loc["zz-plugin", "label"] == "ZZ" and alg.loc["zz-plugin", "exact"] == "no"
    assert alg.loc["milp", "exact"] == "yes"
    # exact solvers are listed first, in every table
    assert list(alg.index[:2]) == ["knapsack-dp", "milp"]
    for fig in ("cost_vs_target_alexnet", "performance_profiles", "fig9_trajectories_alexnet"):
        svg = (out / "figures" / f"{fig}.svg").read_text()
        assert "#123456" in svg, fig
    assert "#2ca02c" in (out / "figures" / "cost_vs_target_alexnet.svg").read_text()


def test_series_styles_from_records_and_fallback():
    df = make_frame(plugin=True)
    i = df["algorithm"] == "zz-plugin"
    df.loc[i, "style"] = None
    info = series_info(prepare(df).df)
    fb = fallback_style("zz-plugin")
    assert (info["zz-plugin"].marker, info["zz-plugin"].linestyle) == fb[1:]
    assert fb == fallback_style("zz-plugin") and fb[0] in PALETTE
    # the fallback colour, or a shade of it where a declared style took it
    assert info["zz-plugin"].colour in {fb[0]} | {shade(fb[0], f) for f in SHADES}
    assert len({i.colour for k, i in info.items()}) == len(info)
    assert info["depl"].colour == "#2ca02c" and info["depl"].marker == "^"
    # a labelled entry of the same solver: a shade of its colour, its own line
    var = info["depl-eta"]
    assert var.colour in {shade("#2ca02c", f) for f in SHADES} and var.solver == "depl"
    assert (var.marker, var.linestyle) != ("^", "-")
    assert info["milp"].exact and not info["depl"].exact


@pytest.mark.slow
def test_headline_box(full_report):
    out, summary = full_report
    text = (out / "index.html").read_text(encoding="utf-8")
    box = text.index('class="headline"')
    assert box < text.index("<nav>")
    head = pd.read_csv(out / "tables" / "headline.csv")
    assert set(head["set"]) == {"alexnet", "mobilenet"}
    alex = head[head["set"] == "alexnet"].set_index("algorithm")
    # against the certified bracket (ℓmax 9 only): cost/UB and cost/LB
    assert alex.loc["depl", "reference"] == "certified-static"
    assert alex.loc["depl", "ratio_ref_median"] == pytest.approx(1.01 / 1.005)
    assert alex.loc["depl", "ratio_lb_median"] == pytest.approx(1.01 / 0.99)
    assert alex.loc["depl", "with_reference"] == 2 and alex.loc["depl", "instances"] == 6
    # the SAA ratio stays, labelled as such
    assert alex.loc["depl", "ratio_saa_median"] == pytest.approx(1.01)
    assert alex.loc["milp", "ratio_saa_median"] == pytest.approx(1.0)
    assert alex.loc["best-exp", "mc_met"] == 0 and alex.loc["best-exp", "evaluated"] == 6
    assert alex.loc["best-exp", "missed"] == 6
    assert alex.loc["best-exp", "verdict"].startswith("misses ℓmax")
    assert alex.loc["depl", "mc_met"] == 6 and alex.loc["depl", "missed"] == 0
    # the claims, one row each, inside the box, verdicts coloured; a row
    # marked superseded stays in the audit (section 5), never in the glance
    inner = html.unescape(text[box:text.index("<nav>")])
    for row in summary.claims.itertuples(index=False):
        assert (row.claim in inner) != ("superseded" in row.claim), row.claim
    assert 'data-col="verdict"' in inner and "v-fails" in inner or "v-holds" in inner


@pytest.mark.slow
def test_certified_bracket_wired_into_the_report(full_report):
    out, summary = full_report
    br = pd.read_csv(out / "tables" / "certified_brackets.csv")
    assert len(br) == 4 and set(br["set"]) == {"alexnet", "mobilenet"}
    ratios = pd.read_csv(out / "tables" / "bracket_ratios.csv")
    depl = ratios[ratios["algorithm"] == "depl"]
    assert depl["cost_over_ub"].to_numpy() == pytest.approx(1.01 / 1.005)
    assert ratios.loc[ratios["algorithm"] == "best-exp", "cost_over_ub"].isna().all()
    rejudged = pd.read_csv(out / "tables" / "claims_bracket.csv")
    assert len(rejudged) == 2 and rejudged["yardstick"].str.contains("bracket").all()
    text = html.unescape((out / "index.html").read_text(encoding="utf-8"))
    box = text[text.index('class="headline"'):text.index("<nav>")]
    assert "certified bracket (milp-certified) on 2/6 instances, confidence ≥ 0.95" in box
    head = pd.read_csv(out / "tables" / "headline.csv")
    alex = head[head["set"] == "alexnet"].set_index("algorithm")
    assert alex.loc["depl", "certified_feasible"] == 6
    assert alex.loc["best-exp", "certified_feasible"] == 0


@pytest.mark.slow
def test_tables_never_wider_than_the_page(full_report):
    out, _ = full_report
    text = (out / "index.html").read_text(encoding="utf-8")
    assert ".scroll{max-width:100%;overflow-x:auto}" in text
    # every table sits in a horizontally scrolling box
    assert text.count("<table") == len(re.findall(r'<div class="scroll[^"]*"><table', text))
    # long tables are folded
    assert "<details><summary>Show the table" in text


@pytest.mark.slow
@pytest.mark.system_packages
@pytest.mark.skipif(browser.find_chromium() is None,
                    reason="no Chromium binary on PATH (Debian: apt-get install "
                           "chromium-headless-shell); CI installs it")
def test_rendered_page_fits_the_viewport(full_report, tmp_path):
    """Headless Chromium renders the report: the page is never wider than
    the viewport (wide tables scroll inside their own box). Skipped at
    collection, before the report fixture is built, when there is no browser."""
    out, _ = full_report
    for width in (1280, 800):
        scroll, viewport = browser.page_width(out / "index.html", width=width)
        assert viewport == width and scroll <= viewport, (width, scroll)
    png = browser.screenshot(out / "index.html", tmp_path / "page.png", width=800,
                             height=1200)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ReportError, match="width"):
        browser.page_width(out / "index.html", width=10)


@pytest.mark.slow
def test_work_counters_fitted_beside_runtime(full_report):
    out, summary = full_report
    fits = pd.read_csv(out / "tables" / "complexity_fits.csv")
    v = fits[(fits["measure"] == "vertices") & (fits["parameter"] == "eta")]
    assert len(v) == 1
    # exact counts 7·η²: the counter slope recovers 2 with a tight interval
    assert v["slope"].iloc[0] == pytest.approx(2.0, abs=0.01)
    assert v["ci_high"].iloc[0] - v["ci_low"].iloc[0] < 0.01
    assert v["implied_exponent"].iloc[0] == 2.0
    counters = pd.read_csv(out / "tables" / "complexity_counters.csv")
    row = counters[(counters["counter"] == "vertices")].iloc[0]
    assert row["time_slope"] == pytest.approx(2.0, abs=0.1) and row["time_points"] == 12
    assert "complexity_work_eta" in summary.figures
    p2 = summary.claims.set_index("claim").loc["Property 2: complexity", "measured"]
    assert "counter 'edges' slope" in p2 or "counter 'vertices' slope" in p2
    assert "judged on work counters (exact counts) for η" in p2


def test_property2_epsilon_judged_on_the_steepest_fall():
    """As ε → 0 the dominant counter is the one that grows fastest as ε
    shrinks (1/ε² here), not the flattest; a constant counter cannot hide it."""
    rows = []
    for eps in (0.5, 0.2, 0.1, 0.05, 0.01):
        rows.append(_row(key=f"e{eps}", family="synthetic", instance_name="s",
                         instance_sha="s", instance_params={"n_models": 3}, n_models=3,
                         algorithm="depl", params={"eta": 100, "epsilon": eps},
                         status="feasible", cost=1.0, runtime_s=0.1 / eps ** 0.5,
                         diagnostics={"work": {"cells": 100 / eps ** 2, "graphs": 5}}))
    df = prepare(pd.DataFrame(rows, columns=list(STORE_COLUMNS))).df
    fits = cx.complexity_fits(df)
    cells = fits[fits["measure"] == "cells"].iloc[0]
    assert cells["slope"] == pytest.approx(-2.0, abs=1e-9)
    row = claims_mod.property2(fits)
    assert "counter 'cells' slope -2.00" in row["measured"]
    assert row["verdict"] == claims_mod.FAILS  # faster than 1/ε as ε → 0
    # on runtime alone (ε^-0.5) the same claim holds
    no_work = fits[fits["measure"] == cx.TIME]
    assert claims_mod.property2(no_work)["verdict"] == claims_mod.HOLDS


def test_counter_slope_recovers_known_exponent():
    rng = np.random.default_rng(5)
    x = np.repeat([3.0, 6.0, 12.0, 24.0, 48.0], 2)
    fit = loglog_fit(x, 5 * x ** 1.5)  # a deterministic count: no noise
    assert fit.slope == pytest.approx(1.5, abs=1e-9)
    noisy = loglog_fit(x, 5 * x ** 1.5 * np.exp(rng.normal(0, 0.3, x.size)))
    assert noisy.ci_high - noisy.ci_low > 100 * (fit.ci_high - fit.ci_low)


def test_claims_flip_with_the_data():
    df = prepare(make_frame(depl_factor=1.10, best_exp_factor=1.2, eta_exponent=-4.5,
                            violations=3)).df
    from deplbench.reports.stats import with_ratios

    ratios = with_ratios(df)
    table = claims_mod.audit(df, ratios, tabs.complexity_fits(df)).set_index("claim")
    assert table.loc["Sec. IV-A: submodularity", "verdict"] == claims_mod.FAILS
    assert table.loc["Figs. 5–6: DepL virtually matches the optimum", "verdict"] == \
        claims_mod.FAILS
    assert table.loc["Figs. 5–6: DepL beats best-exp by over 27 %", "verdict"] == \
        claims_mod.FAILS
    # runtime falling as η^-4.5 is within O(η^-4); |M| slope 2 within O(|M|^2)
    assert table.loc["Property 2: complexity", "verdict"] == claims_mod.HOLDS


# --------------------------------------------------------------------------
# missing data


def test_empty_store_says_so(tmp_path):
    summary = build_report(pd.DataFrame(columns=list(STORE_COLUMNS)), tmp_path, options=SMALL)
    text = _check_report(tmp_path, summary)
    # the measured section draws the shipped measurement (docs/measured.md), whatever the store holds
    assert summary.figures == ["measured_fig4"]
    assert "The store is empty" in text
    # every section without data is its heading and one line saying why
    omitted = text.count('<p class="omitted">Omitted, nothing to show:')
    assert omitted >= 5 and text.count("<section") - omitted <= 2
    assert set(summary.claims["verdict"]) == {claims_mod.UNMEASURED}


@pytest.mark.slow
def test_no_milp_rows_says_so(tmp_path):
    df = make_frame()
    summary = build_report(df[df["algorithm"] != "milp"], tmp_path, options=SMALL)
    text = _check_report(tmp_path, summary)
    assert "no exact-optimum row" in text  # Fig. 5 centre cannot be normalised
    # the knapsack DP still gives an optimum, so gaps exist there
    gaps = pd.read_csv(tmp_path / "tables" / "gaps.csv")
    knap = gaps[(gaps["family"] == "knapsack") & (gaps["algorithm"] == "depl")]
    assert knap["with_optimum"].sum() == 8
    c = summary.claims.set_index("claim")
    assert c.loc["Figs. 5–6: DepL virtually matches the optimum", "verdict"] == \
        claims_mod.UNMEASURED


@pytest.mark.slow
def test_no_exact_rows_says_so(tmp_path):
    df = make_frame()
    summary = build_report(df[~df["exact"].fillna(False).astype(bool)], tmp_path,
                           options=SMALL)
    text = _check_report(tmp_path, summary)
    assert "No exact-solver rows in this store" in text
    assert "No proven optimum in this store" in text
    assert pd.read_csv(tmp_path / "tables" / "milp_status.csv").empty


@pytest.mark.slow
def test_missing_columns_and_bad_json(tmp_path):
    df = make_frame().drop(columns=["evaluation", "diagnostics"])
    df.loc[0, "params"] = "{broken"
    summary = build_report(df, tmp_path, options=SMALL)
    text = _check_report(tmp_path, summary)
    assert re.search(r"lacks columns [a-z_, ]*evaluation, diagnostics", text)
    assert "unparsable JSON in column &#x27;params&#x27;" in text
    assert not any(f.startswith("fig9") for f in summary.figures)


@pytest.mark.slow
def test_store_roundtrip_and_cli(tmp_path, capsys, monkeypatch):
    from deplbench.benchmarks.store import ResultsStore
    from deplbench.cli import main

    db = tmp_path / "r.sqlite"
    with ResultsStore(db) as store:
        for rec in make_frame().head(24).to_dict("records"):
            store.add({k: v for k, v in rec.items()
                       if v is not None and not (isinstance(v, float) and math.isnan(v))})
    rc = main(["report", str(db), "--out", str(tmp_path / "rep"), "--no-svg",
               "--scale", "0.4", "--dpi", "40"])
    assert rc == 0
    assert (tmp_path / "rep" / "index.html").is_file()
    cap = capsys.readouterr()
    assert cap.out.startswith("report: ") and "] Property 2: complexity" in cap.out
    # progress lines go to stderr only, and only on a terminal (capsys is none)
    assert "section claims" not in cap.out and "section claims" not in cap.err
    import contextlib

    from deplbench.cli import progress as progress_mod

    monkeypatch.setattr(progress_mod, "progress_wanted", lambda args, stream=None: True)   # "a terminal"
    monkeypatch.setattr(progress_mod, "native_output_held", lambda on: contextlib.nullcontext(sys.stderr))
    # every section reports its progress whatever the store holds: three rows suffice
    small = tmp_path / "small.sqlite"
    with ResultsStore(small) as store:
        for rec in make_frame().head(3).to_dict("records"):
            store.add({k: v for k, v in rec.items()
                       if v is not None and not (isinstance(v, float) and math.isnan(v))})
    assert main(["report", str(small), "--out", str(tmp_path / "rep2"), "--no-svg",
                 "--scale", "0.4", "--dpi", "40"]) == 0
    cap = capsys.readouterr()
    assert "section claims" in cap.err and "section claims" not in cap.out
    rc = main(["report", str(tmp_path / "nope.sqlite"), "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: DB: no results store")
    rc = main(["report", str(db), "--out", str(tmp_path / "y"), "--sgm-shift", "0"])
    assert rc == 2 and "sgm_shift" in capsys.readouterr().err


def test_bad_inputs_raise_named_errors(tmp_path):
    with pytest.raises(ReportError, match="source"):
        build_report([1, 2], tmp_path / "a")
    with pytest.raises(ReportError, match="frame"):
        prepare({"cost": [1.0]})
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ReportError, match="--out"):
        build_report(make_frame().head(3), f, options=SMALL)
    with pytest.raises(ReportError, match="formats"):
        build_report(make_frame().head(3), tmp_path / "b",
                     options=ReportOptions(formats=("pdf",)))
    with pytest.raises(ReportError, match="--bench-json"):
        load_bench_json(tmp_path / "absent")
    assert issubclass(ReportError, DeplbenchError)


# --------------------------------------------------------------------------
# statistics


def test_shifted_geometric_mean():
    assert shifted_geometric_mean([1.0, 3.0], shift=1.0) == pytest.approx(math.sqrt(8) - 1)
    assert shifted_geometric_mean([5.0, 5.0, 5.0], shift=10.0) == pytest.approx(5.0)
    assert math.isnan(shifted_geometric_mean([]))
    with pytest.raises(ReportError, match="shift"):
        shifted_geometric_mean([1.0], shift=0)


def test_loglog_fit_recovers_exponent_and_interval():
    rng = np.random.default_rng(3)
    x = np.repeat([4.0, 8.0, 16.0, 32.0, 64.0], 4)
    y = 0.3 * x ** 1.5 * np.exp(rng.normal(0, 0.05, x.size))
    fit = loglog_fit(x, y)
    assert fit.ci_low < fit.slope < fit.ci_high
    assert fit.contains(1.5) and not fit.contains(2.0)
    exact = loglog_fit([1, 2, 4], [3, 12, 48])
    assert exact.slope == pytest.approx(2.0) and exact.r2 == pytest.approx(1.0)
    assert loglog_fit([2, 2, 2], [1, 2, 3]) is None


def test_performance_profile_ratios():
    m = pd.DataFrame({"a": [1.0, 4.0, np.nan], "b": [2.0, 2.0, np.nan]},
                     index=["p1", "p2", "p3"])
    r = performance_profile(m)
    assert list(r.index) == ["p1", "p2"]  # nobody solved p3
    assert r.loc["p1", "a"] == 1.0 and r.loc["p1", "b"] == 2.0
    assert r.loc["p2", "a"] == 2.0 and r.loc["p2", "b"] == 1.0
    m.loc["p2", "b"] = np.nan
    assert np.isinf(performance_profile(m).loc["p2", "b"])


def test_optimum_priority_and_disagreement():
    df = prepare(make_frame()).df
    opt = optimum_per_instance(df)
    knap = opt[opt["instance_key"].str.startswith("knap-")]
    assert len(knap) == 8
    assert (knap["optimum_source"] == "knapsack-dp").all() and (knap["n_oracles"] == 2).all()
    assert (knap["oracle_spread"] < 1e-9).all()
    assert (knap["optimum_kind"] == "proven").all() and (knap["n_proven_oracles"] == 1).all()
    # a MILP (an SAA optimum: exact for its scenarios only) far from the DP shows up as a
    # gap, instead of being averaged away, and is no exact oracle that "disagrees"
    bad = make_frame()
    i = bad.index[(bad["family"] == "knapsack") & (bad["algorithm"] == "milp")][0]
    bad.loc[i, "cost"] = bad.loc[i, "cost"] * 1.5
    agree = tabs.oracle_agreement(prepare(bad).df).set_index("family")
    assert agree.loc["knapsack", "disagreeing"] == 0 and agree.loc["knapsack", "with_two_oracles"] == 0
    assert agree.loc["knapsack", "with_saa_and_exact"] == 8
    assert agree.loc["knapsack", "saa_vs_exact_max_gap"] == pytest.approx(0.5)


def test_saa_optimum_is_not_called_proven():
    """An instance whose only optimum is an SAA one (the MILP on S scenarios): the
    section-2 note does not count it as proven, and its competitive-ratio rows say
    they are against the SAA optimum."""
    df = prepare(make_frame()).df
    opt = optimum_per_instance(df)
    saa = opt[opt["optimum_kind"] == "saa"]
    assert len(saa) and (saa["optimum_source"] == "milp").all() and saa["optimum_scenarios"].notna().all()
    from deplbench.reports.stats import with_ratios

    t = tabs.ratio_vs(with_ratios(df))
    vs_saa = t[t["reference"].str.startswith("SAA optimum")]
    assert len(vs_saa) and vs_saa["algorithm"].str.contains(r"\[vs SAA optimum \(S = ", regex=True).all()
    assert (t.loc[~t.index.isin(vs_saa.index), "reference"] == "proven optimum").all()


def test_submodularity_keys_and_sampled_checks():
    assert claims_mod.submodularity_record(
        {"submodularity": {"violated": 2, "checked": 9, "exhaustive": False}}) == (2, 9, False)
    # only the key DepL writes is read: no aliases nothing produces
    assert claims_mod.submodularity_record({"submodular_violations": 0}) is None
    assert claims_mod.submodularity_record({"graphs": []}) is None
    df = make_frame()
    i = df.index[df["algorithm"] == "depl"][0]
    df.loc[i, "diagnostics"] = json.dumps(
        {"submodularity": {"violated": 0, "checked": 50, "exhaustive": False}})
    row = claims_mod.submodularity(prepare(df).df)
    assert row["verdict"] == claims_mod.HOLDS and "sampled" in row["measured"]


def test_submodularity_with_nothing_checked_is_not_a_pass():
    # Single-dataset instances give DepL no triple to check: 0 of 0 checked
    # everywhere is no evidence, so the verdict is "not measured", not "holds".
    df = make_frame()
    df["diagnostics"] = json.dumps({"submodularity": {"violated": 0, "checked": 0, "exhaustive": True}})
    row = claims_mod.submodularity(prepare(df).df)
    assert row["verdict"] == claims_mod.UNMEASURED, row
    i = df.index[0]
    df.loc[i, "diagnostics"] = json.dumps({"submodularity": {"violated": 0, "checked": 5, "exhaustive": True}})
    assert claims_mod.submodularity(prepare(df).df)["verdict"] == claims_mod.HOLDS


def test_three_point_slope_gets_no_verdict():
    fit = loglog_fit([2, 4, 8], [1.0, 4.2, 15.0])
    assert fit.n == 3 and tabs.exponent_verdict(fit, -4.0) == "too few points"
    fit4 = loglog_fit([2, 4, 8, 16], [1.0, 4.2, 15.0, 66.0])
    assert tabs.exponent_verdict(fit4, -4.0) == "contradicts"
    assert tabs.exponent_verdict(fit4, 2.0) == "consistent"
    assert tabs.exponent_verdict(fit4, None) == "no claim"
    # ε is asymptotic as ε → 0: runtime ∝ ε^-0.3 is within O(1/ε), ε^-2 is not
    eps = [0.5, 0.2, 0.1, 0.05, 0.01]
    slow = loglog_fit(eps, [e ** -0.3 for e in eps])
    fast = loglog_fit(eps, [e ** -2.0 * (1 + 0.01 * i) for i, e in enumerate(eps)])
    assert tabs.exponent_verdict(slow, -1.0, "small") == "consistent"
    assert tabs.exponent_verdict(fast, -1.0, "small") == "contradicts"


def test_printed_variant_rows_are_noted_and_not_paired():
    df = make_frame()
    knap = df["family"] == "knapsack"
    df.loc[knap, "transfer_cost_mode"] = "once"
    df.loc[knap, "data_rule"] = "intended"
    i = df.index[knap & (df["algorithm"] == "depl")][0]
    # the runner hashes the instance as solved: another variant, another sha
    df.loc[i, "data_rule"] = "printed"
    df.loc[i, "instance_sha"] = df.loc[i, "instance_sha"] + "-printed"
    data = prepare(df)
    assert data.df.loc[i, "variant"] == "data_rule=printed"
    assert (data.df.loc[knap & (data.df.index != i), "variant"] == "").all()
    assert any("data_rule=printed" in n for n in data.notes)
    twin = data.df[knap & (data.df["instance_name"] == data.df.loc[i, "instance_name"])]
    assert twin["instance_key"].nunique() == 2


def test_milp_optimum_prefers_the_largest_scenario_set():
    """Fewer in-sample scenarios loosen the SAA and lower the cost: the
    optimum a ratio is measured against is the run with the most scenarios,
    not the cheapest one."""
    common = dict(family="scaling", instance_name="s", instance_params={"n_models": 3},
                  instance_seed=0, instance_sha="s", loss_max=5.0, omega=0.9, algorithm="milp", status="optimal",
                  diagnostics={}, evaluation=None, runtime_s=1.0)
    rows = [
        _row(key="a", cost=90.0, params={"scenarios": 10}, **common),
        _row(key="b", cost=100.0, params={"scenarios": 200}, **common),
        _row(key="c", cost=95.0, params={"scenarios": 40}, **common),
    ]
    opt = optimum_per_instance(prepare(pd.DataFrame(rows, columns=list(STORE_COLUMNS))).df)
    assert len(opt) == 1
    assert opt["optimum"].iloc[0] == 100.0
    assert opt["optimum_source"].iloc[0] == "milp"


def test_no_report_module_imports_the_solver_layer():
    """Reports read the record's columns; the solver registry is never
    imported, not even lazily inside a function."""
    import ast

    import deplbench.reports as pkg

    for path in Path(pkg.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            for n in names:
                assert not n.startswith("deplbench.solvers"), f"{path.name} imports {n}"


@pytest.mark.slow
def test_report_says_when_stored_numbers_are_text(tmp_path):
    """A cost stored as text was read as missing and the report said nothing (export warned)."""
    import sqlite3

    from deplbench.benchmarks.store import ResultsStore
    from tests.benchmarks.test_store import record

    db = tmp_path / "s.sqlite"
    with ResultsStore(db) as store:
        store.add(record("k1"))
        store.add(record("k2"))
    conn = sqlite3.connect(db)
    conn.execute("UPDATE results SET cost = 'abc' WHERE key = 'k1'")
    conn.commit()
    conn.close()
    build_report(db, tmp_path / "rep", options=ReportOptions(formats=("png",), progress=False))
    page = (tmp_path / "rep" / "index.html").read_text(encoding="utf-8")
    assert "1 stored row(s) of column &#x27;cost&#x27; hold text, not a number: read as missing values" in page
