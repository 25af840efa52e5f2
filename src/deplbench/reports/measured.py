"""The measured loss model in the report: Fig. 4 reproduced, independence, replay (docs/measured.md).

Reads the shipped results of :mod:`deplbench.measure` (no training library):

* ``digits-mlp-analysis.json``: :meth:`deplbench.measure.analysis.Analysis.summary`
  of the shipped logs (``deplbench measure analyse --json``);
* ``digits-mlp-replay.json``: :func:`deplbench.measure.replay.replay_plans`
  (``make replay``).

:func:`section_measured` is the report section; :func:`measured_claims` the
claims-audit rows judging the paper's Sec. VI-A statement and the replay
claim; :func:`write_fig4` draws the three Fig. 4 panels.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from deplbench.instances.generators.measured import DATA_DIR
from deplbench.jsonio import level_percent, number_text
from deplbench.reports.claims_common import CLAIMS_COLUMNS, FAILS, HOLDS, UNDECIDED, UNMEASURED, claim_row
from deplbench.reports.elements import Section, Table

ANALYSIS_FILE = DATA_DIR / "digits-mlp-analysis.json"
REPLAY_FILE = DATA_DIR / "digits-mlp-replay.json"
#: The same replay at a tighter target (``deplbench measure replay --loss-max 0.15``).
REPLAY_TIGHT_FILE = DATA_DIR / "digits-mlp-replay-tight.json"

#: Sec. VI-A is read as: the inverse-gamma passes KS (p > 0.05) in at least this share of the grid's cells.
ALMOST_ALL = 0.9

QUOTE_FIT = ("“in almost all cases they are larger than the 0.05 threshold, again indicating the goodness of "
             "fit of the Inverse-Gamma distribution” (Sec. VI-A, Fig. 4 centre)")
QUOTE_REPLAY = ("a plan proven feasible under eq. (8) meets ℓmax with probability ≥ ω in real training "
                "(the premise of constraint (3); DepL Sec. III, eq. (8))")
QUOTE_INDEP = "the terms of eq. (8) are independent from epoch to epoch (DepL Sec. III, eq. (8))"


def load(path: Path) -> dict | None:
    """A shipped JSON result, or None when absent or unreadable."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


# ------------------------------------------------------------------ claims
def fit_claim(a: dict | None) -> dict:
    """The Sec. VI-A row: inverse-gamma accepted by KS in almost all grid cells."""
    if not a:
        return claim_row("Inverse-gamma X fits real training (Fig. 4)", "DepL paper §VI-A", QUOTE_FIT,
                         "no shipped analysis", UNMEASURED, "run `deplbench measure analyse`")
    c = a["fig4_centre"]
    share = c["invgamma_accepted"] / c["cells"]
    verdict = HOLDS if share >= ALMOST_ALL else FAILS
    measured = (f"KS p ≥ {c['alpha']} in {c['invgamma_accepted']} of {c['cells']} cells ({100 * share:.0f} %); "
                f"{c['invgamma_rejected_support']} cells have loss increases (x ≤ 0, outside the support); "
                "accepted by family: " + ", ".join(f"{k} {v}" for k, v in c["accepted_by_family"].items()))
    return claim_row("Inverse-gamma X fits real training (Fig. 4)", "DepL paper §VI-A", QUOTE_FIT, measured,
                     verdict, f"{a['runs']} runs of the digits MLP (docs/measured.md); 'almost all' read as ≥ "
                     f"{100 * ALMOST_ALL:g} % of cells", compared="inverse-gamma KS per K1×K2×F1×F2 cell",
                     reference=f"KS p ≥ {c['alpha']}", statistic="share of cells accepted",
                     instances=c["cells"])


def independence_claim(a: dict | None) -> dict:
    """Independence of the per-epoch terms: lag-1 autocorrelation of the SGD noise."""
    if not a:
        return claim_row("Per-epoch terms independent", "DepL paper eq. (8)", QUOTE_INDEP, "no shipped analysis",
                         UNMEASURED, "run `deplbench measure analyse`")
    r = a["independence"]["noise_lag1"]
    lo, hi = r["ci"]
    if r["estimate"] is None or lo is None or hi is None:
        return claim_row("Per-epoch terms independent", "DepL paper eq. (8)", QUOTE_INDEP,
                         r.get("note", "not measurable"), UNMEASURED, f"{r['pairs']} pairs in {r['runs']} runs")
    verdict = HOLDS if lo <= 0 <= hi else FAILS
    return claim_row("Per-epoch terms independent", "DepL paper eq. (8)", QUOTE_INDEP,
                     f"lag-1 autocorrelation of the per-epoch loss change around its mean curve r = "
                     f"{r['estimate']:+.3f} [{lo:+.3f}, {hi:+.3f}] ({level_percent(r['level'], 0)} % {r['method']})",
                     verdict, f"{r['pairs']} pairs in {r['runs']} runs", compared="within-run lag-1 correlation",
                     reference="0 (independence)", statistic="pooled autocorrelation", instances=r["runs"])


