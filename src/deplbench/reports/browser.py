"""Check a built report in a real browser: headless Chromium.

The report is static HTML; whether a table spills past the page is a
question of layout that only a browser answers. :func:`page_width` loads a
*copy* of ``index.html`` with one probing script appended (the report itself
stays script-free) and returns the document's scroll width next to the
viewport's width; :func:`screenshot` renders the page to PNG. Both need a
Chromium binary (Debian: ``apt-get install chromium-headless-shell``);
:func:`find_chromium` says whether one is there.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from deplbench.reports.data import ReportError

#: Binaries tried, in order.
CHROMIUM_NAMES = ("chromium-headless-shell", "chromium", "chromium-browser",
                  "google-chrome", "chrome")

_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
          "--disable-dev-shm-usage")

_PROBE = ('<script>document.body.setAttribute("data-probe", '
          'document.documentElement.scrollWidth + "," + window.innerWidth)</script>')


def find_chromium() -> str | None:
    """Path of a Chromium binary on PATH, or None."""
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def _validate(index: Path, width: int) -> Path:
    index = Path(index)
    if not index.is_file():
        raise ReportError(f"index: no report page at {index}")
    if not (isinstance(width, int) and 320 <= width <= 4000):
        raise ReportError(f"width: must be an integer in [320, 4000] pixels, got {width!r}")
    return index


def _run(args: list[str], timeout: float) -> str:
    exe = find_chromium()
    if exe is None:
        raise ReportError("chromium: no Chromium binary on PATH (Debian: apt-get install "
                          "chromium-headless-shell)")
    proc = subprocess.run([exe, *_FLAGS, *args], capture_output=True, text=True,
                          timeout=timeout, check=False)
    if proc.returncode != 0:
        raise ReportError(f"chromium: exit status {proc.returncode}: "
                          f"{proc.stderr.strip().splitlines()[-1:]}")
    return proc.stdout


def page_width(index: str | Path, width: int = 1280, timeout: float = 300.0
               ) -> tuple[int, int]:
    """(document scroll width, viewport width) of the rendered page, in CSS px.

    A page whose content fits has scroll width ≤ viewport width; a table or
    figure that spills makes the scroll width larger.

    Raises
    ------
    ReportError
        No page at ``index``, a bad width, no Chromium, or Chromium failed.
    """
    index = _validate(Path(index), width)
    probe = index.with_name(".probe_" + index.name)
    text = index.read_text(encoding="utf-8")
    probe.write_text(text.replace("</body>", _PROBE + "</body>"), encoding="utf-8")
    try:
        dom = _run([f"--window-size={width},900", "--dump-dom", probe.resolve().as_uri()],
                   timeout)
    finally:
        probe.unlink(missing_ok=True)
    m = re.search(r'data-probe="(\d+),(\d+)"', dom)
    if m is None:
        raise ReportError("chromium: the page did not report its width")
    return int(m.group(1)), int(m.group(2))


def screenshot(index: str | Path, out_png: str | Path, width: int = 1280,
               height: int = 4000, timeout: float = 300.0) -> Path:
    """Render the top ``height`` pixels of the page to ``out_png``."""
    index = _validate(Path(index), width)
    out = Path(out_png)
    out.parent.mkdir(parents=True, exist_ok=True)
    _run([f"--window-size={width},{height}", f"--screenshot={out.resolve()}",
          index.resolve().as_uri()], timeout)
    if not out.is_file():
        raise ReportError(f"chromium: no screenshot written to {out}")
    return out
