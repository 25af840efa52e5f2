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
    python perf/mutate_validation.py --check    # every mutation finds its source text (no tests run)

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
MAGNITUDES = "deplbench/instances/magnitudes.py"
INSTANCE_CHECK = "deplbench/formulations/evaluation/instance_check.py"
SWEEP = "deplbench/benchmarks/sweep_parse.py"
SWEEP_GLOB = "deplbench/benchmarks/sweep_glob.py"
VALIDATE = "deplbench/benchmarks/validate.py"
LIMITS = "deplbench/limits.py"
VERIFY = "deplbench/benchmarks/library/verify.py"
MANIFEST = "deplbench/benchmarks/library/manifest.py"
CHECK = "deplbench/benchmarks/library/check.py"
EXPORT = "deplbench/benchmarks/export.py"
REPORT = "deplbench/reports/build.py"
FILES = "deplbench/files.py"
JSONIO = "deplbench/jsonio.py"
PARAMS = "deplbench/params.py"
#: The tests of a mutation without its own list.
TESTS = ["tests/test_fuzz_planted.py"]
#: The hostile writer/reader regressions and the planted properties beside them.
HOSTILE_IO = ["tests/test_hostile_writes_and_reads.py"]
PLANTED_SOLUTION = ["tests/test_fuzz_planted.py::"
                    "test_planted_non_finite_solution_value_is_refused_naming_line_and_variable"]
PLANTED_MANIFEST = ["tests/test_fuzz_planted.py::test_planted_invalid_manifest_is_refused_naming_the_field"]
#: ω's range: the planted property plants ω outside (0, 1); the magnitude tests state the [1e-12, 1 − 1e-12] edges.
OMEGA_TESTS = ["tests/test_fuzz_planted.py", "tests/instances/test_magnitudes.py"]
#: The re-check of an instance changed in code against load_instance's messages.
QUICK_TESTS = ["tests/formulations/evaluation/test_instance_check.py"]
PLANTED_GLOB = ["tests/test_fuzz_planted.py::test_planted_invalid_glob_sweep_is_refused_naming_the_field"]