def replay_claim(replays: list[dict | None]) -> dict:
    """The replay row over every shipped replay (one per target ℓmax): does not hold when a plan proven
    feasible fails at some target, holds when every such plan holds, else not decided
    (:func:`deplbench.measure.replay.claim_verdict` per replay)."""
    present = [rp for rp in replays if rp]
    claims = [rp["claim"] for rp in present if rp["claim"]["plans"]]
    if not claims:
        return claim_row("Proven plans meet ℓmax in real training", "DepL eq. (3), (8)", QUOTE_REPLAY,
                         "no shipped replay with a plan proven feasible", UNMEASURED, "run `make replay`")
    verdicts = [c["verdict"] for c in claims]
    verdict = FAILS if "does not hold" in verdicts else HOLDS if set(verdicts) == {"holds"} else UNDECIDED
    text = " | ".join(f"ℓmax = {number_text(rp['instance']['loss_max'])}: {rp['claim']['verdict']} "
                      f"({rp['claim']['text']})" for rp in present if rp["claim"]["plans"])
    inst = present[0]["instance"]
    # solvers that return the same model sequence replay the same plan: counted once
    distinct = {(rp["instance"]["loss_max"], r["sequence"]) for rp in present for r in rp.get("rows", [])
                if r.get("model_verdict") == "proven feasible" and "verdict" in r}
    return claim_row("Proven plans meet ℓmax in real training", "DepL eq. (3), (8)", QUOTE_REPLAY, text, verdict,
                     f"{present[0]['seeds']['count']} held-out seeds per plan on {inst['name']} (ω = "
                     f"{number_text(inst['omega'])}); a two-sided 95 % Clopper–Pearson interval per plan, no "
                     f"multiplicity correction (any plan wholly above 1 − ω decides 'does not hold'; 'holds' needs "
                     f"every plan wholly below); {len(distinct)} distinct plans",
                     compared="violation rate of replayed plans",
                     reference=f"1 − ω = {1 - inst['omega']:.2g}", statistic="share of runs with ℓ(K) > ℓmax",
                     instances=len(distinct))


def measured_claims() -> list[dict]:
    """The claims-audit rows of the measurement (shipped results)."""
    a = load(ANALYSIS_FILE)
    return [fit_claim(a), independence_claim(a), replay_claim([load(REPLAY_FILE), load(REPLAY_TIGHT_FILE)])]


# ----------------------------------------------------------------- figures
def fig4(a: dict):
    """The three Fig. 4 panels from an analysis summary (a matplotlib Figure)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13, 3.8), layout="constrained")
    ax1, ax2, ax3 = fig.subplots(1, 3)
    left = a["fig4_left"]
    x = np.asarray(left["x_quantiles"])
    ax1.hist(x, bins=40, density=True, alpha=0.5, label="empirical x")
    xs = np.linspace(max(float(x.min()), 1e-3), float(x.max()), 300)
    styles = {"invgamma": "r-", "lognorm": "g--", "gamma": "m-.", "norm": "k:"}
    for fam, r in left["fits"].items():
        if r.get("params"):
            dist = getattr(stats, fam)(*r["params"])
            grid = np.linspace(float(x.min()), float(x.max()), 300) if fam == "norm" else xs
            ax1.plot(grid, dist.pdf(grid), styles.get(fam, "-"), label=f"{fam} (KS p={r['p_value']:.2g})")
        else:
            ax1.plot([], [], styles.get(fam, "-"), label=f"{fam}: {r.get('note', 'no fit')[:28]}")
    cell = left["cell"]
    ax1.set(xlabel="x of eq. (8)", ylabel="density",
            title=f"x, F1={cell['F1']} K1={cell['K1']} → F2={cell['F2']} K2={cell['K2']}")
    ax1.legend(fontsize=7)
    c = a["fig4_centre"]
    ps = np.array([g["p_value"] for g in c["grid"]])
    ax2.hist(ps, bins=np.linspace(0, 1, 21), color="tab:blue", alpha=0.7)
    ax2.axvline(c["alpha"], color="r", linestyle="--", label=f"α = {c['alpha']}")
    ax2.set(xlabel="KS p-value (inverse-gamma)", ylabel="cells",
            title=f"{c['invgamma_accepted']}/{c['cells']} cells with p ≥ {c['alpha']}")
    ax2.legend(fontsize=8)
    right = a.get("fig4_right") or {}
    if right:
        d = np.asarray(right["data_quantiles"])
        ax3.hist(d, bins=30, density=True, alpha=0.5, label="l_sw residual (empirical)")
        if right.get("params"):
            p = right["params"]
            g = np.linspace(float(d.min()), float(d.max()), 300)
            ax3.plot(g, stats.t(p["df"], loc=p["loc"], scale=p["scale"]).pdf(g), "r-",
                     label=f"Student's t (KS p={right['p_value']:.2g})")
        ax3.set(xlabel="loss jump at the switch", ylabel="density",
                title=f"l_sw {right['from_model']} → {right['to_model']}, n = {right['n']}")
        ax3.legend(fontsize=7)
    return fig


def write_fig4(analysis, directory: str | os.PathLike) -> list[Path]:
    """Write ``fig4.png`` and ``analysis.json`` of an :class:`~deplbench.measure.analysis.Analysis`."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from deplbench.jsonio import finite_json

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    summary = analysis.summary()
    fig = fig4(summary)
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    (out / "fig4.png").write_bytes(buf.getvalue())
    (out / "analysis.json").write_text(json.dumps(finite_json(summary), indent=1) + "\n")
    return [out / "fig4.png", out / "analysis.json"]


