"""The measurement protocol of DepL Sec. VI-A, run on a real network (docs/measured.md).

Two kinds of runs, each repeated over many seeds:

* **single-model runs**: one version (pruning factor F ∈ :data:`SINGLE_FACTORS`)
  for :data:`SINGLE_EPOCHS` epochs;
* **two-stage runs** (Fig. 4 centre): K1 epochs at F1, then K2 epochs at a
  further-pruned F2 > F1, F1, F2 ∈ :data:`GRID_FACTORS`, K1 ∈ :data:`GRID_K1`;
  the second stage runs for max(:data:`GRID_K2`) epochs, and each K2 of the
  grid is the first K2 epochs of it.

The test loss after every epoch is written in the long format of
``deplbench fit`` (``run,epoch,model,loss``; docs/fit.md) and a provenance
JSON records the library, dataset, architecture, hyper-parameters, seeds,
CPU and wall time. Seeds never repeat across runs, so all runs are
independent.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from deplbench.benchmarks.tasks import cpu_model

#: Model names of the versions: the full network and its pruned versions.
MODEL_NAMES = {0.0: "full", 0.25: "p25", 0.36: "p36", 0.5: "p50", 0.75: "p75", 0.9: "p90"}
#: Every version trained alone: the full model, the Fig. 4 grid factors and the paper's (Sec. VI-B).
SINGLE_FACTORS = (0.0, 0.25, 0.36, 0.5, 0.75, 0.9)
SINGLE_EPOCHS = 40
#: Fig. 4 (centre) grid: F1 < F2 from these factors ("at each stage the model is further pruned").
GRID_FACTORS = (0.25, 0.36, 0.5, 0.75)
GRID_K1 = (5, 10, 15, 20)
GRID_K2 = (5, 15, 25)
#: Seeds per single-model version and per two-stage configuration (F1, K1, F2).
SINGLE_SEEDS = 256
GRID_SEEDS = 64
#: Seeds of the fitting runs start here; the replay's held-out seeds start at REPLAY_SEED_BASE.
FIT_SEED_BASE = 0
REPLAY_SEED_BASE = 1_000_000


def model_name(factor: float) -> str:
    """``full``, ``p25``, … for a pruning factor."""
    try:
        return MODEL_NAMES[float(factor)]
    except KeyError:
        return f"p{int(round(100 * factor)):02d}"


@dataclass(frozen=True)
class RunConfig:
    """One batch of runs: a per-epoch factor sequence trained for ``seeds``."""

    kind: str                    # "single" or "two-stage"
    factors: tuple[float, ...]   # factor trained in epoch 1..K
    seeds: tuple[int, ...]
    label: dict = field(default_factory=dict)

    def run_id(self, seed: int) -> str:
        if self.kind == "single":
            return f"s-{model_name(self.factors[0])}-{seed}"
        lab = self.label
        return f"t-{model_name(lab['F1'])}-{lab['K1']}-{model_name(lab['F2'])}-{seed}"


@dataclass(frozen=True)
class Protocol:
    """Sizes of the experiment (defaults: the shipped run)."""

    single_factors: tuple[float, ...] = SINGLE_FACTORS
    single_epochs: int = SINGLE_EPOCHS
    single_seeds: int = SINGLE_SEEDS
    grid_factors: tuple[float, ...] = GRID_FACTORS
    grid_k1: tuple[int, ...] = GRID_K1
    grid_k2: tuple[int, ...] = GRID_K2
    grid_seeds: int = GRID_SEEDS
    seed_base: int = FIT_SEED_BASE

    def configs(self) -> list[RunConfig]:
        """Every batch, with disjoint consecutive seed ranges."""
        out, next_seed = [], self.seed_base

        def take(n: int) -> tuple[int, ...]:
            nonlocal next_seed
            seeds = tuple(range(next_seed, next_seed + n))
            next_seed += n
            return seeds

        for f in self.single_factors:
            out.append(RunConfig("single", (float(f),) * self.single_epochs, take(self.single_seeds),
                                 {"F": float(f)}))
        k2 = max(self.grid_k2) if self.grid_k2 else 0
        for f1 in self.grid_factors:
            for f2 in self.grid_factors:
                if f2 <= f1:
                    continue
                for k1 in self.grid_k1:
                    out.append(RunConfig("two-stage", (float(f1),) * k1 + (float(f2),) * k2, take(self.grid_seeds),
                                         {"F1": float(f1), "K1": int(k1), "F2": float(f2), "K2max": int(k2)}))
        return out


def tiny_protocol() -> Protocol:
    """A few epochs and two seeds per batch (the test of the training path)."""
    return Protocol(single_factors=(0.0, 0.5), single_epochs=4, single_seeds=2, grid_factors=(0.25, 0.5),
                    grid_k1=(2,), grid_k2=(3,), grid_seeds=2)


def run_protocol(protocol: Protocol, *, threads: int = 1, progress=None) -> tuple[str, dict]:
    """Train every batch of ``protocol``; return (CSV text, provenance dict).

    Parameters
    ----------
    protocol : Protocol
    threads : int
        PyTorch intra-op threads (results are bitwise reproducible for a
        fixed thread count on one machine; docs/measured.md).
    progress : callable, optional
        Called with a one-line message after each batch.
    """
    import sklearn
    import torch

    from deplbench.measure import network as net

    net.configure(threads)
    data = net.load_data()
    n_train = int(data.x_train.shape[0])
    start = time.perf_counter()
    buf = io.StringIO()
    buf.write("run,epoch,model,loss\n")
    batches = []
    for cfg in protocol.configs():
        t0 = time.perf_counter()
        losses = net.train_sequence(list(cfg.seeds), list(cfg.factors), data)
        names = [model_name(f) for f in cfg.factors]
        for i, seed in enumerate(cfg.seeds):
            rid = cfg.run_id(seed)
            buf.write(f"{rid},0,,{losses[i, 0]:.7g}\n")
            buf.writelines(f"{rid},{k},{names[k - 1]},{losses[i, k]:.7g}\n" for k in range(1, len(names) + 1))
        batches.append({"kind": cfg.kind, **cfg.label, "epochs": len(cfg.factors),
                        "seeds": [cfg.seeds[0], cfg.seeds[-1]], "wall_seconds": round(time.perf_counter() - t0, 3)})
        if progress:
            progress(f"{cfg.kind} {cfg.label}: {len(cfg.seeds)} seeds x {len(cfg.factors)} epochs "
                     f"in {time.perf_counter() - t0:.1f}s")
    factors = sorted({f for c in protocol.configs() for f in c.factors})
    provenance = {
        "library": {"name": "torch", "version": torch.__version__, "sklearn": sklearn.__version__,
                    "numpy": np.__version__, "deterministic_algorithms": True, "threads": int(threads)},
        "dataset": {"name": "sklearn.datasets.load_digits", "samples": int(n_train + data.x_test.shape[0]),
                    "train": n_train, "test": int(data.x_test.shape[0]), "split_seed": net.SPLIT_SEED,
                    "stratified": True, "scaling": "pixels / 16"},
        "architecture": {"kind": "MLP", "layers": f"{net.N_IN}-{net.HIDDEN}-{net.HIDDEN}-{net.N_OUT}",
                         "activation": "relu", "pruning": "torch.nn.utils.prune.ln_structured (n=2, dim=0) on "
                         "each hidden layer's units, then the smaller network is rebuilt",
                         "versions": {model_name(f): {"factor": f, "hidden": net.width(f),
                                                      "parameters": net.parameter_count(f),
                                                      "flops_per_epoch": net.epoch_flops(f, n_train)}
                                      for f in factors}},
        "hyper_parameters": {"optimizer": "SGD", "learning_rate": net.LEARNING_RATE, "momentum": net.MOMENTUM,
                             "batch": net.BATCH, "loss": "cross-entropy (test loss: mean over the test split)",
                             "momentum_at_switch": "restarted (a new optimiser on the pruned network)"},
        "protocol": {k: (list(v) if isinstance(v, tuple) else v) for k, v in protocol.__dict__.items()},
        "batches": batches,
        "seeds": {"first": protocol.seed_base, "count": sum(len(c.seeds) for c in protocol.configs())},
        "cpu": {"machine": platform.machine(), "processor": platform.processor() or cpu_model(),
                "cores": os.cpu_count(), "load_average_at_end": _loadavg()},
        "python": platform.python_version(),
        "wall_seconds": round(time.perf_counter() - start, 1),
    }
    return buf.getvalue(), provenance


def _loadavg() -> list[float] | None:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return None


def write_outputs(csv_text: str, provenance: dict, logs_path: str | os.PathLike) -> tuple[Path, Path]:
    """Write the logs (gzip when the name ends in ``.gz``, with a fixed mtime so
    equal logs give equal bytes) and ``<logs>.provenance.json`` beside them."""
    path = Path(logs_path)
    data = csv_text.encode()
    if path.suffix == ".gz":
        raw = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as fh:
            fh.write(data)
        data = raw.getvalue()
    path.write_bytes(data)
    stem = path.name[:-3] if path.suffix == ".gz" else path.name
    prov = path.with_name(stem.removesuffix(".csv") + ".provenance.json")
    prov.write_text(json.dumps(provenance, indent=2) + "\n")
    return path, prov
