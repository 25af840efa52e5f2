"""Write docs/example_training_log.csv: synthetic AlexNet training logs for `deplbench fit`.

The logs are drawn from the loss model of the realistic AlexNet instance
(``generate("realistic", family="alexnet")``; DepL Sec. VI-B, Table I):
per-epoch change −A_m·X/√(k+B_m) with X ~ the instance's inverse-gamma, and on
a switch epoch an extra jump l_sw ~ the instance's Student's t (DepL eq. (8),
Sec. VI-A). ``deplbench fit`` should therefore recover A_m, B_m and the laws
approximately — which tests/instances/test_fit_example.py checks.

Usage::

    python examples/make_training_log.py [OUT.csv]     # default docs/example_training_log.csv
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

from deplbench.instances.generators import generate

RUNS = 24          # trajectories
EPOCHS = 40        # epochs per run after epoch 0
SEED = 20260101


def schedules(rng: np.random.Generator, names: list[str]) -> list[list[str]]:
    """One model per epoch for each run: fast → intermediate → slow, or fast → slow
    (every third run), switch epochs drawn at random so that each switch pair
    of the instance occurs in at least eight runs."""
    fast, mid, slow = names
    out = []
    for r in range(RUNS):
        first = int(rng.integers(5, 15))
        if r % 3 == 2:
            out.append([fast] * first + [slow] * (EPOCHS - first))
        else:
            second = int(rng.integers(first + 5, first + 15))
            out.append([fast] * first + [mid] * (second - first) + [slow] * (EPOCHS - second))
    return out


def main(path: str) -> None:
    inst = generate("realistic", family="alexnet")
    rng = np.random.default_rng(SEED)
    models = {m.name: m for m in inst.models}
    jumps = {(s.from_model, s.to_model): s.jump for s in inst.switches}
    rows = []
    for r, plan in enumerate(schedules(rng, [m.name for m in inst.models])):
        loss = inst.initial_loss + float(rng.normal(0.0, 0.05))
        rows.append((f"r{r}", 0, "", round(loss, 6)))
        for k, name in enumerate(plan, start=1):
            m = models[name]
            x = m.improvement.scale / rng.gamma(m.improvement.shape)          # inverse-gamma draw
            loss -= m.loss_scale * x / np.sqrt(k + m.loss_offset)
            if k >= 2 and plan[k - 2] != name:
                j = jumps[(plan[k - 2], name)]
                loss += j.loc + j.scale * rng.standard_t(j.df)
            rows.append((f"r{r}", k, name, round(float(loss), 6)))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["run", "epoch", "model", "loss"])
        w.writerows(rows)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/example_training_log.csv")
