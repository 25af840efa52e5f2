"""A small MLP on scikit-learn's digits, trained for many seeds at once, pruned structurally.

The network of the measured family (DepL Sec. VI-A run here): 64 inputs →
two hidden ReLU layers of :data:`HIDDEN` units → 10 classes. A version
pruned with factor F keeps ``round((1 − F)·HIDDEN)`` units in each hidden
layer; the units are chosen by :func:`torch.nn.utils.prune.ln_structured`
(L2 norm of each unit's incoming weights, PyTorch's own structured pruning)
and the smaller weight matrices are then built physically, so a pruned
version really costs fewer FLOPs (counted by
:class:`torch.utils.flop_counter.FlopCounterMode`).

S seeds are trained as one batched computation: every weight is stacked
along a leading seed axis and multiplied with :func:`torch.bmm`. The loss is
the sum over seeds of each seed's mean cross-entropy, so each seed's
gradient, and SGD's update of its slice, is exactly what it would be alone.
The seed drives the initialisation and the batch order (one
``torch.Generator`` per seed), so a seed's run does not depend on which
other seeds share the batch (up to floating-point summation order, see
docs/measured.md).

Needs the optional extra ``measure`` (PyTorch, scikit-learn).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn.utils import prune

#: Units in each hidden layer of the full network.
HIDDEN = 64
#: Input features (8×8 digit images) and classes.
N_IN, N_OUT = 64, 10
#: The paper's optimiser (DepL Sec. II, Fig. 2): SGD with momentum 0.9 and batch 64. Its learning
#: rate 1e-3 barely moves this network in 40 epochs (test loss 2.306 → 2.27 in 30 epochs), so ours is 1e-2.
LEARNING_RATE = 1e-2
MOMENTUM = 0.9
BATCH = 64
#: Share of the digits held out as the test set (fixed split, seed 0).
TEST_FRACTION = 1 / 3
SPLIT_SEED = 0


@dataclass(frozen=True)
class Digits:
    """The digits data as float32 tensors (pixels scaled to [0, 1])."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor


def load_data() -> Digits:
    """scikit-learn's ``load_digits`` (1,797 8×8 images, shipped with the package),
    split once, stratified, with :data:`SPLIT_SEED`."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    xtr, xte, ytr, yte = train_test_split(x / 16.0, y, test_size=TEST_FRACTION, random_state=SPLIT_SEED,
                                          stratify=y)
    t = lambda a, dt: torch.as_tensor(np.ascontiguousarray(a), dtype=dt)  # noqa: E731
    return Digits(t(xtr, torch.float32), t(ytr, torch.long), t(xte, torch.float32), t(yte, torch.long))


def width(factor: float) -> int:
    """Hidden units kept by pruning factor F (fraction of units removed)."""
    if not (0.0 <= factor < 1.0):
        raise ValueError(f"factor: must be in [0, 1), got {factor!r}")
    return max(1, int(round((1.0 - factor) * HIDDEN)))


def layer_sizes(factor: float) -> list[tuple[int, int]]:
    """(in, out) of the three linear layers of the version pruned with ``factor``."""
    h = width(factor)
    return [(N_IN, h), (h, h), (h, N_OUT)]


def parameter_count(factor: float) -> int:
    """Weights and biases of the version pruned with ``factor``."""
    return sum(i * o + o for i, o in layer_sizes(factor))


def reference_module(factor: float) -> nn.Sequential:
    """An ordinary ``nn.Sequential`` with the version's shapes (for counting)."""
    (a, b), (c, d), (e, f) = layer_sizes(factor)
    return nn.Sequential(nn.Linear(a, b), nn.ReLU(), nn.Linear(c, d), nn.ReLU(), nn.Linear(e, f))


def epoch_flops(factor: float, n_train: int) -> int:
    """FLOPs of one training epoch (forward + backward over ``n_train`` samples),
    counted by :class:`torch.utils.flop_counter.FlopCounterMode` on one sample."""
    from torch.utils.flop_counter import FlopCounterMode

    module = reference_module(factor)
    x = torch.zeros(1, N_IN)
    with FlopCounterMode(display=False) as counter:
        nn.functional.cross_entropy(module(x), torch.zeros(1, dtype=torch.long)).backward()
    return int(counter.get_total_flops()) * int(n_train)


