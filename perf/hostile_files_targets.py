"""Every CLI command against hostile files, under a hard timeout and a memory cap.

Run::

    PYTHONPATH=src python perf/hostile_files_targets.py            # every case, a table on stdout
    PYTHONPATH=src python perf/hostile_files_targets.py --only fifo

The sibling of ``limits_targets.py`` (hostile *sizes* of an instance) for
hostile *files*: each row runs one ``deplbench`` command, as a user would,
in a fresh process whose resident memory is capped (``--rss-cap-gb``,
default 2; killed past it) and whose wall time is capped (``--hard-timeout``,
default 60 s; killed past it), and records the exit status, the wall time,
the peak resident memory (``os.wait4``'s ``ru_maxrss``) and the last line
of standard error.

The inputs: ``/dev/zero`` and a FIFO (nobody writing) as an instance, plan,
sweep, training log, solution, ``.solu`` and library manifest; a 3 GB
sparse file in the same places; a gzip bomb (a few MB that inflate to
2 GiB) as a library model, also with a forged size trailer (counted while
inflating, within ``--time-limit``); a solution file of ``nan`` values; a manifest
with ``entries: [1, 2]``, an absolute path, a ``../`` path and a
symbolic-linked folder; outputs that are the command's own input
(``export s.sqlite -o s.sqlite``, its parquet twin, a symlink to it,
``report rep/tables/my.sqlite --out rep``, ``solve i.json -o i.json``); a
sweep whose ``write_lp`` goes through a symbolic link out of the run
folder; sweeps with a glob ``/**/*.json``, a symbolic-link loop, and
repetitions past ``max_tasks``.

A row passes when: no traceback on stderr; the exit status is the expected
one (2: refused as bad input; 1 for ``library check`` of a broken model:
a mismatch); nothing was killed; and the wall time is within
``--limit`` (default 10 s; every case is a refusal that needs no solving)
+ 10 %. The script exits 1 when any row fails. ``--out`` writes the rows as
JSON (default ``results/bench/hostile_files_targets.json``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from limits_targets import measure  # noqa: E402 - the shared runner with its caps

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "deplbench"]
BIG_BYTES = 3 * 10**9


def _cli(*args) -> list[str]:
    return [*CLI, *map(str, args)]


def _in_folder(folder: Path, *args) -> list[str]:
    """``deplbench ARGS`` started in ``folder`` (the run folder of a sweep's relative output paths)."""
    boot = ("import os, runpy, sys; os.chdir(sys.argv[1]); sys.argv = ['deplbench'] + sys.argv[2:]; "
            "runpy.run_module('deplbench', run_name='__main__')")
    return [sys.executable, "-c", boot, str(folder), *map(str, args)]


def _fifo(path: Path) -> Path:
    if not path.exists():
        os.mkfifo(path)
    return path


def _sparse(path: Path) -> Path:
    with open(path, "wb") as fh:
        fh.truncate(BIG_BYTES)
    return path


def _bomb(path: Path, gib: float = 2.0) -> Path:
    """A gzip file of zeros inflating to ``gib`` GiB (about 2 MB on disk)."""
    block = b"\0" * (1 << 24)
    with gzip.open(path, "wb", compresslevel=9) as fh:
        for _ in range(int(gib * 2**30) // len(block)):
            fh.write(block)
    return path


def _library(tmp: Path) -> Path:
    """A one-entry library (the smallest catalog entry with model files)."""
    lib = tmp / "lib"
    subprocess.run(_cli("library", "build", "--out", lib, "--only", "scaling-any-m2-n2-k8", "--no-true-optimum",
                        "--time-limit", "60"), check=True, cwd=ROOT, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return lib


def _copy_lib(lib: Path, dst: Path, edit=None) -> Path:
    shutil.copytree(lib, dst, symlinks=True)
    if edit is not None:
        man = json.loads((dst / "manifest.json").read_text(encoding="utf-8"))
        edit(man, dst)
        (dst / "manifest.json").write_text(json.dumps(man), encoding="utf-8")
    return dst


def _store(tmp: Path) -> Path:
    """A results store with one finished task (the quick sweep's first row is not needed: one depl run)."""
    inst = tmp / "i.json"
    sweep = tmp / "one.toml"
    sweep.write_text(f'[sweep]\nname = "one"\n[[instances]]\nid = "i"\npath = "{inst}"\n'
                     '[[algorithms]]\nname = "depl"\n', encoding="utf-8")
    db = tmp / "s.sqlite"
    subprocess.run(_cli("run", sweep, "--db", db, "--workers", "1", "--quiet"), check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return db


def build_cases(tmp: Path) -> list[tuple[str, list[str], int]]:
    """(name, command, expected exit status) of every case (module docstring)."""
    inst = tmp / "i.json"
    subprocess.run(_cli("generate", "realistic", "--family", "alexnet", "--seed", "0", "-o", inst), check=True,
                   cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    plan = tmp / "r.json"
    subprocess.run(_cli("solve", inst, "--algo", "depl", "-o", plan), check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = tmp / "log.csv"
    shutil.copy(ROOT / "docs" / "example_training_log.csv", log)
    lib = _library(tmp)
    name = "scaling-any-m2-n2-k8"
    db = _store(tmp)
    hostile = {"dev-zero": Path("/dev/zero"), "fifo": _fifo(tmp / "pipe"), "3GB": _sparse(tmp / "big.json")}
    cases: list[tuple[str, list[str], int]] = []
    for kind, bad in hostile.items():
        cases += [
            (f"{kind}: validate instance", _cli("validate", bad), 2),
            (f"{kind}: solve instance", _cli("solve", bad, "--algo", "depl"), 2),
            (f"{kind}: evaluate instance", _cli("evaluate", bad, plan), 2),
            (f"{kind}: evaluate plan", _cli("evaluate", inst, bad), 2),
            (f"{kind}: simulate instance", _cli("simulate", bad, "--algo", "depl", "--runs", "2"), 2),
            (f"{kind}: certify instance", _cli("certify", bad), 2),
            (f"{kind}: adaptive instance", _cli("adaptive", bad), 2),
            (f"{kind}: fit log", _cli("fit", bad, "-o", tmp / f"fit-{kind}.json"), 2),
            (f"{kind}: fit --base", _cli("fit", log, "--base", bad, "-o", tmp / f"fitb-{kind}.json"), 2),
            (f"{kind}: run sweep", _cli("run", bad, "--db", tmp / "x.sqlite", "--dry-run"), 2),
            (f"{kind}: library verify solution", _cli("library", "verify", lib, name, bad), 2),
            (f"{kind}: library check manifest",
             _cli("library", "check", _man_replaced(lib, tmp / f"lib-man-{kind}", bad), "--model", "pwl"), 2),
            (f"{kind}: library check .solu", _cli("library", "check", _solu_replaced(lib, tmp / f"lib-solu-{kind}",
                                                                                     bad), "--model", "pwl"), 2),
            (f"{kind}: report store", _cli("report", bad, "--out", tmp / f"rep-{kind}", "--no-svg", "--quiet"), 2),
            (f"{kind}: export store", _cli("export", bad, "--format", "csv", "-o", tmp / f"x-{kind}.csv"), 2),
        ]
    # the library's own files
    bomb_lib = _copy_lib(lib, tmp / "lib-bomb")
    _bomb(bomb_lib / "pwl" / f"{name}.mps.gz")
    cases.append(("gzip bomb: library check (pwl model, 2 GiB inflated)",
                  _cli("library", "check", bomb_lib, "--model", "pwl", "--time-limit", "5"), 1))
    forged = _copy_lib(lib, tmp / "lib-bomb-forged")
    data = (bomb_lib / "pwl" / f"{name}.mps.gz").read_bytes()
    (forged / "pwl" / f"{name}.mps.gz").write_bytes(data[:-4] + b"\0\0\0\0")   # a trailer that lies
    cases.append(("gzip bomb, forged size trailer: library check",
                  _cli("library", "check", forged, "--model", "pwl", "--time-limit", "5"), 1))
    corrupt = _copy_lib(lib, tmp / "lib-corrupt")
    (corrupt / "pwl" / f"{name}.mps.gz").write_bytes(gzip.compress(b"garbage\n", mtime=0))
    cases.append(("corrupt model: library check", _cli("library", "check", corrupt, "--model", "pwl",
                                                       "--time-limit", "5"), 1))
    nan_sol = tmp / "nan.sol"
    nan_sol.write_text("# all nan\n" + "".join(f"{c} nan\n" for c in _columns(lib, name)), encoding="utf-8")
    cases.append(("nan solution: library verify", _cli("library", "verify", lib, name, nan_sol), 2))
    for label, edit in (
        ("entries [1, 2]", lambda m, d: m.update(entries=[1, 2])),
        ("absolute path", lambda m, d: m["entries"][0].update(instance="/etc/passwd")),
        ("../ path", lambda m, d: m["entries"][0].update(instance="../../etc/passwd")),
    ):
        bad_lib = _copy_lib(lib, tmp / f"lib-{label.replace(' ', '_').replace('/', '')}", edit)
        cases.append((f"manifest {label}: library verify", _cli("library", "verify", bad_lib, name, nan_sol), 2))
        cases.append((f"manifest {label}: library check", _cli("library", "check", bad_lib, "--model", "pwl"), 2))
    outside = tmp / "outside"
    outside.mkdir()
    linked = _copy_lib(lib, tmp / "lib-symlink")
    shutil.move(str(linked / "instances"), str(outside / "instances"))
    (linked / "instances").symlink_to(outside / "instances")
    cases.append(("manifest path through a symlink: library verify",
                  _cli("library", "verify", linked, name, nan_sol), 2))
    # outputs over inputs
    (tmp / "link.csv").symlink_to(db)
    cases += [
        ("export -o the store (csv)", _cli("export", db, "--format", "csv", "-o", db), 2),
        ("export -o the store (parquet)", _cli("export", db, "--format", "parquet", "-o", db), 2),
        ("export -o a symlink to the store", _cli("export", db, "--format", "csv", "-o", tmp / "link.csv"), 2),
        ("solve -o the instance", _cli("solve", inst, "--algo", "depl", "-o", inst), 2),
    ]
    rep = tmp / "rep"
    (rep / "tables").mkdir(parents=True)
    shutil.copy(db, rep / "tables" / "my.sqlite")
    cases.append(("report store inside --out", _cli("report", rep / "tables" / "my.sqlite", "--out", rep,
                                                    "--no-svg", "--quiet"), 2))
    # sweeps
    sw = tmp / "sweeps"
    (sw / "inst").mkdir(parents=True)
    shutil.copy(inst, sw / "inst" / "a.json")
    (sw / "inst" / "loop").symlink_to(sw / "inst")
    (sw / "out").symlink_to(outside)

    def sweep(fname: str, path: str, extra: str = "", head: str = "") -> Path:
        f = sw / fname
        f.write_text(f'[sweep]\nname = "h"\n{head}[[instances]]\nid = "g"\npath = "{path}"\n'
                     f'[[algorithms]]\nname = "milp"\n{extra}', encoding="utf-8")
        return f

    cases += [
        ("sweep glob /**/*.json", _cli("run", sweep("root.toml", "/**/*.json"), "--db", sw / "x.sqlite",
                                       "--dry-run"), 2),
        ("sweep glob through a symlink loop, repetitions past max_tasks",
         _cli("run", sweep("loop.toml", "inst/**/*.json", "repetitions = 1000\n", "max_tasks = 100\n"),
              "--db", sw / "x.sqlite", "--dry-run"), 2),
        ("sweep write_lp through a symlink out of the run folder",
         _in_folder(sw, "run", sweep("lp.toml", "inst/a.json", 'params = {write_lp = "out/m.lp"}\n'), "--db",
                    sw / "x.sqlite", "--dry-run"), 2),
    ]
    return cases


def _man_replaced(lib: Path, dst: Path, bad: Path) -> Path:
    d = _copy_lib(lib, dst)
    (d / "manifest.json").unlink()
    (d / "manifest.json").symlink_to(bad)
    return d


def _solu_replaced(lib: Path, dst: Path, bad: Path) -> Path:
    d = _copy_lib(lib, dst)
    (d / "pwl.solu").unlink()
    (d / "pwl.solu").symlink_to(bad)
    return d


def _columns(lib: Path, name: str) -> list[str]:
    """The column names of the entry's PWL model (from its MPS file's COLUMNS section)."""
    text = gzip.decompress((lib / "pwl" / f"{name}.mps.gz").read_bytes()).decode()
    cols, on = [], False
    for line in text.splitlines():
        if line.startswith("COLUMNS"):
            on = True
            continue
        if on and not line.startswith(" "):
            break
        if on:
            parts = line.split()
            if parts and parts[0] != "MARKER" and "'MARKER'" not in parts and (not cols or cols[-1] != parts[0]):
                cols.append(parts[0])
    return cols[:5]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hard-timeout", type=float, default=60.0, help="kill a command after this many seconds")
    ap.add_argument("--rss-cap-gb", type=float, default=2.0, help="kill a command past this resident memory (GiB)")
    ap.add_argument("--limit", type=float, default=10.0, help="seconds a refusal may take (the row passes "
                                                               "within limit + 10 %%)")
    ap.add_argument("--only", action="append", metavar="TEXT", help="only the cases whose name contains TEXT")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench" / "hostile_files_targets.json")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="hostile-files-"))
    t0 = time.perf_counter()
    cases = build_cases(tmp)
    cases = [c for c in cases if not args.only or any(t in c[0] for t in args.only)]
    print(f"# {len(cases)} cases (set-up {time.perf_counter() - t0:.0f} s); hard timeout {args.hard_timeout:g} s, "
          f"RSS cap {args.rss_cap_gb:g} GiB, limit {args.limit:g} s + 10 %; load {os.getloadavg()}", flush=True)
    print(f"{'case':62s} {'exit':>4s} {'want':>4s} {'wall s':>6s} {'peak MB':>7s}  ok  last stderr line")
    rows, bad = [], 0
    for name, cmd, want in cases:
        m = measure(cmd, args.hard_timeout, args.rss_cap_gb * 2**30)
        trace = "Traceback" in m["stderr"]
        ok = (m["exit"] == want and not trace and not m["killed"] and m["wall_s"] <= 1.1 * args.limit)
        bad += not ok
        last = (m["stderr"].splitlines() or [""])[-1]
        shown = [str(c) for c in cmd[2:] if "runpy" not in str(c)]
        rows.append({"case": name, "command": shown, "exit": m["exit"], "want": want,
                     "wall_s": m["wall_s"], "peak_rss_mb": m["peak_rss_mb"], "killed": m["killed"],
                     "traceback": trace, "ok": ok, "stderr": last})
        print(f"{name[:62]:62s} {m['exit']:>4d} {want:>4d} {m['wall_s']:6.1f} {m['peak_rss_mb']:7.0f}  "
              f"{'yes' if ok else 'NO ':3s} {(m['killed'] or last)[:100]}", flush=True)
    print(f"# {len(rows) - bad}/{len(rows)} rows pass (no traceback, expected exit status, within "
          f"{args.limit:g} s + 10 %, not killed); load {os.getloadavg()}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"limit_s": args.limit, "hard_timeout_s": args.hard_timeout,
                                    "rss_cap_gb": args.rss_cap_gb, "load_end": os.getloadavg(), "rows": rows},
                                   indent=1), encoding="utf-8")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