#: (name, file under src/, exact source text, its replacement[, the tests that must
#: kill it — default TESTS]): one check each. A check stated in two places has
#: tuples of files, texts and replacements, deleted together.
MUTATIONS = [
    ("capacity > 0", MODEL, 'capacity: _Finite = Field(gt=0, ', 'capacity: _Finite = Field('),
    ("bandwidth > 0", MODEL, 'bandwidth: _Finite = Field(gt=0, ', 'bandwidth: _Finite = Field('),
    ("unit_cost >= 0", MODEL, 'unit_cost: _Finite = Field(ge=0, ', 'unit_cost: _Finite = Field('),
    ("compute > 0", MODEL, 'compute: _Finite = Field(gt=0, ', 'compute: _Finite = Field('),
    ("loss_scale > 0", MODEL, 'loss_scale: _Finite = Field(gt=0, ', 'loss_scale: _Finite = Field('),
    ("model size >= 0", MODEL, 'size: _Finite = Field(ge=0, description="s(m)',
     'size: _Finite = Field(description="s(m)'),
    ("dataset size > 0", MODEL, '    size: _Finite = Field(gt=0)\n', '    size: _Finite = Field()\n'),
    ("usefulness > 0", MODEL, 'usefulness: _Finite = Field(gt=0)', 'usefulness: _Finite = Field()'),
    # ω's range is stated twice (the field's bounds, for the schema, and omega_range, for the message): both go
    ("omega >= MIN_OMEGA", (MODEL, MAGNITUDES),
     ('= Field(ge=MIN_OMEGA, le=1 - MIN_OMEGA, ', 'not MIN_OMEGA <= value <= 1 - MIN_OMEGA:'),
     ('= Field(le=1 - MIN_OMEGA, ', 'not value <= 1 - MIN_OMEGA:'), OMEGA_TESTS),
    ("omega <= 1 - MIN_OMEGA", (MODEL, MAGNITUDES),
     ('= Field(ge=MIN_OMEGA, le=1 - MIN_OMEGA, ', 'not MIN_OMEGA <= value <= 1 - MIN_OMEGA:'),
     ('= Field(ge=MIN_OMEGA, ', 'not MIN_OMEGA <= value:'), OMEGA_TESTS),
    ("time_max > 0", MODEL, '(time_max_range)] = Field(gt=0, ', '(time_max_range)] = Field('),
    ("horizon >= 1", MODEL, 'horizon: StrictInt = Field(ge=1, ', 'horizon: StrictInt = Field('),
    ("loss_max < initial_loss", MODEL, '    if not inst.loss_max < inst.initial_loss:', '    if False:'),
    ("duplicate names", MODEL, '        if dup:\n            raise ValueError(f"{field}: duplicate names',
     '        if False:\n            raise ValueError(f"{field}: duplicate names'),
    ("switch model known", MODEL, 'if getattr(sw, attr) not in model_names:', 'if False:'),
    ("switch to itself", MODEL, 'if sw.from_model == sw.to_model:', 'if False:'),
    ("duplicate switch", MODEL, 'if (sw.from_model, sw.to_model) in seen:', 'if False:'),
    ("transfer dataset known", MODEL, 'if tc.dataset not in dataset_names:', 'if False:'),
    ("transfer cluster known", MODEL, 'if tc.cluster not in cluster_names:', 'if False:'),
    ("duplicate transfer entry", MODEL, 'if (tc.dataset, tc.cluster) in pairs:', 'if False:'),
    ("magnitudes: loss within MAX_LOSS", MAGNITUDES, '        if abs(value) > MAX_LOSS:', '        if False:'),
    ("magnitudes: no subnormal number", MAGNITUDES, '        elif _subnormal(value):', '        elif False:'),
    # the quick re-check before every evaluate_plan of an instance changed in code: each rule it applies
    ("quick check: declared ranges", INSTANCE_CHECK,
     '        _scalar_model().model_validate({name: getattr(instance, name) for name in SCALAR_FIELDS})\n', '',
     QUICK_TESTS),
    ("quick check: loss_max < initial_loss", INSTANCE_CHECK, '        check_targets(instance)\n', '', QUICK_TESTS),
    ("quick check: unique names", INSTANCE_CHECK, '        check_unique_names(instance)\n', '', QUICK_TESTS),
    ("quick check: magnitudes", INSTANCE_CHECK, '        check_target_magnitudes(instance)\n', '', QUICK_TESTS),
    ("full check: text rule", INSTANCE_CHECK, '            check_shape(data)\n', '', QUICK_TESTS),
    ("sweep: duplicate group id", SWEEP, 'if gid in ids[:i]:', 'if False:'),
    ("sweep: unknown group in algorithms", SWEEP, 'if not isinstance(g, str) or g not in ids:',
     'if not isinstance(g, str):'),
    ("sweep: target omega in range", SWEEP, 'if k == "omega":', 'if False:'),
    ("sweep: seeds >= 0", SWEEP, '        seed_int(s, f"{where}.seed" if "seed" in entry else f"{where}.seeds[{j}]")',
     '        pass'),
    ("seeds <= 2**63 - 1 (every reader)", PARAMS, '    if value > MAX_SEED:', '    if False:',
     ["tests/benchmarks/test_sweep.py::test_invalid_sweeps_name_the_key",
      "tests/test_hostile_inputs.py::test_every_seed_reader_keeps_one_rule"]),
    ("sweep: output path under the run folder", SWEEP, '    _check_output_paths(algorithms, groups, source)\n', ''),
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
    ("sweep: glob without '..'", SWEEP_GLOB, '    if ".." in parts:\n        raise SweepError(f"{where}.path: the glob',
     '    if False:\n        raise SweepError(f"{where}.path: the glob', HOSTILE_IO + PLANTED_GLOB),
    ("sweep: glob match stays in the tree", SWEEP_GLOB,
     '                if os.path.commonpath([base, real]) != str(base):', '                if False:', HOSTILE_IO),
    ("sweep: glob files counted", SWEEP, 'recipes = max(1, len(g.paths)) if g.path', 'recipes = 1 if g.path',
     HOSTILE_IO),
    ("sweep: repetitions counted", SWEEP, ' or (None,)) * a.repetitions\n', ' or (None,))\n',
     HOSTILE_IO + PLANTED_GLOB),
    ("sweep: output path resolved (symlinks)", SWEEP,
     '                    confined(os.getcwd(), value, where, SweepError)\n',
     '', HOSTILE_IO),
    ("export: output is not the store", EXPORT, '    refuse_overwrite(out, store_files(path), "-o", SweepError)\n', '',
     HOSTILE_IO),
    ("report: output holds no input", REPORT, '    refuse_overwrite(out_dir, inputs', '    (out_dir, inputs',
     HOSTILE_IO),
    ("report: removes only its own files", REPORT, '        if (top or sub) and', '        if True or', HOSTILE_IO),
    ("csv: every line of a cell neutralised", FILES, '            start = i + 1\n', '            pass\n', HOSTILE_IO),
    ("csv: a cell with a line break quoted", FILES, 'lineterminator="\\r\\n")', 'lineterminator="\\n")', HOSTILE_IO),
    ("json: non-finite numbers null", JSONIO, 'json.dumps(strict_json(obj), indent=indent, allow_nan=False,',
     'json.dumps(to_jsonable(obj), indent=indent, allow_nan=True,', HOSTILE_IO),
]


