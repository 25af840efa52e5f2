"""How much would a different time-rescaling rule take off the adaptive bracket's upper end? A measurement.

Run::

    python perf/adaptive_policy_blend.py --family alexnet --loss-max 9 --buckets 2400

The certified policy of ``deplbench adaptive`` (formulations/adaptive/certify.py,
:class:`~deplbench.formulations.adaptive.certify.AdaptivePolicy`) plans this
epoch's compute time a against the rest S of the run as a : √E[S²]
(``scaling="rms"``) or a : E[S] (``"mean"``). This probe blends the two,
a : E[S] + θ(√E[S²] − E[S]) (θ = 0 is "mean", 1 is "rms"), with the
safety factor ρ, on the policy tuned as ``adaptive_bounds`` tunes it, and
simulates each variant on the same fresh runs. Reported per variant:
P(success), mean cost and mean cost / P(success) — the cost of the
Beutler–Ross mix that gives up exactly the surplus over the target, the
score :func:`~deplbench.formulations.adaptive.certify.tune_policy` ranks
candidates by — against the proven lower bound on the same grid. An
estimate on ``--runs`` runs, not a certified bound.
"""

from __future__ import annotations

import numpy as np
from adaptive_probe import probe_parser, tuned

from deplbench.formulations.adaptive.certify import AdaptivePolicy
from deplbench.formulations.model.allocation import TIME_RTOL


class Blend(AdaptivePolicy):
    """:class:`AdaptivePolicy` planning a : E[S] + θ(√E[S²] − E[S])."""

    def __init__(self, base: AdaptivePolicy, theta: float, rho: float):
        super().__init__(base.chain, base.pass_, rho, scaling="rms", give_up=0.0, coin_seed=base.coin_seed)
        self.theta = float(theta)

    def _allocation(self, m2, n2, rem, elapsed) -> np.ndarray:
        st = self.chain.st
        left = st.time_max / (1 + TIME_RTOL) - elapsed - rem[:, 1]
        a = self.tc[m2, n2]
        mean = rem[:, 0] - a
        rms = np.sqrt(np.maximum(rem[:, 2] - 2.0 * a * rem[:, 0] + a * a, 0.0))
        plan = a + mean + self.theta * (rms - mean)
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(left > 0, plan / (self.rho * left), np.inf)
        x = self.x[m2, n2]
        return np.minimum(np.where(np.isfinite(scale) & (scale > 0), x * scale, st.cap[n2]), st.cap[n2])


def main() -> None:
    a = probe_parser(__doc__).parse_args()
    t = tuned(a)
    print(f"{a.family} ℓmax {a.loss_max:g}, {a.buckets} buckets: proven LB {t.lb:.2f}; "
          f"tuned target P(success) {t.target:.4f}")
    for theta in (0.0, 0.5, 1.0, 1.5, 2.0, 3.0):
        for rho in (1.0, 0.98):
            p, c = t.score(Blend(t.policy, theta, rho), a)
            print(f"θ {theta:g} ρ {rho:g}: P(success) {p:.4f}, mean cost {c:.2f}, cost/P(success) {c / p:.2f} "
                  f"({100 * (c / p / t.lb - 1):+.2f} % of LB)")
    print(t.done())

if __name__ == "__main__":
    main()
