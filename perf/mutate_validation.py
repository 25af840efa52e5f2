"""Mutation run over the validation modules: delete one check, run its tests.

Each mutation removes exactly one range or cross-reference check from a copy
of ``src/`` (a ``gt=0`` bound, an ``if ...: raise`` guard) and runs the tests
that state what validation must do (``tests/test_fuzz_planted.py`` and the
hand-written regressions named with it). A mutation is *killed* when a test
fails; the score is killed / total. Every mutation must be killed: a
surviving one is a check no test protects.

Usage::

    python perf/mutate_validation.py            # all mutations, a table on stdout
    python perf/mutate_validation.py --list     # the mutations only

The result and the command are recorded in docs/mutation.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODEL = "deplbench/instances/model.py"
SWEEP = "deplbench/benchmarks/sweep.py"
VALIDATE = "deplbench/benchmarks/validate.py"
LIMITS = "deplbench/limits.py"
VERIFY = "deplbench/benchmarks/library/verify.py"
MANIFEST = "deplbench/benchmarks/library/manifest.py"
CHECK = "deplbench/benchmarks/library/check.py"
STORE = "deplbench/benchmarks/store.py"
REPORT = "deplbench/reports/build.py"
FILES = "deplbench/files.py"
JSONIO = "deplbench/jsonio.py"
#: The tests of a mutation without its own list.
TESTS = ["tests/test_fuzz_planted.py"]
#: The hostile writer/reader regressions and the planted properties beside them.
HOSTILE_IO = ["tests/test_hostile_writes_and_reads.py"]
PLANTED_SOLUTION = ["tests/test_fuzz_planted.py::"
                    "test_planted_non_finite_solution_value_is_refused_naming_line_and_variable"]
PLANTED_MANIFEST = ["tests/test_fuzz_planted.py::test_planted_invalid_manifest_is_refused_naming_the_field"]
PLANTED_GLOB = ["tests/test_fuzz_planted.py::test_planted_invalid_glob_sweep_is_refused_naming_the_field"]

#: (name, file under src/, exact source text, its replacement[, the tests that must
#: kill it — default TESTS]): one check each.
MUTATIONS = [
    ("capacity > 0", MODEL, 'capacity: float = Field(gt=0, ', 'capacity: float = Field('),
    ("bandwidth > 0", MODEL, 'bandwidth: float = Field(gt=0, ', 'bandwidth: float = Field('),
    ("unit_cost >= 0", MODEL, 'unit_cost: float = Field(ge=0, ', 'unit_cost: float = Field('),
    ("compute > 0", MODEL, 'compute: float = Field(gt=0, ', 'compute: float = Field('),
    ("loss_scale > 0", MODEL, 'loss_scale: float = Field(gt=0, ', 'loss_scale: float = Field('),
    ("model size >= 0", MODEL, 'size: float = Field(ge=0, description="s(m)', 'size: float = Field(description="s(m)'),
    ("dataset size > 0", MODEL, '    size: float = Field(gt=0, **_FINITE)', '    size: float = Field(**_FINITE)'),
    ("usefulness > 0", MODEL, 'usefulness: float = Field(gt=0, ', 'usefulness: float = Field('),
    ("0 < omega", MODEL, 'omega: float = Field(gt=0, lt=1, ', 'omega: float = Field(lt=1, '),
    ("omega < 1", MODEL, 'omega: float = Field(gt=0, lt=1, ', 'omega: float = Field(gt=0, '),
    ("time_max > 0", MODEL, 'time_max: float = Field(gt=0, ', 'time_max: float = Field('),
    ("horizon >= 1", MODEL, 'horizon: StrictInt = Field(ge=1, ', 'horizon: StrictInt = Field('),
    ("loss_max < initial_loss", MODEL, 'if not self.loss_max < self.initial_loss:', 'if False:'),
    ("duplicate names", MODEL, '            if dup:\n                raise ValueError(f"{field}: duplicate names',
     '            if False:\n                raise ValueError(f"{field}: duplicate names'),
    ("switch model known", MODEL, 'if getattr(sw, attr) not in model_names:', 'if False:'),
    ("transfer dataset known", MODEL, 'if tc.dataset not in dataset_names:', 'if False:'),
    ("transfer cluster known", MODEL, 'if tc.cluster not in cluster_names:', 'if False:'),
    ("sweep: duplicate group id", SWEEP, 'if gid in ids[:i]:', 'if False:'),
    ("sweep: unknown group in algorithms", SWEEP, 'if not isinstance(g, str) or g not in ids:',
     'if not isinstance(g, str):'),
    ("sweep: target omega in range", SWEEP,
     'if k == "omega" and not all(MIN_OMEGA <= v <= 1.0 - MIN_OMEGA for v in values):',
     'if False:'),
    ("sweep: seeds >= 0", SWEEP, '        nonnegative_int(s, f"{where}.seeds[{j}]")', '        pass'),
    ("sweep: output path under the run folder", SWEEP, '    _check_output_paths(algorithms)\n', ''),
    ("sweep: time limit > 0", VALIDATE, '    v = _positive_number(value, where)\n    if v > MAX_TIME_LIMIT_S:',
     '    v = float(value)\n    if v > MAX_TIME_LIMIT_S:'),
    # hostile writes and reads: each check with the regressions and properties that state it
    ("read: regular files only", LIMITS, '    if not _stat.S_ISREG(st.st_mode):', '    if False:', HOSTILE_IO),
    ("read: solution values finite", VERIFY, '        if not math.isfinite(value):\n            # nan',
     '        if False:\n            # nan', HOSTILE_IO + PLANTED_SOLUTION),
    ("manifest: entries are objects", MANIFEST, '        if not isinstance(rec, dict):', '        if False:',
     HOSTILE_IO + PLANTED_MANIFEST),
    ("manifest: no absolute path", MANIFEST, '    if os.path.isabs(rel) or rel.startswith("~"):', '    if False:',
     HOSTILE_IO + PLANTED_MANIFEST),
    ("manifest: no '..'", MANIFEST, '    if ".." in parts or "\\0" in rel:', '    if False:',
     HOSTILE_IO + PLANTED_MANIFEST),
    ("manifest: no symbolic link", MANIFEST, '    if os.path.realpath(named) != named:', '    if False:', HOSTILE_IO),
    ("library check: corrupt file is an error", CHECK,
     '        elif (bad := _file_problem(recs[name], kind, path, float(time_limit))):',
     '        elif False:', HOSTILE_IO),
    ("sweep: glob without '..'", SWEEP, '    if ".." in parts:\n        raise SweepError(f"{where}.path: the glob',
     '    if False:\n        raise SweepError(f"{where}.path: the glob', HOSTILE_IO + PLANTED_GLOB),
    ("sweep: glob match stays in the tree", SWEEP, '                if os.path.commonpath([base, real]) != str(base):',
     '                if False:', HOSTILE_IO),
    ("sweep: glob files counted", SWEEP, 'recipes = max(1, len(g.paths)) if g.path', 'recipes = 1 if g.path',
     HOSTILE_IO),
    ("sweep: repetitions counted", SWEEP, ' or (None,)) * a.repetitions\n', ' or (None,))\n',
     HOSTILE_IO + PLANTED_GLOB),
    ("sweep: output path resolved (symlinks)", SWEEP,
     '                    confined(os.getcwd(), value, where, SweepError)\n',
     '', HOSTILE_IO),
    ("export: output is not the store", STORE, '    refuse_overwrite(out, store_files(path), "-o", SweepError)\n', '',
     HOSTILE_IO),
    ("report: output holds no input", REPORT, '    refuse_overwrite(out_dir, inputs', '    (out_dir, inputs',
     HOSTILE_IO),
    ("report: removes only its own files", REPORT, '        if (top or sub) and', '        if True or', HOSTILE_IO),
    ("csv: every line of a cell neutralised", FILES, '            start = i + 1\n', '            pass\n', HOSTILE_IO),
    ("csv: a cell with a line break quoted", FILES, 'lineterminator="\\r\\n")', 'lineterminator="\\n")', HOSTILE_IO),
    ("json: non-finite numbers null", JSONIO, 'json.dumps(strict_json(obj), indent=indent, allow_nan=False,',
     'json.dumps(to_jsonable(obj), indent=indent, allow_nan=True,', HOSTILE_IO),
]


def run_one(name: str, rel: str, old: str, new: str, timeout: float,
            tests: list[str] | None = None) -> tuple[str, float, str]:
    """Apply one mutation to a copy of src/, run the tests; (verdict, seconds, detail)."""
    with tempfile.TemporaryDirectory(prefix="deplbench-mutant-") as tmp:
        src = Path(tmp) / "src"
        shutil.copytree(ROOT / "src", src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        target = src / rel
        text = target.read_text(encoding="utf-8")
        if text.count(old) != 1:
            return "not applied", 0.0, f"source text found {text.count(old)} times in {rel}"
        target.write_text(text.replace(old, new), encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(src), "PYTHONDONTWRITEBYTECODE": "1"}
        t0 = time.perf_counter()
        try:
            proc = subprocess.run([sys.executable, "-m", "pytest", *(tests or TESTS), "-x", "-q", "-n", "0",
                                   "-p", "no:cacheprovider"], check=False, cwd=ROOT, env=env,
                                  capture_output=True,
                                  text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return "timeout", time.perf_counter() - t0, ""
        last = (proc.stdout.strip().splitlines() or [""])[-1]
        return ("killed" if proc.returncode != 0 else "SURVIVED"), time.perf_counter() - t0, last


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per mutant test run")
    parser.add_argument("--only", metavar="TEXT", action="append",
                        help="run only the mutations whose name contains TEXT (repeatable)")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTATIONS if not args.only or any(t in m[0] for t in args.only)]
    if args.list:
        for name, rel, *_ in chosen:
            print(f"{name:45s} {rel}")
        return 0
    killed = 0
    print(f"{'mutation':45s} {'verdict':12s} {'s':>6s}  tests")
    for name, rel, old, new, *tests in chosen:
        verdict, seconds, detail = run_one(name, rel, old, new, args.timeout, tests[0] if tests else None)
        killed += verdict == "killed"
        print(f"{name:45s} {verdict:12s} {seconds:6.1f}  {detail}", flush=True)
    print(f"score: {killed}/{len(chosen)} mutations killed")
    return 0 if killed == len(chosen) else 1


if __name__ == "__main__":
    sys.exit(main())
