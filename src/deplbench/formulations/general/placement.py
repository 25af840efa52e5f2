"""Placing a relaxed leaf's epochs: which epochs of each model block run on the γ_lo group.

:class:`~.pairs.PairSearch` fixes, per model block, only how many
epochs run on each of two γ-groups, and bounds the block with the
scenario-by-scenario best order (the optimistic placement). Its leaves are
therefore counts, not plans. This module turns such a leaf into a plan, or
proves that none of its orders meets the SAA quantile:

* :func:`placements` proposes orders (the γ_hi epochs where they help the
  scenarios closest to ℓmax, then the earliest epochs);
* :func:`place` is exact: starting from every epoch on γ_hi, moving an epoch
  to γ_lo raises every scenario's loss by (γ_hi − γ_lo)·a ≥ 0, so partial
  placements are pruned as soon as more than p scenarios are violated, and
  the search runs level by level, vectorised (at most ``GeneralSettings.max_placements``
  partial placements per level, beyond which it answers "undecided");
* :func:`realise` combines them.

References
----------
DepL paper eq. (3) (the quantile), Sec. III; J. Luedtke, S. Ahmed, SIAM J.
Optim. 19 (2008) (the SAA count).
"""

from __future__ import annotations

import numpy as np

from deplbench.formulations.model.scenarios import loss_threshold

#: Candidate placements whose losses are formed at once (memory ≈ PLACE_CHUNK·S floats).
PLACE_CHUNK = 8192
#: Critical scenarios (beyond the p + 1 hardest) that steer the first placement tried.
CRITICAL_EXTRA = 8


def placements(search, seq, loss_opt):
    """Candidate γ_hi position sets per block, best guesses first.

    ``search`` is the :class:`~.pairs.PairSearch`; ``seq`` its blocks
    (model, first epoch, γ_hi epochs j, length ℓ); ``loss_opt`` the leaf's
    optimistic losses (S,), whose largest entries name the critical scenarios.
    """
    P = search.prob
    crit = np.argsort(-loss_opt)[:P.p + 1 + CRITICAL_EXTRA]
    cands = []
    for rule in ("critical", "early"):
        pick = []
        for (m, k0, j, ell) in seq:
            idx = np.arange(k0, k0 + ell)
            if rule == "critical":
                score = P.a[crit][:, idx, m].sum(axis=0)
                order = np.argsort(-score, kind="stable")
            else:
                order = np.arange(ell)
            pick.append(np.sort(order[:j]))
        cands.append(pick)
    return cands


def sequence(search, seq, pick):
    """Virtual-model sequence of a relaxed leaf with γ_hi positions ``pick``."""
    parts = []
    for (m, _k0, _j, ell), hi in zip(seq, pick):
        g = np.ones(ell, dtype=int)
        g[hi] = 0
        parts.append(2 * m + g)
    return np.concatenate(parts)


def feasible(search, vseq) -> bool:
    """Whether the virtual-model sequence meets the SAA quantile (at most p violations)."""
    P = search.prob
    losses = P.losses(search.vm[vseq], search.vgamma[vseq])
    return int(np.count_nonzero(losses > loss_threshold(P.lmax))) <= P.p


def realise(search, seq, loss_opt):
    """Place the counts of ``seq``: ``(vseq, decided)``.

    ``seq``: blocks (model, first epoch, γ_hi epochs j, length ℓ);
    ``loss_opt``: the relaxed leaf's optimistic losses (S,). Returns an
    SAA-feasible virtual-model sequence with these counts and
    ``decided=True``; or ``(None, True)`` when no placement is feasible
    (proved by :func:`place`); or ``(None, False)`` when
    :func:`place` stopped at ``GeneralSettings.max_placements`` partial placements.
    """
    tried = set()
    for pick in placements(search, seq, loss_opt):
        vseq = sequence(search, seq, pick)
        key = vseq.tobytes()
        if key in tried:
            continue
        tried.add(key)
        if feasible(search, vseq):
            return vseq, True
    lo_picks, decided = place(search, seq)
    if lo_picks is None:
        return None, decided
    hi = [np.setdiff1d(np.arange(ell), lo) for (_, _, _, ell), lo in zip(seq, lo_picks)]
    vseq = sequence(search, seq, hi)
    if not feasible(search, vseq):        # guards the bookkeeping: _place counts the same losses
        return None, False
    return vseq, True


