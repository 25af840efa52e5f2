"""The like-guarantee pairs of the best-exp claim (reports/claims.py) on a store
where ``depl-proven`` ran outside the Figs. 5–6 sets too."""

from __future__ import annotations

import pandas as pd
import pytest

from deplbench.reports import claims as claims_mod


def _ratios(rows):
    return pd.DataFrame([{"paper_set": ps, "family": ps or "scaling", "loss_max": lm, "instance_key": key,
                          "solver": solver, "cost": cost, "params_d": {}} for ps, lm, key, solver, cost in rows])


def test_like_guarantee_pairs_keep_the_mask_aligned_with_the_rows_kept():
    ratios = _ratios([
        ("alexnet", 9.0, "a", "depl-proven", 90.0), ("alexnet", 9.0, "a", "best-exp", 100.0),
        ("mobilenet", 5.0, "m", "depl-proven", 120.0), ("mobilenet", 5.0, "m", "best-exp", 100.0),
        # outside the Figs. 5-6 sets: dropped, and must not shift the mask
        ("", 1.0, "s", "depl-proven", 1.0), ("", 1.0, "s", "best-exp", 2.0),
        ("pact-vgg11", 0.3, "p", "depl-proven", 1.0),
    ])
    pairs, label = claims_mod.like_guarantee_pairs(ratios)
    assert label == "depl-proven"
    assert sorted(pairs["instance_key"]) == ["a", "m"]
    saving = dict(zip(pairs["instance_key"], pairs["saving"]))
    assert saving["a"] == pytest.approx(0.1) and saving["m"] == pytest.approx(-0.2)
