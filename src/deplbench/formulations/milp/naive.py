"""The naive (textbook) formulation, written in Pyomo: the benchmark's reference model.

What is solved
--------------
The same SAA of problem (2)–(6) as every formulation, written the way a
textbook would: per-epoch binaries for activity a(k), model m(k), cluster
y(k,n), z(d,n) and data classes q(n,σ); the products m(k)·y(k,n)·q(n,σ) and
m(k−1)·m(k) linearised with the standard inequalities; eq. (6) per epoch as
printed or intended; one row per scenario with crude big-M values (ℓ(0) plus
every possible loss increase minus ℓmax); no incumbent, no bounds. The cost
epigraph θ ≥ F(N) uses the λ cuts of the package docstring, so it has the
same exactness contract; tests check that all formulations agree, and that
naive equals brute force at any gap.

It is always solved through Pyomo (``appsi_highs``), which cannot pass a MIP
start, so :meth:`NaiveModel.solution_from_choice` returns None: the cut loop
keeps the best plan itself.

References
----------
DepL paper eqs. (2)–(8); docs/DESIGN.md ("Model semantics").
"""

from __future__ import annotations

import time

import numpy as np

from deplbench.formulations.milp.data import Choice, Data


class NaiveModel:
    """Per-epoch binaries a(k), m(k), y(k,n), data classes q(n,σ), z(d,n),
    product variables linearised with the standard inequalities, crude big-M.
    """

    def __init__(self, data: Data, lam_ref: float):
        import pyomo.environ as pe

        d = self.data = data
        self.lam_ref = lam_ref
        K, M, Nn, Sig, P, S = d.K, d.M, d.Nn, d.Sig, d.P, d.S
        self.K = K
        m = self.model = self.pyomo_model = pe.ConcreteModel(name="deplbench_milp_naive")
        Ks, Ms, Ns, Ss = range(K), range(M), range(Nn), range(Sig)
        m.a = pe.Var(Ks, domain=pe.Binary)                      # epoch k is active (k < K)
        m.m = pe.Var(Ks, Ms, domain=pe.Binary)                  # m(k)
        m.y = pe.Var(Ks, Ns, domain=pe.Binary)                  # y(k, n)
        m.q = pe.Var(Ns, Ss, domain=pe.Binary)                  # cluster n holds data class σ
        m.z = pe.Var(range(d.inst.n_datasets), Ns, domain=pe.Binary)   # z(d, n)
        m.w = pe.Var(Ks, Ms, Ns, Ss, bounds=(0, 1))             # m(k)·y(k,n)·q(n,σ)
        m.sw = pe.Var(range(1, K), range(P), bounds=(0, 1))     # m(k−1,i)·m(k,j)
        # Σ_k w; unusable configurations (one epoch exceeds Tmax) fixed to 0
        m.cnt = pe.Var(Ms, Ns, Ss, bounds=lambda _, i, n, s: (0, K if d.usable[i, n, s] else 0))
        m.theta = pe.Var(bounds=(0, None))
        m.v = pe.Var(range(S), domain=pe.Binary)
        per_epoch = d.inst.transfer_cost_mode == "per_epoch"
        beta_dn = d.inst.transfer_matrix
        if per_epoch:
            m.tr = pe.Var(Ks, range(d.inst.n_datasets), Ns, bounds=(0, 1))
        c = m.c = pe.ConstraintList()
        for k in Ks:
            if k:
                c.add(m.a[k] <= m.a[k - 1])
            c.add(sum(m.m[k, i] for i in Ms) == m.a[k])
            c.add(sum(m.y[k, n] for n in Ns) == m.a[k])
            for i in Ms:
                for n in Ns:
                    for s in Ss:
                        c.add(m.w[k, i, n, s] <= m.m[k, i])
                        c.add(m.w[k, i, n, s] <= m.y[k, n])
                        c.add(m.w[k, i, n, s] <= m.q[n, s])
                        c.add(m.w[k, i, n, s] >= m.m[k, i] + m.y[k, n] + m.q[n, s] - 2)
            for n in Ns:
                c.add(m.y[k, n] <= sum(m.q[n, s] for s in Ss))   # a training cluster holds data
        allowed = d.inst.allowed
        for k in range(1, K):
            for i in Ms:
                for j in Ms:
                    if i != j and not allowed[i, j]:
                        c.add(m.m[k - 1, i] + m.m[k, j] <= 1)
            for p, (i, j) in enumerate(d.pairs):
                c.add(m.sw[k, p] >= m.m[k - 1, i] + m.m[k, j] - 1)
                c.add(m.sw[k, p] <= m.m[k - 1, i])
                c.add(m.sw[k, p] <= m.m[k, j])
        for n in Ns:
            c.add(sum(m.q[n, s] for s in Ss) <= 1)
            for dd in range(d.inst.n_datasets):
                c.add(m.z[dd, n] == sum(m.q[n, s] for s in Ss if dd in d.classes[s]))
                if d.inst.data_rule == "printed":
                    for k in Ks:   # eq. (6) as printed: z(d,n) ≤ y(k,n) for every active k
                        c.add(m.z[dd, n] <= m.y[k, n] + 1 - m.a[k])
                else:          # intended: a cluster holding data trains at least once
                    c.add(m.z[dd, n] <= sum(m.y[k, n] for k in Ks))
        for i in Ms:
            for n in Ns:
                for s in Ss:
                    c.add(m.cnt[i, n, s] == sum(m.w[k, i, n, s] for k in Ks))
        c.add(sum(float(d.tmin_row[i, n, s]) * m.cnt[i, n, s] for i in Ms for n in Ns for s in Ss) <= d.T)
        if per_epoch:
            for k in Ks:
                for dd in range(d.inst.n_datasets):
                    for n in Ns:
                        if beta_dn[dd, n] > 0:
                            c.add(m.tr[k, dd, n] >= m.z[dd, n] + m.a[k] - 1)
            transfer = sum(float(beta_dn[dd, n]) * m.tr[k, dd, n]
                           for k in Ks for dd in range(d.inst.n_datasets) for n in Ns if beta_dn[dd, n] > 0)
        else:
            transfer = sum(float(beta_dn[dd, n]) * m.z[dd, n]
                           for dd in range(d.inst.n_datasets) for n in Ns if beta_dn[dd, n] > 0)
        m.obj = pe.Objective(expr=m.theta + transfer, sense=pe.minimize)
        # crude big-M: ℓ(0) + every loss increase the scenario could ever see − ℓmax
        amt = d.a[:, :, :, None] * d.gam[None, None, None, :]
        rise = np.maximum(0.0, (-amt).max(axis=(2, 3))).sum(axis=1)
        jump = np.maximum(0.0, d.J[:, 1:, :].max(axis=2)).sum(axis=1) if P else np.zeros(S)
        self.bigm = d.l0 + rise + jump - d.lmax
        for s in range(S):
            run = sum(-float(d.gam[sg] * d.a[s, k, i]) * m.w[k, i, n, sg]
                      for k in Ks for i in Ms for n in Ns for sg in Ss)
            sw = sum(float(d.J[s, k, p]) * m.sw[k, p] for k in range(1, K) for p in range(P))
            c.add(d.l0 + run + sw <= d.lmax + float(self.bigm[s]) * m.v[s])
        c.add(sum(m.v[s] for s in range(S)) <= d.p)
        # column order for cuts and solutions
        self.xvars = list(m.component_data_objects(pe.Var, descend_into=True))
        pos = {id(v): i for i, v in enumerate(self.xvars)}
        self.cnt_idx = np.array([pos[id(m.cnt[i, n, s])] for i in Ms for n in Ns for s in Ss])
        self.theta_idx = pos[id(m.theta)]
        self.m_idx = np.array([[pos[id(m.m[k, i])] for i in Ms] for k in Ks])
        self.y_idx = np.array([[pos[id(m.y[k, n])] for n in Ns] for k in Ks])
        self.q_idx = np.array([[pos[id(m.q[n, s])] for s in Ss] for n in Ns])
        self.extra_lams: list[float] = []
        for lam in d.cut_grid(lam_ref):
            self._add_cut_constraint(lam)

    def _add_cut_constraint(self, lam):
        m = self.model
        g = self.data.g(lam)
        d = self.data
        m.c.add(m.theta >= sum(float(g[i, n, s]) * m.cnt[i, n, s]
                               for i in range(d.M) for n in range(d.Nn) for s in range(d.Sig)) - lam * d.T)

    @property
    def theta(self) -> int:
        return self.theta_idx

    def cut_row(self, lam: float):
        g = self.data.g(lam).ravel()
        return (np.concatenate([[self.theta_idx], self.cnt_idx]), np.concatenate([[1.0], -g]),
                -lam * self.data.T)

    def choice_from_solution(self, x: np.ndarray) -> Choice | None:
        d = self.data
        mk = np.rint(x[self.m_idx]).astype(int)
        yk = np.rint(x[self.y_idx]).astype(int)
        active = mk.sum(axis=1) > 0
        n_ep = int(active.sum())
        if n_ep == 0 or not np.all(active[:n_ep]):
            return None
        models = mk[:n_ep].argmax(axis=1)
        clusters = yk[:n_ep].argmax(axis=1)
        q = np.rint(x[self.q_idx]).astype(int)
        held = {int(n): int(q[n].argmax()) for n in range(d.Nn) if q[n].sum() > 0}
        if any(int(n) not in held for n in clusters):
            return None
        classes = np.array([held[int(n)] for n in clusters])
        return d.evaluate(models, classes, clusters, held)

    def solution_from_choice(self, ch: Choice) -> None:
        """No warm start: the Pyomo route cannot pass one (the cut loop keeps
        the incumbent and its cost enters the gap instead)."""
        return None