def place(search, seq):
    """Exact placement search: which epochs of each block run on the γ_lo group.

    Start from every epoch on γ_hi; moving epoch k of block b to γ_lo raises
    every scenario's loss by (γ_hi − γ_lo)·a_s(k, m_b) ≥ 0. Placements are
    built block by block in increasing epoch order, level by level,
    vectorised over the survivors. A partial placement is discarded with all
    its completions when, even if every move still to make (r more in this
    block after its last position, all of the later blocks') raised each
    scenario's loss by the least possible — the r smallest raises after that
    position, scenario by scenario — more than p scenarios would exceed
    ℓmax (a valid test: raises are non-negative, so the true completion
    raises each loss at least that much).

    When more than ``GeneralSettings.max_placements`` partial placements survive a level, the
    ones with the fewest certain violations (then the smallest total excess)
    are kept: a complete placement found then is still feasible (it is
    checked), but running out of survivors no longer proves that none
    exists. Returns ``(lo positions per block or None, decided)``; ``decided``
    is False only in that case.
    """
    P = search.prob
    d_gamma = search.gamma_hi - search.gamma_lo
    tol = loss_threshold(P.lmax)
    loss = np.full(P.S, P.l0)
    prev = -1
    incs, least = [], []
    for (m, k0, j, ell) in seq:
        if prev >= 0:
            loss = loss + P.J[:, k0, P.switch_index[(prev, m)]]
        prev = m
        win = P.a[:, k0:k0 + ell, m]                                      # (S, ℓ)
        loss = loss - search.gamma_hi * win.sum(axis=1)
        inc = d_gamma * win.T                                             # (ℓ, S)
        incs.append(inc)
        n_lo = ell - j
        # least[b][start, r]: per scenario, the r smallest raises among positions ≥ start
        tab = np.zeros((ell + 1, n_lo + 1, P.S))
        for start in range(ell):
            srt = np.cumsum(np.sort(inc[start:], axis=0), axis=0)        # (ℓ − start, S)
            r = min(n_lo, ell - start)
            tab[start, 1:r + 1] = srt[:r]
            tab[start, r + 1:] = np.inf                                    # not enough positions left
        tab[ell, 1:] = np.inf
        least.append(tab)
    later = [sum(least[c][0, seq[c][3] - seq[c][2]] for c in range(b + 1, len(seq))) + np.zeros(P.S)
             for b in range(len(seq))]                                     # the later blocks' least raise
    if np.count_nonzero(loss + least[0][0, seq[0][3] - seq[0][2]] + later[0] > tol) > P.p:
        return None, True
    states = loss[None, :]                                                # (N, S)
    picks = [np.zeros((1, 0), dtype=int) for _ in seq]
    truncated = False
    for b, (_m, _k0, j, ell) in enumerate(seq):
        n_lo = ell - j
        last = np.full(states.shape[0], -1)
        for t in range(n_lo):
            r = n_lo - t - 1                                               # moves left in this block
            pos = np.arange(ell)
            mask = (pos[None, :] > last[:, None]) & (pos[None, :] <= ell - 1 - r)
            si, pi = np.nonzero(mask)
            kept: tuple[np.ndarray, ...] | None = None                     # (states idx, pos, loss, score)
            for c0 in range(0, si.size, PLACE_CHUNK):
                cs, cp = si[c0:c0 + PLACE_CHUNK], pi[c0:c0 + PLACE_CHUNK]
                new = states[cs] + incs[b][cp]
                floor = new + least[b][cp + 1, r] + later[b]
                viol = np.count_nonzero(floor > tol, axis=1)
                ok = viol <= P.p
                score = viol[ok] + np.maximum(floor[ok] - tol, 0.0).sum(axis=1) / (1.0 + np.abs(tol))
                part = (cs[ok], cp[ok], new[ok], score)
                kept = part if kept is None else tuple(np.concatenate([x, y]) for x, y in zip(kept, part))
                if kept[0].size > P.settings.max_placements:
                    truncated = True
                    best = np.argsort(kept[3], kind="stable")[:P.settings.max_placements]
                    kept = tuple(x[best] for x in kept)
            if kept is None or kept[0].size == 0:
                return None, not truncated
            ks, kp, states, _ = kept
            picks = [pk[ks] for pk in picks]
            picks[b] = np.concatenate([picks[b], kp[:, None]], axis=1)
            last = kp
    return [pk[0] for pk in picks], True


__all__ = ["PLACE_CHUNK", "feasible", "place", "placements", "realise", "sequence"]
