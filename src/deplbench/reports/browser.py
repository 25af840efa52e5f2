"""Check a built report in a real browser: headless Chromium.

The report is static HTML; whether a table spills past the page is a
question of layout that only a browser answers. :func:`page_width` loads a
*copy* of ``index.html`` with one probing script appended (the report itself
stays script-free) and returns the document's scroll width next to the
viewport's width; :func:`screenshot` renders the page to PNG. Both need a
Chromium binary (Debian: ``apt-get install chromium-headless-shell``);
:func:`find_chromium` says whether one is there.

The page is measured inside an ``<iframe>`` of exactly the asked width and
height: Chromium's headless window is never narrower than 500 px, so a
phone's 390 px viewport exists only as a frame. The probe inside the frame
posts what it measured to the wrapper page, whose DOM Chromium dumps.
"""

from __future__ import annotations

import json
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

#: Headless Chromium's narrowest window, CSS px.
MIN_WINDOW = 500

_PROBE = ('<script>parent.postMessage({k:"probe",v:'
          'document.documentElement.scrollWidth + "," + window.innerWidth},"*")</script>')

#: The wrapper page: the report copy in a frame of the asked size; what the
#: frame posts becomes an attribute ``data-<k>`` of the wrapper's body.
_WRAPPER = ('<!DOCTYPE html><html><head><meta charset="utf-8"></head><body style="margin:0">'
            '<script>window.addEventListener("message",function(e){{'
            'document.body.setAttribute("data-"+e.data.k,e.data.v)}})</script>'
            '<iframe src="{src}" style="width:{w}px;height:{h}px;border:0;display:block">'
            '</iframe></body></html>')


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


def _dump_with_script(index: Path, script: str, width: int, height: int, timeout) -> str:
    """The wrapper's DOM after ``index``, with ``script`` appended to its
    body, was rendered in a ``width`` × ``height`` frame (from temporary
    copies beside the page, so its relative links still resolve)."""
    probe = index.with_name(".probe_" + index.name)
    wrapper = index.with_name(".frame_" + index.name)
    text = index.read_text(encoding="utf-8")
    probe.write_text(text.replace("</body>", script + "</body>"), encoding="utf-8")
    wrapper.write_text(_WRAPPER.format(src=probe.name, w=width, h=height), encoding="utf-8")
    try:
        return _run([f"--window-size={max(width, MIN_WINDOW)},{height}", "--dump-dom",
                     wrapper.resolve().as_uri()], timeout)
    finally:
        probe.unlink(missing_ok=True)
        wrapper.unlink(missing_ok=True)


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
    dom = _dump_with_script(_validate(Path(index), width), _PROBE, width, 900, timeout)
    m = re.search(r'data-probe="(\d+),(\d+)"', dom)
    if m is None:
        raise ReportError("chromium: the page did not report its width")
    return int(m.group(1)), int(m.group(2))


def screenshot(index: str | Path, out_png: str | Path, width: int = 1280,
               height: int = 4000, timeout: float = 300.0) -> Path:
    """Render the top ``height`` pixels of the page to ``out_png`` (below
    :data:`MIN_WINDOW` px the page is drawn in a frame of ``width`` px at the
    left of a :data:`MIN_WINDOW` px wide image)."""
    index = _validate(Path(index), width)
    out = Path(out_png)
    out.parent.mkdir(parents=True, exist_ok=True)
    wrapper = index.with_name(".frame_" + index.name)
    if width < MIN_WINDOW:
        wrapper.write_text(_WRAPPER.format(src=index.name, w=width, h=height), encoding="utf-8")
    try:
        page = wrapper if width < MIN_WINDOW else index
        _run([f"--window-size={max(width, MIN_WINDOW)},{height}", f"--screenshot={out.resolve()}",
              page.resolve().as_uri()], timeout)
    finally:
        wrapper.unlink(missing_ok=True)
    if not out.is_file():
        raise ReportError(f"chromium: no screenshot written to {out}")
    return out


_BOXES = ('<script>(function(){{var out=[];document.querySelectorAll({sel}).forEach('
          'function(e,i){{var r=e.getBoundingClientRect();out.push({{i:i,'
          'col:e.getAttribute("data-col")||"",cls:e.className||"",tag:e.tagName.toLowerCase(),row:e.parentElement?Array.prototype.indexOf.call('
          'document.querySelectorAll("tr"),e.parentElement):-1,text:e.textContent,'
          'left:r.left,right:r.right,top:r.top+window.scrollY,bottom:r.bottom+window.scrollY}})}});'
          'parent.postMessage({{k:"boxes",v:JSON.stringify({{w:window.innerWidth,'
          'h:window.innerHeight,boxes:out}})}},"*")}})()</script>')


def element_boxes(index: str | Path, selector: str, width: int = 1280, height: int = 900,
                  timeout: float = 300.0) -> dict:
    """Page positions of the elements matching a CSS ``selector``.

    Returns
    -------
    dict
        ``{"w": viewport width, "h": viewport height, "boxes": [{"i", "col"
        (the element's data-col), "cls" (its class), "tag" (its tag name), "row" (index of its parent among the page's
        rows), "text", "left", "right", "top", "bottom"}]}``, in CSS px from
        the top left of the page (``top`` and ``bottom`` include the scroll
        offset, so ``bottom <= h`` means inside the first screen).

    Raises
    ------
    ReportError
        As :func:`page_width`.
    """
    dom = _dump_with_script(_validate(Path(index), width), _BOXES.format(sel=json.dumps(selector)),
                            width, height, timeout)
    m = re.search(r'data-boxes="([^"]*)"', dom)
    if m is None:
        raise ReportError("chromium: the page did not report its element positions")
    import html as _html

    return json.loads(_html.unescape(m.group(1)))
