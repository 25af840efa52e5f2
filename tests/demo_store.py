"""The demo store as a test fixture: the rows `make demo` writes
(perf/sweeps/quick.toml), committed as ``tests/data/demo_store.sqlite.xz``
so that the browser checks run on a real report where no ``make demo`` ran
(CI's fresh clone).

Regenerate after a change of the demo sweep or of the store's columns::

    make demo
    .venv/bin/python tests/demo_store.py results/demo.sqlite

Only the stored copy of each full result record (column ``record``) and the
environment (``env``: host, versions) are dropped; every column the report
reads is kept.
"""

from __future__ import annotations

import lzma
import shutil
import sqlite3
import sys
from pathlib import Path

FIXTURE = Path(__file__).resolve().parent / "data" / "demo_store.sqlite.xz"


def shrink(db: str | Path, out: Path = FIXTURE) -> Path:
    """Copy ``db`` without the report-unused payload, compressed to ``out``."""
    tmp = out.with_suffix("")
    shutil.copyfile(db, tmp)
    con = sqlite3.connect(tmp)
    with con:
        con.execute("UPDATE results SET record = NULL, env = NULL")
    con.execute("VACUUM")
    con.close()
    out.write_bytes(lzma.compress(tmp.read_bytes(), preset=9))
    tmp.unlink()
    return out


def unpack(dest: Path) -> Path:
    """The fixture store decompressed to ``dest`` (a directory)."""
    path = Path(dest) / "demo.sqlite"
    path.write_bytes(lzma.decompress(FIXTURE.read_bytes()))
    return path


if __name__ == "__main__":  # pragma: no cover - a maintainer's command
    print(shrink(sys.argv[1]))