# ------------------------------------------------------------- batched MLP
class Batch:
    """Stacked weights of S seeds' current networks (all of one version).

    ``weights[i]`` has shape (S, in, out), ``biases[i]`` (S, 1, out);
    ``generators[s]`` drives seed s's batch order.
    """

    def __init__(self, seeds: list[int], factor: float):
        self.seeds = list(seeds)
        self.generators = [torch.Generator().manual_seed(int(s)) for s in self.seeds]
        full = [self._init(N_IN, HIDDEN, 0), self._init(HIDDEN, HIDDEN, 1), self._init(HIDDEN, N_OUT, 2)]
        self.weights = [w for w, _ in full]
        self.biases = [b for _, b in full]
        self.factor = 0.0
        if factor > 0:
            self.prune_to(factor)
        self._optimiser()

    def _init(self, n_in: int, n_out: int, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        # nn.Linear's default initialisation, U(−1/√in, 1/√in) for weights and biases, per seed.
        bound = 1.0 / math.sqrt(n_in)
        w = torch.stack([(torch.rand(n_in, n_out, generator=g) * 2 - 1) * bound for g in self.generators])
        b = torch.stack([(torch.rand(1, n_out, generator=g) * 2 - 1) * bound for g in self.generators])
        return w, b

    def _optimiser(self) -> None:
        for t in self.weights + self.biases:
            t.requires_grad_(True)
        # A switch builds new, smaller tensors: the momentum buffers restart (as a fresh optimiser on a
        # pruned model would).
        self.opt = torch.optim.SGD(self.weights + self.biases, lr=LEARNING_RATE, momentum=MOMENTUM)

    @property
    def n(self) -> int:
        return len(self.seeds)

    def prune_to(self, factor: float) -> None:
        """Prune every seed's network to ``factor`` (only further pruning).

        The units kept in each hidden layer are those
        :func:`torch.nn.utils.prune.ln_structured` keeps (L2 norm of the
        unit's incoming weights, ``dim=0`` of ``nn.Linear.weight``); the
        weight matrices are then rebuilt with only those units.
        """
        if factor < self.factor:
            raise ValueError(f"factor: {factor} is below the current {self.factor}; pruned units cannot be restored")
        if factor == self.factor:
            return
        keep_units = width(factor)
        with torch.no_grad():
            w = [t.detach() for t in self.weights]
            b = [t.detach() for t in self.biases]
            k1 = _kept_units(w[0], keep_units)            # (S, h) indices into layer 1's outputs
            w0 = _take(w[0], 2, k1)
            b0 = _take(b[0], 2, k1)
            w1 = _take(w[1], 1, k1)
            k2 = _kept_units(w1, keep_units)              # layer 2 units, judged on the kept inputs
            w1 = _take(w1, 2, k2)
            b1 = _take(b[1], 2, k2)
            w2 = _take(w[2], 1, k2)
            self.weights = [w0.clone(), w1.clone(), w2.clone()]
            self.biases = [b0.clone(), b1.clone(), b[2].clone()]
        self.factor = float(factor)
        self._optimiser()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits (S, n, 10) of inputs x of shape (S, n, 64) or (n, 64)."""
        if x.dim() == 2:
            x = x.unsqueeze(0).expand(self.n, -1, -1)
        h = torch.relu(torch.baddbmm(self.biases[0], x, self.weights[0]))
        h = torch.relu(torch.baddbmm(self.biases[1], h, self.weights[1]))
        return torch.baddbmm(self.biases[2], h, self.weights[2])

    def train_epoch(self, data: Digits) -> None:
        """One epoch of minibatch SGD; each seed draws its own batch order."""
        n = data.x_train.shape[0]
        order = torch.stack([torch.randperm(n, generator=g) for g in self.generators])   # (S, n)
        for start in range(0, n, BATCH):
            idx = order[:, start:start + BATCH]
            logits = self.forward(data.x_train[idx])
            y = data.y_train[idx]
            # Sum over seeds of each seed's mean loss: seed s's gradient is its own.
            loss = nn.functional.cross_entropy(logits.reshape(-1, N_OUT), y.reshape(-1), reduction="none")
            loss = loss.view(self.n, -1).mean(dim=1).sum()
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            self.opt.step()

    def test_loss(self, data: Digits) -> np.ndarray:
        """Mean test cross-entropy of each seed's network, shape (S,)."""
        with torch.no_grad():
            logits = self.forward(data.x_test)
            y = data.y_test.unsqueeze(0).expand(self.n, -1)
            loss = nn.functional.cross_entropy(logits.reshape(-1, N_OUT), y.reshape(-1), reduction="none")
            return loss.view(self.n, -1).mean(dim=1).double().numpy()


def _kept_units(w: torch.Tensor, keep: int) -> torch.Tensor:
    """Indices (S, keep), ascending, of the units ``ln_structured`` keeps for each seed.

    ``w`` is (S, in, out); seed s's layer is ``nn.Linear(in, out)`` with
    weight ``w[s].T``, pruned with ``amount = out − keep`` along ``dim=0``.
    """
    n_in, n_out = w.shape[1], w.shape[2]
    out = []
    for s in range(w.shape[0]):
        lin = nn.Linear(n_in, n_out, bias=False)
        with torch.no_grad():
            lin.weight.copy_(w[s].T)
        prune.ln_structured(lin, "weight", amount=n_out - keep, n=2, dim=0)
        mask = lin.get_buffer("weight_mask")      # the buffer ln_structured registers (a Tensor, typed so)
        out.append(torch.nonzero(mask[:, 0], as_tuple=False).flatten())
    return torch.stack(out)


def _take(t: torch.Tensor, axis: int, idx: torch.Tensor) -> torch.Tensor:
    """Per-seed selection along ``axis`` (1 or 2) of a (S, a, b) tensor by idx (S, k)."""
    shape = list(t.shape)
    shape[axis] = idx.shape[1]
    view = idx.unsqueeze(1) if axis == 2 else idx.unsqueeze(2)
    return torch.gather(t, axis, view.expand(shape))


def train_sequence(seeds: list[int], factors: list[float], data: Digits) -> np.ndarray:
    """Train each seed along a per-epoch sequence of pruning factors.

    Parameters
    ----------
    seeds : list of int
        One run per seed, trained together.
    factors : list of float
        The factor trained in epoch k = 1..K (non-decreasing: a switch prunes further).
    data : Digits

    Returns
    -------
    numpy.ndarray
        Test losses, shape (S, K + 1): column 0 before training (the version of epoch 1
        at initialisation), column k after epoch k.
    """
    if not factors:
        raise ValueError("factors: empty model sequence")
    batch = Batch(seeds, factors[0])
    out = np.empty((len(seeds), len(factors) + 1))
    out[:, 0] = batch.test_loss(data)
    for k, f in enumerate(factors, start=1):
        batch.prune_to(f)
        batch.train_epoch(data)
        out[:, k] = batch.test_loss(data)
    return out


def configure(threads: int = 1) -> None:
    """Deterministic algorithms and a fixed thread count (docs/measured.md, reproducibility)."""
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(int(threads))
