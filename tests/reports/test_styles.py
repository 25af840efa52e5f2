"""Series styles from the records (deplbench.reports.styles): a style matplotlib cannot draw.

A plug-in's PlotStyle is stored as declared, and a store can be edited by
hand: one colour matplotlib does not know ("banana") would make every figure,
and with it the whole report, fail with "error: Invalid RGBA argument:
'banana'" (exit 2). Such a style is replaced by the fallback, with a note.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.colors import is_color_like

from deplbench.reports.styles import drop_unusable_styles, fallback_style, series_info, style_problem


def _frame(styles: dict[str, dict]) -> pd.DataFrame:
    names = list(styles)
    return pd.DataFrame({"algorithm": names, "solver": names, "algorithm_label": names,
                         "is_exact": [False] * len(names),
                         "style_d": pd.Series([styles[n] for n in names], dtype=object)})


def test_a_style_matplotlib_cannot_draw_falls_back_with_a_note():
    df = _frame({
        "good": {"colour": "#123456", "marker": "^", "linestyle": "--"},
        "named": {"colour": "red", "marker": "$a$", "linestyle": "dotted"},
        "banana": {"colour": "banana", "marker": "o", "linestyle": "-"},
        "bad-marker": {"colour": "#123456", "marker": "??", "linestyle": "-"},
        "bad-line": {"colour": "#654321", "marker": "o", "linestyle": "zz"},
        "none": {},
    })
    notes = drop_unusable_styles(df)
    assert notes == [
        "algorithm 'bad-line': the stored style's linestyle 'zz' is not a matplotlib line style; "
        "drawn with a fallback style",
        "algorithm 'bad-marker': the stored style's marker '??' is not a matplotlib marker; "
        "drawn with a fallback style",
        "algorithm 'banana': the stored style's colour 'banana' is not a matplotlib colour; "
        "drawn with a fallback style",
    ]
    info = series_info(df)
    assert (info["good"].marker, info["good"].linestyle) == ("^", "--")
    assert (info["named"].marker, info["named"].linestyle) == ("$a$", "dotted")
    for name in ("banana", "bad-marker", "bad-line", "none"):
        assert (info[name].marker, info[name].linestyle) == fallback_style(name)[1:]
    assert all(is_color_like(i.colour) for i in info.values())
    assert drop_unusable_styles(df) == []               # nothing left to replace


def test_style_problem_accepts_what_the_built_in_algorithms_declare():
    import json
    from importlib import resources

    # the catalogue is regenerated from the classes (tests/solvers/test_solver_catalog.py)
    catalog = json.loads(resources.files("deplbench.solvers").joinpath("catalog.json").read_text("utf-8"))
    assert len(catalog) >= 10
    for name, info in catalog.items():
        assert info["style"] and style_problem(info["style"]) is None, name