# ----------------------------------------------------------------- section
#: Columns of the section's tables (promised, as every report table's).
MODEL_COLUMNS = ("model", "A", "B", "r2", "n", "x_mean", "x_var", "x_nonpositive", "invgamma_p", "chosen")
ALTERNATIVE_COLUMNS = ("model", "family", "n", "ks_p", "aic", "note")
GRID_FAMILY_COLUMNS = ("family", "cells", "accepted", "median_ks_p", "best_aic_cells")
INDEPENDENCE_COLUMNS = ("series", "lag", "estimate", "ci_low", "ci_high", "level", "method", "pairs", "independent")
VARIANCE_COLUMNS = ("model", "epochs", "runs", "observed_var", "predicted_var_independent", "ratio", "ci_low",
                    "ci_high", "level", "method")
REPLAY_COLUMNS = ("loss_max", "solver", "status", "cost", "epochs", "sequence", "model_violation_lo",
                  "model_violation_hi", "model_verdict", "final_loss_mean", "final_loss_q", "runs", "violations",
                  "rate", "ci_low", "ci_high", "verdict", "wall_seconds", "ci_level", "ci_method")


def _frame(rows: list[dict], columns: tuple[str, ...]) -> pd.DataFrame:
    return pd.DataFrame([{c: r.get(c) for c in columns} for r in rows], columns=list(columns))


