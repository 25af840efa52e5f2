"""The entry points :func:`solve_milp` and :func:`run_milp`: data, bounds, formulation, backend, cut loop.

One job: run the stages in order under one time and memory budget and turn
every outcome into a :class:`~deplbench.formulations.model.result.SolveResult`.
The options arrive as one :class:`~.settings.MilpSettings`, checked once
before (by :func:`solve_milp`'s keyword front or by
:func:`deplbench.solvers.run.solve`), and are read from it, never re-parsed.
What each stage computes and guarantees is said in its module (the package
docstring gives the overview).

Time and memory (docs/DESIGN.md, "what every solver promises")
--------------------------------------------------------------
``time_limit`` covers everything: scenario drawing, bounds, the build and
the solves. It is the one :func:`deplbench.limits.deadline` the caller
opened; every long loop of the build checks it and stops with
status ``time_limit`` (:class:`~.options.BuildTimeout`). Memory is estimated
before anything large is allocated — the scenario arrays
(:func:`~.data.data_bytes`) and each formulation's rows, columns and
non-zeros (:meth:`~.catalog.BuildContext.check_size`) — and a build above
``memory_limit`` is refused with status ``error`` and a message saying how
much it would need.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time

import numpy as np

from deplbench import limits
from deplbench.errors import SolverError
from deplbench.formulations.general.settings import GeneralSettings
from deplbench.formulations.milp import catalog
from deplbench.formulations.milp.bounds import structural_bounds
from deplbench.formulations.milp.cutloop import cut_loop, cut_loop_result
from deplbench.formulations.milp.data import Data, data_bytes, draw_seconds
from deplbench.formulations.milp.options import (
    MAX_DATASETS,
    MEMORY_LIMIT_GIB,
    BuildTimeout,
    Verdict,
)
from deplbench.formulations.milp.peers import solver_version
from deplbench.formulations.milp.routes import make_backend
from deplbench.formulations.milp.settings import MilpSettings
from deplbench.formulations.model.result import SolveResult
from deplbench.formulations.model.scenarios import allowed_violations, thin_sample_note


def _options_or_settings(front):
    """Refuse a call of ``front`` (:func:`solve_milp`) that passes ``settings`` and any option
    keyword besides it: which keywords were passed decides, not whether a value differs from its
    default (an explicit ``time_limit=60.0`` beside ``settings`` would otherwise be dropped)."""

    @functools.wraps(front)
    def checked(instance, *args, **kwargs):
        if kwargs.get("settings") is not None:
            given = [name for name in _DEFAULTS if name in kwargs] or (["the positional options"] if args else [])
            if given:
                raise SolverError(f"{given[0]}: give solve_milp's options either as a MilpSettings or as "
                                  "keywords, not both")
        return front(instance, *args, **kwargs)

    return checked


@_options_or_settings
def solve_milp(instance, scenarios: int = 1000, seed: int = 0, time_limit: float | None = 60.0,
               gap: float = 1e-4, threads: int = 1, formulation: str = "fast",
               write_lp: str | None = None, backend: str = "highs", verbose: bool = False,
               node_limit: int | None = None, memory_limit: float = MEMORY_LIMIT_GIB,
               solver: str = "highs", heuristic_time: float | None = None,
               general_settings: str | dict | GeneralSettings | None = None, *,
               settings: MilpSettings | None = None) -> SolveResult:
    """Solve the SAA of problem (2)–(6) exactly (see the package docstring).

    The keywords are a front: they are checked once into a
    :class:`~.settings.MilpSettings`, which is what the solve reads; a caller
    holding one passes it as ``settings`` (then no other option may be
    passed, not even at its default value). The whole solve runs inside one
    :func:`deplbench.limits.deadline` of ``time_limit`` seconds.

    Parameters
    ----------
    instance : Instance
    scenarios : int, default 1000
        S, the in-sample scenarios of ``ScenarioSampler(instance, seed)``.
    seed : int, default 0
        Seed of the scenarios (and of HiGHS's random choices).
    time_limit : float or None, default 60
        Wall-clock seconds for everything (scenario drawing, bounds, build,
        solves); None for no limit (with ``node_limit``, or on instances
        known to be tiny: runs that must not depend on the machine's speed).
    gap : float, default 1e-4
        Relative gap (UB − LB)/UB at which the plan is declared optimal.
    threads : int, default 1
        HiGHS threads.
    formulation : str, default "fast"
        ``"fast"`` picks by structure (counts, enumeration, flow; see
        :mod:`.catalog`); any registered name forces that formulation.
    write_lp : str, optional
        Write the first master model to this file (``.lp`` or ``.mps``).
    backend : {"highs", "pyomo"}
        How a matrix formulation reaches HiGHS: matrices straight to highspy,
        or the same matrices as a Pyomo model through ``appsi_highs``. The
        naive formulation is always a Pyomo model.
    verbose : bool
        Show the HiGHS log (on stderr; stdout stays clean).
    node_limit : int, optional
        Branch-and-bound nodes allowed over all master solves: a limit that,
        unlike ``time_limit``, does not depend on the machine's speed.
    memory_limit : float, default 2
        GiB the scenario arrays and the model may take (estimated before
        building).
    solver : str, default "highs"
        Which MILP solver the cut loop drives: ``"highs"``, ``"scip"``
        (pyscipopt, the ``[peers]`` extra; matrix formulations) or
        ``"pyomo:NAME"``, any Pyomo ``SolverFactory`` solver deplbench knows
        the options of (:mod:`.peers`: ``pyomo:cbc``, ``pyomo:gurobi``,
        ``pyomo:appsi_highs``, ...). Every one runs the same cut loop, so the
        same exactness contract; ``diagnostics["solver"]`` and
        ``["solver_version"]`` record what ran.
    heuristic_time : float, optional
        Seconds the block heuristic (:func:`.bounds.block_heuristic`) may
        spend seeding the incumbent; 0 turns it off. Default: min(3, a tenth
        of ``time_limit``), unlimited without a time limit (then the whole
        solve is deterministic). The incumbent only prunes: exactness never
        depends on it, but with a finite budget the incumbent, and so which
        plan within ``gap`` is returned, can depend on the machine's speed.
        Many short solves of one instance (the certified bracket's SAA
        replications) gain from a small value (docs/performance.md, "Measurements
        behind design choices"). The ``general`` formulation has no such
        heuristic and ignores it.
    general_settings : str, mapping or GeneralSettings, optional
        Settings of the ``general`` formulation
        (``deplbench.formulations.general.GeneralSettings``: switches, tuning constants,
        work budgets), as ``"NAME=VALUE,NAME=VALUE"`` or a mapping; validated
        option by option. Other formulations ignore it.
    settings : MilpSettings, optional
        All of the options above at once, already checked.

    Returns
    -------
    SolveResult
        ``status`` is ``optimal`` (gap met), ``time_limit`` (with the best plan
        found, or none, and the bound), ``feasible`` (a plan whose optimality
        the cut loop could not prove for a reason other than time, e.g. the
        node limit, said in ``message``), ``infeasible`` (``message`` says
        why, and that no plan on the S scenarios proves nothing about eq. (3):
        :func:`saa_infeasible`) or ``error`` (never with a cost). ``cost`` is the exact real-x
        cost of ``plan``. ``diagnostics`` holds the work counters (n_vars,
        n_cons, n_nonzeros, nodes, lp_iterations, rounds, cuts_added; exact
        and deterministic), timings (build_s, solve_s, total_s,
        build_breakdown_s), the structural bounds and the variant used.

    Raises
    ------
    SolverError
        Only for invalid options (naming the option); never for an instance.

    Notes
    -----
    The Pyomo routes cannot pass a MIP start to HiGHS; the incumbent from the
    block heuristic still bounds the search (it is kept by the cut loop and
    enters the gap), so results agree, only node counts differ.
    """
    given = {"scenarios": scenarios, "seed": seed, "time_limit": time_limit, "gap": gap, "threads": threads,
             "formulation": formulation, "write_lp": write_lp, "backend": backend, "node_limit": node_limit,
             "memory_limit": memory_limit, "solver": solver, "heuristic_time": heuristic_time,
             "general_settings": general_settings}
    if settings is None:
        settings = MilpSettings.from_params(given, strict=True)
    elif not isinstance(settings, MilpSettings):
        raise SolverError(f"settings: expected a MilpSettings, got {type(settings).__name__}")
    # the one clock of the solve (deplbench.limits): every stage below reads it
    with limits.deadline(settings.time_limit):
        return run_milp(instance, settings, verbose=verbose)


#: The defaults of :func:`solve_milp`'s keyword options (those of MilpSettings).
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(MilpSettings)}


def run_milp(instance, settings: MilpSettings, verbose: bool = False) -> SolveResult:
    """Solve with options checked once (:class:`~.settings.MilpSettings`) within
    ``settings.time_limit``.

    The deadline of ``settings.time_limit`` is opened here, so a direct call
    is bounded too; inside a caller's :func:`deplbench.limits.deadline`
    (:func:`solve_milp`, :func:`deplbench.solvers.run.solve`) the earlier
    deadline is kept, so the solve still has one clock.

    Returns
    -------
    SolveResult
        As :func:`solve_milp`. Never raises for an instance.
    """
    with limits.deadline(settings.time_limit):
        res = _run_milp(instance, settings, verbose)
    return saa_infeasible(instance, settings.scenarios, res)


def saa_infeasible(instance, scenarios: int, res: SolveResult) -> SolveResult:
    """``res`` (in place) with an ``infeasible`` message that says what it proves.

    The MILP decides the SAA problem: no plan meets the quantile on its S
    in-sample scenarios. That is a proof about those scenarios only: the
    chance constraint (3) may still hold for some plan (DepL paper eq. (3);
    docs/DESIGN.md, "Result record"). It is a proof about (3) itself where
    every law is a point mass (every scenario is the one trajectory) or where
    no epoch fits Tmax at all (``diagnostics["infeasibility"] == "instance"``).
    ``diagnostics["infeasibility"]`` records which.
    """
    if res.status != "infeasible":
        return res
    if instance.is_deterministic or res.diagnostics.get("infeasibility") == "instance":
        res.diagnostics["infeasibility"] = "instance"
        return res
    res.diagnostics["infeasibility"] = "saa"
    res.message = (f"no plan meets the quantile constraint on these {scenarios} scenarios (the SAA problem); "
                   f"this does not prove eq. (3) infeasible ({res.message})")
    return res


def _run_milp(instance, settings: MilpSettings, verbose: bool) -> SolveResult:
    """:func:`run_milp`'s body, inside its deadline."""
    s = settings
    params = s.record()
    t0 = time.perf_counter()
    diag: dict = {"formulation": s.formulation, "solver": s.solver,
                  "solver_version": solver_version(s.solver),
                  "exactness": "real-x cost via exact λ cuts of the convex F(N); plan costed with allocate()"}
    memory_bytes = s.memory_limit * 2**30
    if s.formulation == "general" or (s.formulation == "fast" and _fast_uses_general(instance, s.scenarios,
                                                                                        s.write_lp, s.solver)):
        return _solve_general(instance, s, params, diag, verbose, t0)
    if instance.n_datasets > MAX_DATASETS:
        return cut_loop_result("error", f"datasets: {instance.n_datasets} datasets exceed the exact MILP's limit of "
                       f"{MAX_DATASETS} (each cluster's dataset subset is enumerated)", params=params, diag=diag)
    too_large = _scenario_message(instance, s.scenarios, s.memory_limit)
    if too_large:
        return cut_loop_result("error", too_large, params=params, diag=diag)
    try:
        res = _solve_stages(instance, s, params, verbose, memory_bytes, diag, t0)
    except BuildTimeout as exc:
        diag["build_s"] = time.perf_counter() - t0
        res = cut_loop_result("time_limit", f"time limit reached while building the MILP ({exc})",
                      params=params, diag=diag)
    except catalog.ModelTooLarge as exc:
        diag["build_s"] = time.perf_counter() - t0
        res = cut_loop_result("error", str(exc), params=params, diag=diag)
    except MemoryError:
        res = cut_loop_result("error", f"out of memory building the MILP (S = {s.scenarios}, K̄ = "
                              f"{instance.horizon}); use fewer scenarios", params=params, diag=diag)
    res.diagnostics.setdefault("total_s", time.perf_counter() - t0)
    return res


#: How the refusal of the in-sample scenario arrays begins (:func:`_scenario_message`): a caller that
#: runs many SAA solves (``milp-certified``) recognises it by this text.
SCENARIO_MEMORY_REFUSAL = "the in-sample scenarios would need about"


def _scenario_message(instance, scenarios: int, memory_limit: float) -> str:
    """Why the in-sample scenario arrays exceed ``memory_limit`` GiB ("" when they fit)."""
    need = data_bytes(instance, scenarios)
    if need <= memory_limit * 2**30:
        return ""
    return (f"{SCENARIO_MEMORY_REFUSAL} {limits.gib_text(need / 2**30)} GiB (S = {scenarios} × K̄ = "
            f"{instance.horizon} × {instance.n_models + len(instance.switch_pairs)} random terms) > "
            f"memory_limit {limits.gib_text(memory_limit)} GiB; use fewer scenarios or a smaller horizon")


def scenario_memory_problem(instance, scenarios: int, memory_limit: float = MEMORY_LIMIT_GIB) -> str:
    """Why a default MILP solve (formulation ``fast``, HiGHS) of ``instance`` with
    S = ``scenarios`` would end with status ``error`` for its memory estimate
    ("" when it would not): the message :func:`run_milp` gives, known before
    any work. A front end that runs many such solves (``deplbench certify``)
    refuses the setting up front with it instead of running them all to that
    error. Nothing is estimated where ``fast`` runs the general block search
    (its own budget) or the instance has too many datasets (another error).
    """
    if instance.n_datasets > MAX_DATASETS or _fast_uses_general(instance, scenarios, None, "highs"):
        return ""
    return _scenario_message(instance, scenarios, memory_limit)


def _fast_uses_general(instance, scenarios, write_lp, solver) -> bool:
    """Whether ``fast`` dispatches to the general block branch-and-bound (.general).

    By structure (:func:`.catalog.fast_prefers_general`): beyond MAX_DATASETS
    always (no matrix model applies); on a cyclic switch graph or with
    several datasets only where a matrix model would not serve the call
    better — a requested LP file or another solver (SCIP, Pyomo peers) needs
    the matrix chain, and general's bound tables must fit its memory budget.
    """
    if not catalog.fast_prefers_general(instance, MAX_DATASETS)[0]:
        return False
    if instance.n_datasets > MAX_DATASETS:
        return True
    from deplbench.formulations.general import general_fits

    return write_lp is None and solver == "highs" and general_fits(instance, scenarios)


def _solve_general(instance, settings: MilpSettings, params, diag, verbose, t0) -> SolveResult:
    """Dispatch to the direct ``general`` solver (:mod:`.general`) with the same settings."""
    from deplbench.formulations.general import general_applies, run_general

    ok, why = general_applies(instance)
    if not ok:
        return cut_loop_result("error", f"formulation: 'general' does not apply: {why}", params=params, diag=diag)
    if settings.solver != "highs":
        return cut_loop_result("error", f"solver: {settings.solver!r} cannot run the 'general' formulation "
                       "(a branch-and-bound of its own, not a matrix model)", params=params, diag=diag)
    res = run_general(instance, settings.for_general(), verbose=verbose)
    res.params = {**params, **res.params, "formulation": settings.formulation}
    res.diagnostics = {**diag, **res.diagnostics, "variant": "general"}
    res.diagnostics.setdefault("total_s", time.perf_counter() - t0)
    return res


def _solve_stages(instance, settings: MilpSettings, params, verbose, memory_bytes, diag, t0) -> SolveResult:
    """Data → bounds → formulation (catalog) → backend → cut loop, within the
    :mod:`deplbench.limits` deadline the caller opened."""
    s = settings
    scenarios, seed, time_limit, write_lp = s.scenarios, s.seed, s.time_limit, s.write_lp
    left = limits.time_left()
    if left <= 0:       # spent before the build (solve() copies and preprocesses the instance inside it)
        raise BuildTimeout("no time was left when the build began")
    if math.isfinite(left):
        est = draw_seconds(instance, scenarios)
        if est > left:
            raise BuildTimeout(f"drawing the S × K̄ = {scenarios} × {instance.horizon} scenarios would take "
                               f"about {est:.0f} s here, more than the {max(left, 0):.1f} s left")
    try:
        data = Data(instance, scenarios, seed, checked=True)
    except limits.TimeLimitReached as exc:      # the estimate fitted, the draws (or classes) did not
        where = str(exc).partition("(")[2].rpartition(")")[0] or "drawing the scenarios"
        raise BuildTimeout(where) from None
    diag.update(scenarios=data.S_nominal, deterministic=data.deterministic,
                allowed_violations=allowed_violations(instance.omega, data.S_nominal),
                data_classes=data.Sig, unusable_configurations=int(np.count_nonzero(~data.usable)),
                dominated_clusters=int(np.count_nonzero(data.dominated)))
    t_data = time.perf_counter()
    if limits.expired():
        raise BuildTimeout("drawing the scenarios")
    rows, why = catalog.candidates(s.formulation, data)
    if not rows:
        return cut_loop_result("error", why, params=params, diag=diag)
    # The incumbent heuristic runs when the first formulation to try wants it.
    # Badly scaled costs (e.g. a unit cost of 1e300) need an incumbent too:
    # it lets the dear configurations be pruned exactly. Without a time limit
    # the heuristic runs to its end, so the whole solve (incumbent, nodes,
    # iterations) is deterministic; with one it gets a tenth (at most 3 s).
    want = rows[0].incumbent or data.badly_scaled()
    budget = (math.inf if time_limit is None else min(3.0, 0.1 * float(time_limit)))
    if s.heuristic_time is not None:
        budget = s.heuristic_time
    budget = budget if want else 0.0
    bounds = structural_bounds(data, tight=budget > 0, bigm=False, heuristic_budget=budget)
    if bounds.infeasible:
        diag["build_s"] = time.perf_counter() - t0
        # no epoch fits Tmax: no plan at all, whatever the scenarios (eqs. (4)-(5))
        diag["infeasibility"] = "saa" if math.isfinite(data.fastest) else "instance"
        return cut_loop_result("infeasible", bounds.infeasible, params=params, diag=diag)
    if bounds.incumbent is not None:
        diag["pruned_dear_configurations"] = data.prune_dearer_than(bounds.incumbent.cost)
    diag.update(k_min=bounds.k_min, k_max=bounds.k_max,
                heuristic_cost=bounds.incumbent.cost if bounds.incumbent is not None else None)
    ctx = catalog.BuildContext(data, bounds, memory_bytes, diag=diag,
                               timing={"scenarios": t_data - t0, **bounds.seconds}, options=params)
    model = None
    for spec in rows:
        out = spec.build(ctx)
        if out is None:
            continue
        if isinstance(out, Verdict):
            diag["build_s"] = time.perf_counter() - t0
            return cut_loop_result(out.status, out.message, params=params, diag=diag)
        model = out
        break
    if model is None:
        return cut_loop_result("error", "no formulation could be built (every candidate declined)",
                       params=params, diag=diag)
    diag["variant"] = spec.name
    t1 = time.perf_counter()
    if s.solver == "scip" and getattr(model, "mm", None) is None:
        return cut_loop_result("error", f"solver: 'scip' needs a matrix formulation, and {spec.name!r} is not one",
                       params=params, diag=diag)
    be, route = make_backend(model, s.backend, s.threads, seed, verbose, s.solver)
    diag.update(backend=route, n_vars=int(be.ncol), n_cons=int(be.n_rows), n_nonzeros=int(be.n_nonzeros))
    ctx.timing["solver_model"] = time.perf_counter() - t1
    if write_lp:
        try:
            be.write(write_lp)
        except Exception as exc:  # noqa: BLE001 - an unwritable file is the user's input
            raise SolverError(f"write_lp: cannot write {write_lp!r} ({exc})") from None
    diag["build_s"] = time.perf_counter() - t0
    diag["build_breakdown_s"] = {k: round(v, 4) for k, v in ctx.timing.items()}
    best = bounds.incumbent if (spec.incumbent or want) else None
    res = cut_loop(data, model, be, best, s.gap, params, diag, t0, node_limit=s.node_limit)
    note = getattr(be, "bound_note", None)        # a solver peer that reports no dual bound (.pyomo_peer)
    if note and res.status != "optimal":
        res.message = f"{res.message}; {note}" if res.message else note
    thin = "" if data.deterministic else thin_sample_note(instance.omega, data.S_nominal)
    if thin:                                      # say when "optimal" is optimal for a too-small sample only
        res.diagnostics["thin_sample"] = thin
        res.message = f"{res.message}; {thin}" if res.message else thin
    return res


__all__ = ["SCENARIO_MEMORY_REFUSAL", "run_milp", "scenario_memory_problem", "solve_milp"]
