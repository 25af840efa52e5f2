"""The out-of-sample evaluator's memory rule: what it holds at once and when it refuses.

:func:`~deplbench.formulations.evaluation.evaluate.evaluate_plan` simulates
trajectories in blocks (:func:`block_size`) and accumulates the final
losses and the per-epoch mean. The per-epoch 1 %/99 % bands (Fig. 9) are
exact percentiles over every trajectory: kept whole when they fit the
budget (:func:`bands_kept`), else computed in chunks of epoch columns, each
block re-simulated from its recorded generator state (:func:`band_chunk`
columns at a time, at most :data:`MAX_BAND_CHUNKS` chunks).
:func:`check_evaluation_memory` is the one rule that sizes this, for the
evaluator itself, for :func:`~deplbench.solvers.run.solve` before the
solve (sized for K̄) and for a sweep's load check (docs/DESIGN.md, "Input rules").
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from deplbench.errors import DeplbenchError, PlanError
from deplbench.limits import MAX_MEMORY_GIB, MEMORY_BUDGET_GIB, memory_budget_gib

#: Trajectories simulated per block (at most; fewer for long plans, :func:`block_size`).
_BLOCK = 25_000

#: The suite's one budget in bytes (deplbench.limits). It fixes the block
#: layout of the out-of-sample stream (:func:`block_size`); what the
#: evaluator may hold at once is the budget of the current
#: :func:`deplbench.limits.memory_budget` scope (:func:`budget_bytes`), this one
#: by default. Beyond it a simulation is refused naming ``samples`` rather
#: than letting the kernel kill the process (docs/DESIGN.md, "Input rules").
MEMORY_BUDGET = int(MEMORY_BUDGET_GIB * 2**30)
#: Bytes per trajectory value when the bands are kept whole: the kept blocks,
#: their concatenation and the percentile's copy.
BYTES_PER_VALUE = 8 * 3
#: Bytes per trajectory value at the peak of simulating one block: the draws and
#: the trajectory, a law's own temporaries included
#: (:func:`~deplbench.formulations.evaluation.evaluate.simulate_trajectories`).
BLOCK_BYTES_PER_VALUE = 8 * 2
#: Bytes per trajectory value by which :func:`block_size` divides the budget: part of
#: the block layout, so never changed with the simulation's memory. The layout fixes
#: which draw goes to which trajectory; a new value would change the numbers of every
#: evaluation of a plan long enough for a block of fewer than 25,000 trajectories.
LAYOUT_BYTES_PER_VALUE = 8 * 3
#: Bytes per final loss (the finals and their sorted copy) and per value of
#: a band chunk (the chunk and the percentile's copy).
_BYTES_PER_FINAL = _BYTES_PER_CHUNK_VALUE = 8 * 2
#: Bytes per epoch of the plan held beside the trajectories, whatever the sample count: the
#: parsed plan (about 880 B an epoch of pydantic objects) and the evaluator's per-epoch arrays,
#: lists and maps (about 110 B: indices, epoch parameters, the draws' column map, the per-epoch
#: mean and bands as lists). Measured on a 300,000-epoch plan (peak RSS), rounded up.
EPOCH_BYTES = 1152


#: Most epoch chunks the per-epoch bands are computed in when the trajectories
#: do not fit whole: each chunk re-simulates every trajectory, so this bounds
#: the bands' cost at (1 + MAX_BAND_CHUNKS) × the simulation time; a sample
#: count that would need more is refused like one beyond the budget.
MAX_BAND_CHUNKS = 64


def budget_bytes() -> int:
    """Bytes the evaluator may hold at once: the :func:`deplbench.limits.memory_budget` scope's budget."""
    return int(min(memory_budget_gib(), MAX_MEMORY_GIB) * 2**30)    # a scope opened with inf: no int