def _tables(a: dict, replays: list[dict]) -> list[Table]:
    models = _frame([{"model": k, **v} for k, v in a["models"].items()], MODEL_COLUMNS)
    alt = _frame([{"model": m, "ks_p": r["p_value"], **r} for m, rows in a["alternatives"].items() for r in rows],
                 ALTERNATIVE_COLUMNS)
    ind = _frame([{"series": k, "ci_low": r["ci"][0], "ci_high": r["ci"][1], **r}
                  for k, r in a["independence"].items()], INDEPENDENCE_COLUMNS)
    var = _frame([{"ci_low": r["ci"][0], "ci_high": r["ci"][1], **r} for r in a["variance"]], VARIANCE_COLUMNS)
    grid = a["fig4_centre"]["grid"]
    fams = sorted({f for c in grid for f in c["alternatives"]})

    def best(c: dict) -> str | None:
        aics = {f: r["aic"] for f, r in c["alternatives"].items() if r.get("aic") is not None}
        return min(aics, key=aics.__getitem__) if aics else None

    winners = [best(c) for c in grid]
    alpha = a["fig4_centre"]["alpha"]
    per_family = _frame([{"family": f, "cells": len(grid),
                          "accepted": sum(c["alternatives"][f]["p_value"] >= alpha for c in grid),
                          "median_ks_p": float(np.median([c["alternatives"][f]["p_value"] for c in grid])),
                          "best_aic_cells": winners.count(f)} for f in fams], GRID_FAMILY_COLUMNS)
    out = [
        Table("measured_grid_families", "Goodness of fit over the Fig. 4 grid: inverse-gamma vs the alternatives",
              per_family, GRID_FAMILY_COLUMNS,
              "Per K1 × K2 × F1 × F2 cell (A, B fitted on the cell's second stage): cells whose plain KS p-value "
              "is ≥ α, the median p-value, and the cells where the family has the lowest AIC (positive families "
              "have none in a cell with an x ≤ 0)."),
        Table("measured_models", "Per-version fit of eq. (8) on the measured logs", models, MODEL_COLUMNS,
              "A, B by least squares with X = 1 (Sec. VI-A step (i)); x = Δ/(−A/√(k+B)); invgamma_p the KS "
              "p-value of the ML inverse-gamma (0 when some x ≤ 0: outside its support); chosen = what "
              "deplbench fit keeps."),
        Table("measured_alternatives", "Goodness of fit of X: inverse-gamma vs lognormal, gamma, normal", alt,
              ALTERNATIVE_COLUMNS, "scipy.stats maximum likelihood (loc = 0 for the positive families), plain "
              "KS p-value and AIC on the pooled multipliers of each version."),
        Table("measured_independence", "Independence of the per-epoch terms", ind, INDEPENDENCE_COLUMNS,
              "x_lag1: the multipliers as eq. (8) uses them; noise_lag*: the loss change minus the mean change of "
              "the same configuration and epoch over seeds (SGD noise). Independent = the interval holds 0."),
        Table("measured_variance", "Final-loss variance: observed vs eq. (8) with independent terms", var,
              VARIANCE_COLUMNS, "ratio > 1: eq. (8) underestimates the spread of the final loss."),
    ]
    if replays:
        rows = [{"loss_max": rp["instance"]["loss_max"],
                 "model_violation_lo": (r.get("model_violation") or [None, None])[0],
                 "model_violation_hi": (r.get("model_violation") or [None, None])[1],
                 "ci_low": (r.get("ci") or [None, None])[0], "ci_high": (r.get("ci") or [None, None])[1],
                 "ci_level": r.get("level"),
                 "ci_method": f"{r['method']}, two-sided" if r.get("method") else "", **r}
                for rp in replays for r in rp["rows"]]
        out.append(Table("measured_replay", "Plans replayed on held-out real training runs",
                         _frame(rows, REPLAY_COLUMNS), REPLAY_COLUMNS,
                         "model_violation: rigorous bounds on P(ℓ(K) > ℓmax) under the instance's eq. (8) law; "
                         "rate: measured share of held-out runs above ℓmax with its two-sided Clopper–Pearson "
                         "interval [ci_low, ci_high] at ci_level (ci_method); verdict against 1 − ω."))
    return out


def section_measured(ctx=None) -> Section:
    """Report section: the loss model measured on real training (shipped results)."""
    s = Section("measured", "9. Measured loss model: Fig. 4 on real training, independence, replay",
                "The digits MLP and its ln_structured-pruned versions trained with PyTorch over many seeds "
                "(docs/measured.md); the paper's Sec. VI-A fits on those logs, the alternatives, the "
                "autocorrelation of the per-epoch terms, and plans of the measured family replayed on "
                "held-out seeds. From the shipped results, not from this store.")
    a = load(ANALYSIS_FILE)
    replays = [rp for rp in (load(REPLAY_FILE), load(REPLAY_TIGHT_FILE)) if rp]
    if not a:
        s.missing(f"No shipped analysis ({ANALYSIS_FILE.name}); run `deplbench measure analyse --json`.")
        return s
    s.add_figure(fig4(a), "measured_fig4", "Fig. 4 reproduced on the measured logs",
                 "Left: x of one two-stage cell with the four fits; centre: inverse-gamma KS p-values over the "
                 "K1 × K2 × F1 × F2 grid; right: the switch jump with the Student's t fit.", missing="")
    for t in _tables(a, replays):
        s.add(t)
    if not replays:
        s.missing(f"No shipped replay ({REPLAY_FILE.name}); run `make replay`.")
    s.add(Table("measured_claims", "Claims judged on the measurement",
                pd.DataFrame(measured_claims(), columns=list(CLAIMS_COLUMNS)), CLAIMS_COLUMNS,
                "Judged on the shipped measurement (the same rows whatever the store holds)."))
    return s


__all__ = ["GRID_FAMILY_COLUMNS", "MODEL_COLUMNS", "ALTERNATIVE_COLUMNS", "INDEPENDENCE_COLUMNS", "VARIANCE_COLUMNS",
           "REPLAY_COLUMNS",
           "section_measured", "measured_claims", "fit_claim", "independence_claim", "replay_claim", "fig4",
           "write_fig4", "ANALYSIS_FILE", "REPLAY_FILE", "REPLAY_TIGHT_FILE", "ALMOST_ALL"]