Edit = str | tuple[str, ...]


def edits(rel: Edit, old: Edit, new: Edit) -> list[tuple[str, str, str]]:
    """A mutation's (file, source text, replacement) edits.

    One check enforced in two places (a field's bounds and a validator
    stating them readably) is deleted in both, else its mutant survives
    for the wrong reason: ``rel``, ``old`` and ``new`` are then tuples."""
    if isinstance(rel, tuple):
        return list(zip(rel, old, new))
    return [(rel, str(old), str(new))]


def mutated(text: str, old: str, new: str) -> tuple[str, str]:
    """``text`` with ``old`` replaced by ``new``, and "" or why it cannot be (not found exactly once)."""
    if text.count(old) != 1:
        return text, f"source text {old.strip().splitlines()[0]!r} found {text.count(old)} times"
    return text.replace(old, new), ""


def run_one(name: str, rel: Edit, old: Edit, new: Edit, timeout: float,
            tests: list[str] | None = None) -> tuple[str, float, str]:
    """Apply one mutation to a copy of src/, run the tests; (verdict, seconds, detail)."""
    with tempfile.TemporaryDirectory(prefix="deplbench-mutant-") as tmp:
        src = Path(tmp) / "src"
        shutil.copytree(ROOT / "src", src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        for path, o, n in edits(rel, old, new):
            text, problem = mutated((src / path).read_text(encoding="utf-8"), o, n)
            if problem:
                return "not applied", 0.0, f"{problem} in {path}"
            (src / path).write_text(text, encoding="utf-8")
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
    parser.add_argument("--check", action="store_true",
                        help="only check that every mutation applies to the current source (no tests run); "
                             "exit 1 if one does not")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per mutant test run")
    parser.add_argument("--only", metavar="TEXT", action="append",
                        help="run only the mutations whose name contains TEXT (repeatable)")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTATIONS if not args.only or any(t in m[0] for t in args.only)]
    if args.list:
        for name, rel, *_ in chosen:
            print(f"{name:45s} {' + '.join(rel) if isinstance(rel, tuple) else rel}")
        return 0
    if args.check:
        stale = 0
        for name, rel, old, new, *_ in chosen:
            problems = [f"{p} in {path}" for path, o, n in edits(rel, old, new)
                        if (p := mutated((ROOT / "src" / path).read_text(encoding="utf-8"), o, n)[1])]
            stale += bool(problems)
            print(f"{name:45s} {'not applied: ' + '; '.join(problems) if problems else 'applies'}")
        print(f"{len(chosen) - stale}/{len(chosen)} mutations apply")
        return 1 if stale else 0
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