def block_size(n_epochs: int) -> int:
    """Trajectories per simulated block of a plan of ``n_epochs`` epochs.

    The blocks fix which draw goes to which trajectory, so they are sized
    from constants alone (:data:`MEMORY_BUDGET`, :data:`LAYOUT_BYTES_PER_VALUE`),
    never from a scope's budget: the numbers of an evaluation do not depend on a
    budget set around it, nor on the machine. One block takes at most
    :data:`BLOCK_BYTES_PER_VALUE` per value, two thirds of the budget, which leaves
    the rest for the final losses and a chunk of the bands (:func:`band_chunk`).
    """
    return max(1, min(_BLOCK, MEMORY_BUDGET // ((n_epochs + 1) * LAYOUT_BYTES_PER_VALUE)))


def epoch_bytes(n_epochs: int) -> int:
    """Bytes a plan of ``n_epochs`` epochs takes beside its trajectories (:data:`EPOCH_BYTES` each)."""
    return n_epochs * EPOCH_BYTES


def bands_kept(n: int, n_epochs: int, budget: int) -> bool:
    """Whether the plan, the finals and every trajectory fit in ``budget`` (the bands in one pass)."""
    return epoch_bytes(n_epochs) + n * (_BYTES_PER_FINAL + (n_epochs + 1) * BYTES_PER_VALUE) <= budget


def min_chunk(n_epochs: int) -> int:
    """The fewest epoch columns per chunk: at most :data:`MAX_BAND_CHUNKS` chunks."""
    return -(-(n_epochs + 1) // MAX_BAND_CHUNKS)


def band_chunk(n: int, n_epochs: int, budget: int) -> int:
    """Epoch columns per chunk of the bands computed by re-simulation: the
    most that fit in ``budget`` beside the finals and one block, at most the
    plan's ``n_epochs + 1``; 0 when fewer than :func:`min_chunk` fit."""
    width = n_epochs + 1
    block_bytes = min(n, block_size(n_epochs)) * width * BLOCK_BYTES_PER_VALUE
    free = budget - epoch_bytes(n_epochs) - n * _BYTES_PER_FINAL - block_bytes
    chunk = int(max(0, min(width, free // (n * _BYTES_PER_CHUNK_VALUE))))
    return chunk if chunk >= min_chunk(n_epochs) else 0


def evaluation_bytes(n: int, n_epochs: int, trajectory: bool, budget: int) -> int:
    """The least memory an evaluation of ``n`` trajectories needs at once (bytes).

    Always the plan itself (:func:`epoch_bytes`) and the finals, and one block of
    trajectories. With the bands: every trajectory kept, or, when that does not fit,
    one block and the narrowest chunk (:func:`min_chunk`).
    """
    width = n_epochs + 1
    finals = epoch_bytes(n_epochs) + n * _BYTES_PER_FINAL
    block = min(n, block_size(n_epochs)) * width * BLOCK_BYTES_PER_VALUE
    if not trajectory:
        return finals + block if n_epochs else finals
    kept = finals + n * width * BYTES_PER_VALUE
    chunked = finals + block + n * min_chunk(n_epochs) * _BYTES_PER_CHUNK_VALUE
    return min(kept, chunked)


def max_samples(n_epochs: int, trajectory: bool, budget: int) -> int:
    """The largest sample count :func:`evaluation_bytes` fits in ``budget``."""
    budget -= epoch_bytes(n_epochs)
    width = n_epochs + 1
    block = block_size(n_epochs)
    if not trajectory:
        if not n_epochs:
            return max(0, budget // _BYTES_PER_FINAL)
        one_block = (budget - block * width * BLOCK_BYTES_PER_VALUE) // _BYTES_PER_FINAL
        small = budget // (_BYTES_PER_FINAL + width * BLOCK_BYTES_PER_VALUE)    # fewer than a block
        return int(max(0, min(small, block - 1) if one_block < block else one_block))
    kept = budget // (_BYTES_PER_FINAL + width * BYTES_PER_VALUE)
    # beyond one block: the finals and the narrowest chunk beside a full block
    chunked = ((budget - block * width * BLOCK_BYTES_PER_VALUE)
               // (_BYTES_PER_FINAL + min_chunk(n_epochs) * _BYTES_PER_CHUNK_VALUE))
    return int(max(0, kept, chunked if chunked > block else 0))


def check_evaluation_memory(n: int, n_epochs: int, trajectory: bool, field: str = "samples",
                            error: type[DeplbenchError] = PlanError, up_to: bool = False,
                            epochs_field: str | None = None, least: int = 1) -> None:
    """Refuse, naming ``field``, an evaluation that cannot fit the memory budget.

    What must be held at once is sized against the budget of the current
    :func:`deplbench.limits.memory_budget` scope: the plan itself
    (:data:`EPOCH_BYTES` an epoch), the final losses (``n`` × 16 B), one
    block of trajectories and, with the per-epoch bands (``trajectory``), either
    every trajectory or, when they do not fit, one block and one chunk of
    epoch columns (:func:`~deplbench.formulations.evaluation.evaluate.evaluate_plan`). So the bands are refused
    only when the finals and one block leave no room for a chunk of
    ⌈(``n_epochs`` + 1) / :data:`MAX_BAND_CHUNKS`⌉ columns (a bound on the
    re-simulations, each costing one simulation of every trajectory).

    Parameters
    ----------
    n : int
        Trajectories.
    n_epochs : int
        The plan's epochs (0: the final losses alone); with ``up_to``, K̄,
        the longest plan the instance allows, the plan not yet known.
    trajectory : bool
        Whether the per-epoch bands are computed.
    field : str, default "samples"
        The argument or flag the message names.
    error : type, default PlanError
    up_to : bool, default False
    epochs_field : str, optional
        The field naming the plan's length (``"epochs"``): when even ``least``
        trajectories do not fit, the refusal names it rather than ``field``.
    least : int, default 1
        The fewest trajectories the caller would accept.

    Raises
    ------
    error
        One line: the memory needed, the budget and the largest count that fits
        (or, naming ``epochs_field``, that the plan is too long for any count).
    """
    budget = budget_bytes()
    need = evaluation_bytes(n, n_epochs, trajectory, budget)
    if need > budget:
        fits = max_samples(n_epochs, trajectory, budget)
        if epochs_field is not None and fits < least:
            # not the sample count: the plan is too long to evaluate with the fewest samples allowed
            raise error(f"{epochs_field}: a plan of {n_epochs} epochs is too long to evaluate within the memory "
                        f"budget of {budget / 2**30:g} GiB: {n} trajectories need {need / 2**30:.3g} GiB"
                        + (" with the per-epoch bands" if trajectory else "")
                        + f", the plan itself {epoch_bytes(n_epochs) / 2**30:.3g} GiB of it"
                        + (f" (and at most {fits} samples would fit, fewer than {least})" if fits else ""))
        of = (f" of up to K̄ = {n_epochs} epochs (the longest plan the instance allows)" if up_to
              else f" of {n_epochs} epochs" if n_epochs else "")
        raise error(f"{field}: {n} trajectories{of} need {need / 2**30:.3g} GiB"
                    + (" with the per-epoch bands" if trajectory else "")
                    + f" (budget {budget / 2**30:g} GiB); use at most {fits} samples")


def chunked_bands(simulate: Callable[[int, np.random.Generator], np.ndarray], n: int, width: int, block: int,
                  states: list[dict], bit_generator, chunk: int) -> tuple[np.ndarray, np.ndarray]:
    """The per-epoch 1st/99th percentiles of ℓ(k) over ``n`` trajectories, ``chunk`` epoch columns at a time.

    Parameters
    ----------
    simulate : callable
        ``simulate(size, rng)``: ``size`` trajectories of ``width`` values drawn from ``rng``
        (:func:`~deplbench.formulations.evaluation.evaluate.simulate_trajectories` on the plan).
    n, width, block : int
        Trajectories, values per trajectory (K + 1) and trajectories per block.
    states : list of dict
        ``bit_generator.state`` before each block of the first pass: block ``i`` holds
        trajectories ``i·block`` to ``min(n, (i + 1)·block)``.
    bit_generator : type
        The stream's bit generator class (``PCG64``).
    chunk : int
        Epoch columns per chunk (:func:`band_chunk`).

    Returns
    -------
    p01, p99 : ndarray
        The same numbers, bit for bit, as ``np.percentile`` over every trajectory kept whole:
        a re-simulated block draws the same values in the same order (same state, same size),
        and a percentile along the samples axis is taken column by column.

    Notes
    -----
    Memory: one block and one ``n`` × ``chunk`` chunk at a time. Cost: every block simulated
    once more per chunk, ⌈``width`` / ``chunk``⌉ ≤ :data:`MAX_BAND_CHUNKS` times.
    """
    p01, p99 = np.empty(width), np.empty(width)
    gen = np.random.Generator(bit_generator())
    for e0 in range(0, width, chunk):
        e1 = min(width, e0 + chunk)
        cols = np.empty((n, e1 - e0))
        for i, state in enumerate(states):
            start = i * block
            size = min(block, n - start)
            gen.bit_generator.state = state
            traj = simulate(size, gen)
            cols[start:start + size] = traj[:, e0:e1]
            del traj                      # one block at a time
        p01[e0:e1], p99[e0:e1] = np.percentile(cols, [1, 99], axis=0)
        del cols                          # one chunk at a time
    return p01, p99


__all__ = ["MEMORY_BUDGET", "MAX_BAND_CHUNKS", "EPOCH_BYTES", "epoch_bytes", "BYTES_PER_VALUE", "BLOCK_BYTES_PER_VALUE",
           "LAYOUT_BYTES_PER_VALUE",
           "budget_bytes", "block_size", "bands_kept",
           "min_chunk", "band_chunk", "evaluation_bytes", "max_samples", "check_evaluation_memory",
           "chunked_bands"]
