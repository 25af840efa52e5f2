"""The curated instance set of the library (which instances, at which sizes).

One job: name every library instance and say how it is generated, at which
targets, with how many in-sample scenarios S and with which exact
formulation its MILP is written. Changing this list changes the library, so
:data:`LIBRARY_VERSION` must be raised with it (the version is written into
the library's manifest and checked by ``deplbench library check``).

The entries cover the paper's evaluation (DepL Sec. VI-B: AlexNet and
MobileNet at several ℓmax), Pisinger's knapsack classes through DepL
Property 1, random scaling instances, heterogeneous datasets (Sec. IV-A),
and the general problem (cyclic switches, |D| = 10; docs/DESIGN.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from deplbench.errors import SolverError

#: Raised whenever the entries below (or how they are written) change (2: full SAA models
#: as MINLP .nl/.gms and PWL .mps.gz replace the first-master MPS files).
LIBRARY_VERSION = "2"

#: The library sizes ``deplbench library build --size`` accepts.
SIZES = ("small", "full")


@dataclass(frozen=True)
class LibraryEntry:
    """One library instance.

    Attributes
    ----------
    name : str
        File stem of the instance JSON and MPS, and the name in the .solu.
    family : str
        Generator family (``deplbench.instances.generators.generate``).
    params : dict
        Generator parameters (``seed`` included).
    targets : dict
        Changes applied after generation (e.g. ``{"loss_max": 7.0}``).
    scenarios : int
        S, the in-sample scenarios of the SAA (seed 0).
    formulation : str or None
        The exact MILP formulation written to MPS (``"fast"`` picks by
        structure); None when no MILP formulation applies (|D| above the
        MILP's limit): the library then holds the instance JSON only.
    size : str
        ``"small"`` (in every library) or ``"full"`` (only with ``--size full``).
    group : str
        What the entry represents (the table groups by it).
    """

    name: str
    family: str
    params: dict = field(default_factory=dict)
    targets: dict = field(default_factory=dict)
    scenarios: int = 200
    formulation: str | None = "fast"
    size: str = "small"
    group: str = ""


def _realistic(family: str, loss_max: float, size: str, S: int = 1000) -> LibraryEntry:
    tag = f"{loss_max:g}".replace(".", "p")
    return LibraryEntry(f"{family}-l{tag}", "realistic", {"family": family, "seed": 0},
                        {"loss_max": loss_max}, S, "fast", size, f"realistic-{family}")


def _knapsack(item_class: str, n_items: int, size: str) -> LibraryEntry:
    return LibraryEntry(f"knapsack-{item_class}-n{n_items}", "knapsack",
                        {"item_class": item_class, "n_items": n_items, "seed": 0}, {}, 1, "fast",
                        size, "knapsack")


ENTRIES: tuple[LibraryEntry, ...] = (
    # The paper's realistic scenarios (DepL Sec. VI-B, Table I), ℓmax swept as in Fig. 4.
    *(_realistic("alexnet", lm, "small") for lm in (7.0, 9.0, 13.0)),
    *(_realistic("alexnet", lm, "full") for lm in (5.0, 6.0, 11.0)),
    *(_realistic("mobilenet", lm, "small") for lm in (7.0, 11.0)),
    *(_realistic("mobilenet", lm, "full") for lm in (5.0, 9.0, 13.0)),
    # Pisinger's classes through DepL Property 1 (deterministic: S = 1 suffices).
    *(_knapsack(c, 10, "small") for c in ("uncorrelated", "weakly", "strongly", "subset-sum")),
    *(_knapsack(c, 20, "full") for c in ("uncorrelated", "weakly", "strongly", "inverse-strongly",
                                         "almost-strongly", "subset-sum", "uncorrelated-similar-weights")),
    # Random instances of growing size (runtime scaling).
    LibraryEntry("scaling-m3-n2-k10", "scaling", {"n_models": 3, "n_clusters": 2, "horizon": 10, "seed": 0},
                 {}, 100, "fast", "small", "scaling"),
    LibraryEntry("scaling-m4-n3-k20", "scaling", {"n_models": 4, "n_clusters": 3, "horizon": 20, "seed": 0},
                 {}, 200, "fast", "full", "scaling"),
    # Heterogeneous datasets: which data each cluster holds matters (Sec. IV-A).
    LibraryEntry("datasets-d2-n2-k8", "datasets", {"n_datasets": 2, "n_clusters": 2, "horizon": 8, "seed": 0},
                 {}, 50, "fast", "small", "datasets"),
    LibraryEntry("datasets-d3-n2-k10", "datasets", {"n_datasets": 3, "n_clusters": 2, "horizon": 10, "seed": 0},
                 {}, 100, "fast", "full", "datasets"),
    # The general problem: cyclic switch graphs (switches="any") and many datasets.
    LibraryEntry("scaling-any-m2-n2-k8", "scaling",
                 {"n_models": 2, "n_clusters": 2, "horizon": 8, "switches": "any", "seed": 0},
                 {}, 50, "flow", "small", "general"),
    LibraryEntry("scaling-any-m3-n2-k10", "scaling",
                 {"n_models": 3, "n_clusters": 2, "horizon": 10, "switches": "any", "seed": 0},
                 {}, 100, "flow", "small", "general"),
    LibraryEntry("alexnet-any-l9", "realistic", {"family": "alexnet", "switches": "any", "seed": 0},
                 {"loss_max": 9.0}, 200, "flow", "full", "general"),
    LibraryEntry("datasets-d10-n2-k50", "datasets",
                 {"n_datasets": 10, "n_clusters": 2, "horizon": 50, "seed": 0},
                 {}, 200, None, "small", "general"),
)


def entries(size: str = "small") -> list[LibraryEntry]:
    """The entries of a library of ``size`` (``"full"`` includes ``"small"``).

    Raises
    ------
    SolverError
        When ``size`` is not one of :data:`SIZES`.
    """
    if size not in SIZES:
        raise SolverError(f"size: must be one of {list(SIZES)}, got {size!r}")
    return [e for e in ENTRIES if size == "full" or e.size == "small"]


__all__ = ["LIBRARY_VERSION", "SIZES", "LibraryEntry", "ENTRIES", "entries"]
