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
    ("name", "name", "instance (file stem of instances/*.json and mps/*.mps, .solu name)"),
    ("group", "group", "what it represents"),
    ("n_models", "|M|", "model versions"),
    ("n_clusters", "|N|", "clusters"),
    ("n_datasets", "|D|", "datasets"),
    ("horizon", "K̄", "largest number of epochs"),
    ("scenarios", "S", "in-sample scenarios of the SAA (seed 0)"),
    ("variant", "formulation", "exact MILP formulation written to MPS"),
    ("rows", "rows", "rows of the MPS model"),
    ("cols", "cols", "columns of the MPS model"),
    ("integers", "int cols", "integer columns"),
    ("nonzeros", "nonzeros", "non-zeros of the constraint matrix"),
    ("mps_status", "HiGHS status", "HiGHS on the MPS file within the build's time limit"),
    ("mps_seconds", "HiGHS s", "HiGHS wall time on the MPS file (s)"),
    ("mps_nodes", "nodes", "HiGHS branch-and-bound nodes"),
    ("mps_value", "HiGHS value", "HiGHS's best value on the MPS file"),
    ("solu_tag", ".solu", "the file's line tag (=opt=, =best=, =inf=, =unkn=)"),
    ("solu_value", "MPS optimum", "the .solu value: optimum of the MPS file (a relaxation)"),
    ("solu_solver", ".solu by", "the solver that gave the .solu line (HiGHS; SCIP where HiGHS failed)"),
    ("deplbench_status", "deplbench status", "deplbench's exact real-x solve"),
    ("deplbench_cost", "real-x cost", "exact real-x SAA cost of deplbench's plan (>= MPS optimum)"),
    ("deplbench_seconds", "deplbench s", "wall time of deplbench's solve (s)"),
    ("note", "note", "why an entry has no MPS"),
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


def format_check(result: dict) -> str:
    """The text table of ``deplbench library check``: one line per instance,
    then the solver summary (Mittelmann-style)."""
    rows = [("instance", ".solu", "status", "value", "bound", "gap", "time s", "agrees")]
    for r in result["instances"]:
        rows.append((r["name"], _fmt(r.get("solu_value")) or r.get("solu_tag", ""), r["status"],
                     _fmt(r.get("primal")), _fmt(r.get("dual")),
                     "" if r.get("gap") is None else f"{r['gap']:.2e}", f"{r['seconds']:.2f}",
                     {True: "yes", False: "NO", None: "-"}[r["agrees"]]))
    out = [align_table(rows), ""]
    s = result["summary"]
    head = ("solver", "version", "instances", "solved", "sgm time s (shift 10)", "mean gap at limit",
            "mismatches")
    gap = s["mean_gap_unsolved"]
    out.append(align_table([head, (s["solver"], s["version"], str(s["instances"]), str(s["solved"]),
                              f"{s['shifted_geomean_s']:.2f}", "-" if gap is None else f"{gap:.2e}",
                              str(s["mismatches"]))]))
    for r in result["instances"]:
        if r["agrees"] is False:
            out.append(f"mismatch: {r['name']}: {r['reason']}")
    return "\n".join(out)


def align_table(rows) -> str:
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


__all__ = ["COLUMNS", "format_check", "write_tables", "align_table"]
