"""One backward step of the min-plus recursions over a search's (epoch × virtual model) graph.

The pool's group tables V^π (``groups.GroupTables``) and the largest loss
decrease Dn (:func:`largest_decrease`), built for every search, take, at
each epoch k and for each virtual model v = (model, γ-group), the minimum
over the successors u of v (staying included) of enter_k(u) + jump_k(v → u):
eq. (3)'s switch jump between two models, none between the groups of one
model, +∞ for a forbidden switch.

Unless the loss is order-invariant (then ``BlockSearch`` keeps only
increasing virtual-model orders), a jump depends on the two *models* only.
The minimum is then taken over the groups of each target model first, then
over the models: G² times fewer terms, and bit-identical, because rounding
to nearest is monotone: min_g fl(x_g + J) = fl(min_g x_g + J).

References
----------
DepL paper eq. (3), Sec. III (model switches and their loss jumps).
"""

from __future__ import annotations

import numpy as np


def model_jumps(search) -> np.ndarray | None:
    """(M, M) column of the jump m → m' in the extended jump array ``[J, 0, +∞]``
    (P: staying, P + 1: forbidden), or None when the search's successors are not
    the same for every group of a model (order-invariant loss)."""
    cached = search.__dict__.get("_model_jumps", False)
    if cached is not False:
        return cached
    P, out = search.prob, None
    if not search.order_invariant:
        npair = P.J.shape[2]
        out = np.full((P.M, P.M), npair + 1)
        for m in range(P.M):
            out[m, m] = npair
            for m2 in range(P.M):
                if m2 != m and P.allowed[m, m2]:
                    out[m, m2] = P.switch_index[(m, m2)]
        if not np.array_equal(out[search.vm][:, search.vm], search.jump_index()):
            out = None      # the search's own successors differ by group: the full graph
    search._model_jumps = out
    return out


def jump_table(search, J: np.ndarray) -> np.ndarray:
    """The jumps of :func:`step_min` from per-epoch switch jumps ``J`` (..., P): (..., M, M)
    per (from, to) model, or (..., nv, nv) per virtual model when
    :func:`model_jumps` is None (staying and group moves 0, forbidden +∞).
    Built for one epoch (``J`` (R, P)) or several at once; :func:`step_min` takes
    one epoch's."""
    mj = model_jumps(search)
    tail = np.broadcast_to(np.array([0.0, np.inf]), J.shape[:-1] + (2,))
    return np.concatenate([J, tail], axis=-1)[..., search.jump_index() if mj is None else mj]


def step_min(search, enter: np.ndarray, jumps: np.ndarray) -> np.ndarray:
    """min over the successors u of v of ``enter[..., u]`` + jump(v → u), for every v.

    ``enter`` (..., nv): the value of entering each virtual model at this
    epoch; ``jumps``: this epoch's :func:`jump_table` (same leading shape).
    Returns (..., nv).
    """
    G = search.nv // jumps.shape[-1]
    if G == 1:
        return (enter[..., None, :] + jumps).min(axis=-1)
    E = enter.reshape(enter.shape[:-1] + (jumps.shape[-1], G)).min(axis=-1)        # (..., M): best group
    return np.repeat((E[..., None, :] + jumps).min(axis=-1), G, axis=-1)


def largest_decrease(search) -> np.ndarray:
    """Dn (kmax+1, S, nv): per scenario, the most negative loss change (improvements
    minus switch jumps) any completion from (k, v) can make, stopping included —
    the μ → ∞ end of the per-scenario DP (a backward min-plus recursion over
    ``search``'s epoch × virtual-model graph, forbidden switches at +∞)."""
    P = search.prob
    gain = search.vgamma[None, None, :] * P.a[:, :search.kmax, search.vm]          # (S, K, nv)
    return backward_minplus(search, -gain, P.J)


def backward_minplus(search, enter: np.ndarray, jumps: np.ndarray) -> np.ndarray:
    """V (kmax+1, R, nv): the least value of any completion from (k, v), stopping (0) included.

    V[kmax] = 0 and V[k] = min(0, min over the successors u of v of
    ``enter[:, k, u]`` + V[k+1, :, u] + jump(v → u)) — the backward min-plus
    recursion over ``search``'s epoch × virtual-model graph, forbidden
    switches at +∞, row by row of R draws (scenarios, or a pool's rows).

    Parameters
    ----------
    search
        The search whose graph is walked (:func:`step_min`).
    enter : ndarray, shape (R, ≥ kmax, nv)
        The value of training each virtual model at each epoch.
    jumps : ndarray, shape (R, ≥ kmax, P)
        Each row's switch jumps per epoch (:func:`jump_table`'s input).
    """
    K = search.kmax
    V = np.zeros((K + 1, enter.shape[0], search.nv))
    for k in range(K - 1, -1, -1):
        # one epoch's jumps at a time: (R, ·, ·), not (R, K, ·, ·)
        V[k] = np.minimum(step_min(search, enter[:, k] + V[k + 1], jump_table(search, jumps[:, k, :])), 0.0)
    return V


def as_lower_bound(x: np.ndarray) -> np.ndarray:
    """``x``, Lagrangian bound terms summed under ``np.errstate(over="ignore", invalid="ignore")``,
    with every +∞ and nan replaced by −∞ (in place).

    With μ near the float max (costs near 1e308 make μ_ref that large) a partial sum can pass
    it. Down, the saturated −∞ lies below the exact value: still a lower bound. Up, +∞ is not
    one: a later term (−μ·decrease, μ·(L − ℓmax) < 0) could bring the exact sum back below any
    incumbent, so a +∞ there could prune a plan better than the incumbent; an ∞ − ∞ is nan.
    Both become −∞, which bounds nothing and so prunes nothing wrongly.
    """
    x[np.isnan(x) | np.isposinf(x)] = -np.inf
    return x


__all__ = ["as_lower_bound", "backward_minplus", "jump_table", "largest_decrease", "model_jumps", "step_min"]
