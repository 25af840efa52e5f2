"""Tables of the library: sizes and difficulty (CSV + Markdown), check summaries.

One job: turn the build records (:mod:`.build`) and check results
(:mod:`.check`) into text. Nothing is computed here except formatting.
"""

from __future__ import annotations

import csv
import math
import os

#: Columns of ``library.csv`` / ``library.md``: (record key, header, meaning).
COLUMNS = (
    ("name", "name", "instance (file stem of instances/*.json, pwl/*.mps.gz, minlp/*.nl.gz; .solu name)"),
    ("group", "group", "what it represents"),
    ("n_models", "|M|", "model versions"),
    ("n_clusters", "|N|", "clusters"),
    ("n_datasets", "|D|", "datasets"),
    ("horizon", "K̄", "largest number of epochs"),
    ("scenarios", "S", "in-sample scenarios of the SAA (seed 0)"),
    ("variant", "formulation", "the discrete formulation of both model files"),
    ("rows", "PWL rows", "rows of the PWL MILP"),
    ("cols", "cols", "columns (the same in both model files)"),
    ("integers", "int cols", "integer columns"),
    ("nonzeros", "PWL nonzeros", "non-zeros of the PWL MILP's matrix"),
    ("cones", "cones", "rotated-cone rows of the MINLP (one per usable configuration)"),
    ("pwl_status", "HiGHS status", "HiGHS on the PWL file within the build's time limit"),
    ("pwl_seconds", "HiGHS s", "HiGHS wall time on the PWL file (s)"),
    ("pwl_nodes", "nodes", "HiGHS branch-and-bound nodes"),
    ("pwl_tag", "pwl.solu", "the PWL file's line tag (=opt=, =best=, =inf=, =unkn=)"),
    ("pwl_value", "PWL optimum",
     "pwl.solu: optimum of the PWL file (within the stated tolerance below the SAA optimum)"),
    ("pwl_solver", "PWL by", "the solver that gave the pwl.solu line (HiGHS; SCIP where HiGHS failed)"),
    ("pwl_difficulty", "PWL tag", "easy / hard / open (MIPLIB 2017) from the measured solve"),
    ("minlp_tag", "minlp.solu", "the MINLP file's line tag"),
    ("minlp_value", "SAA optimum", "minlp.solu: optimum of the MINLP = real-x SAA optimum (deplbench)"),
    ("minlp_difficulty", "MINLP tag", "easy / hard / open from deplbench's exact solve"),
    ("deplbench_status", "deplbench status", "deplbench's exact real-x solve"),
    ("deplbench_seconds", "deplbench s", "wall time of deplbench's solve (s)"),
    ("note", "note", "why an entry has no model file"),
)


def _fmt(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return f"{value:.10g}" if abs(value) >= 1 or value == 0 else f"{value:.4g}"
    return str(value)


def write_tables(root: str, records: list[dict]) -> None:
    """Write ``root/library.csv`` (full precision) and ``root/library.md``."""
    with open(os.path.join(root, "library.csv"), "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow([key for key, _, _ in COLUMNS])
        for r in records:
            w.writerow(["" if r.get(k) is None else repr(r[k]) if isinstance(r.get(k), float) else r[k]
                        for k, _, _ in COLUMNS])
    lines = ["# deplbench instance library: sizes and difficulty", "",
             "| " + " | ".join(h.replace("|", "\\|") for _, h, _ in COLUMNS) + " |",
             "|" + "|".join("---" for _ in COLUMNS) + "|"]
    for r in records:
        lines.append("| " + " | ".join(_fmt(r.get(k)).replace("|", "\\|") for k, _, _ in COLUMNS) + " |")
    lines += ["", "Columns:", ""]
    lines += ["- **" + h.replace("|", "\\|") + f"**: {meaning}" for _, h, meaning in COLUMNS]
    with open(os.path.join(root, "library.md"), "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def write_truth_table(path: str, rows: list[dict]) -> None:
    """Write ``true_optimum.csv``: one bracket per instance (:mod:`.truth`)."""
    import json

    from deplbench.benchmarks.library.truth import COLUMNS as TRUTH_COLUMNS

    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow([k for k, _ in TRUTH_COLUMNS])
        for r in rows:
            w.writerow([json.dumps(r.get(k), sort_keys=True) if isinstance(r.get(k), dict) else
                        "" if r.get(k) is None else repr(r[k]) if isinstance(r.get(k), float) else r[k]
                        for k, _ in TRUTH_COLUMNS])


def format_check(result: dict) -> str:
    """The text table of ``deplbench library check`` for one solver and model
    kind: one line per instance, then the solver summary (Mittelmann-style)."""
    s = result["summary"]
    if s.get("skipped") and not s["instances"]:
        return f"{s['solver']} on the {result.get('model', 'pwl')} files: skipped ({s['skip_reason']})"
    rows = [("instance", ".solu", "status", "value", "bound", "gap", "time s", "agrees")]
    for r in result["instances"]:
        rows.append((r["name"], _fmt(r.get("solu_value")) or r.get("solu_tag", ""), r["status"],
                     _fmt(r.get("primal")), _fmt(r.get("dual")),
                     "" if r.get("gap") is None else f"{r['gap']:.2e}", f"{r['seconds']:.2f}",
                     {True: "yes", False: "NO", None: "-"}[r["agrees"]]))
    out = [f"{s['solver']} on the {result.get('model', 'pwl')} files", align_table(rows), ""]
    out.append(align_table([SUMMARY_HEAD, summary_row(s)]))
    for r in result["instances"]:
        if r["agrees"] is False:
            out.append(f"mismatch: {r['name']}: {r['reason']}")
    return "\n".join(out)


#: Columns of the solver-vs-solver summary.
SUMMARY_HEAD = ("solver", "model", "version", "solved", "skipped", "sgm time s (shift 10)", "mean gap at limit",
                "mismatches")


def summary_row(s: dict) -> tuple:
    """One line of the solver-vs-solver summary."""
    gap = s["mean_gap_unsolved"]
    sgm = s["shifted_geomean_s"]
    return (s["solver"], s.get("model", "pwl"), s["version"] or "-", f"{s['solved']}/{s['instances']}",
            str(s.get("skipped", 0)), "-" if math.isnan(sgm) else f"{sgm:.2f}", "-" if gap is None else f"{gap:.2e}",
            str(s["mismatches"]))


def align_table(rows) -> str:
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


__all__ = ["COLUMNS", "SUMMARY_HEAD", "align_table", "format_check", "summary_row", "write_tables", "write_truth_table"]