def naive_size(data: Data) -> tuple[int, int, int]:
    """(rows, columns, non-zeros) of the naive model, estimated before the build."""
    K, M, Nn, Sig, S, P = data.K, data.M, data.Nn, data.Sig, data.S, data.P
    cols = K * (1 + M + Nn + M * Nn * Sig) + (K - 1) * P + M * Nn * Sig + S + 1
    rows = K * (3 + 4 * M * Nn * Sig + Nn) + (K - 1) * (M * M + 3 * P) + S + 1 + data.n_cuts
    nnz = S * (K * M * Nn * Sig + (K - 1) * P + 1) + K * 13 * M * Nn * Sig + data.n_cuts * (M * Nn * Sig + 1)
    return int(rows), int(cols), int(nnz)


def build_naive(ctx):
    """Catalog entry: :class:`NaiveModel` (Pyomo: about 1 kB per non-zero)."""
    data = ctx.data
    ctx.check_size("naive", *naive_size(data), bytes_per_nonzero=1000)
    t1 = time.perf_counter()
    model = NaiveModel(data, data.lam_reference(max(ctx.bounds.k_min, 1)))
    ctx.timing["matrix"] = time.perf_counter() - t1
    ctx.diag.update(bigm_mean=float(model.bigm.mean()), bigm_max=float(model.bigm.max()))
    return model


__all__ = ["NaiveModel", "naive_size", "build_naive"]
