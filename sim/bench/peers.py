"""Our compiled integrations against diffrax (``jax.jit``), torchdiffeq and torchode at equal accuracy, side by side in
one run.

Problems: (a) the figure-2 system (10 tokens on S^2, h = 2, P(t) modulated), 200 instances to t1 = 2 (the initial
states of ``sim.bench.solvers``, seed 100); and the searches' own systems: chunk 0 of three conjecture families (their
seeds ``chunk_seed(claim, 0)``), 200 instances each to t1 = 20.

Equal accuracy: every library is measured against one reference (``sim.solve``, Dopri5, rtol = atol = 1e-12,
the whole batch on one step size; cross-checked against SciPy's DOP853 on the first instance). For each accuracy
target (worst error over all instances <= 1e-7, and <= 7e-9) each library runs at the loosest tolerance
rtol = atol = tol of a ladder that meets it (tol = 10^-5, 10^-5.5, ... then the two rungs of 10^(1/6) between the
last miss and the first hit). Its time there is the median of ``REPEATS`` runs, the libraries taking turns, so
that the ratios come from the same minutes of this shared machine (its load average is recorded); every library
runs on one thread (on ``threads`` with ``--threads``), and the process CPU time of each run is recorded beside its
wall time (on a loaded machine the CPU time is the steadier of the two). The comparison uses run time (wall; CPU
beside it); diffrax's ``jax.jit`` compile (once per problem, the tolerance an argument) and our first call (Numba
loading its cache) are reported apart.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable

import numpy as np
from scipy.integrate import solve_ivp

from sim.solvers.compiled import solve_instances
from sim.conjectures.families import chunk_seed, get_family
from sim.field.instances import InstanceField
from sim.field.manifold import Ellipsoid
from sim.bench.peer_fields import PREPARE, Systems, available
from sim.figures.scenarios import FIG1_P1, FIG1_P2, FIG3_V, fig1_D1, fig1_D2
from sim.solvers import AdaptiveStepSize, Dopri5, SolveOptions, solve

#: Accuracy targets: worst error over all instances at t1 against the 1e-12 reference.
TARGETS = (1e-7, 7e-9)
#: Coarse ladder: tol = 10^-(5 + k/2) down to 1e-12 (torchode, its error controlled per instance, needs ~1e-12 for
#: 7e-9 on conj.value-full); then the rungs 10^(-1/6), 10^(-2/6) below the last miss.
COARSE = tuple(10.0 ** -(5 + k / 2) for k in range(15))
#: A ladder stops when STALL coarse rungs (STALL / 2 decades of tolerance) bought less than one decade of error: the
#: library is not converging to the reference (the peers that leave the sphere, at worst error ~1.8 on every rung).
STALL = 4
REPEATS = 3
SEARCH_CLAIMS = ("conj.value-full", "conj.multihead-causal", "conj.nonsymmetric-full")
SEED_A = 100


def problems(quick: bool) -> list[Systems]:
    """(a) and the search systems (fewer instances when ``quick``)."""
    count = 20 if quick else 200
    y0 = Ellipsoid().random_point_in_hemisphere(FIG3_V, np.random.default_rng(SEED_A), (count, 10, 3))
    base = np.broadcast_to(np.stack([FIG1_P1, FIG1_P2]), (count, 2, 3, 3)).copy()
    identity = np.broadcast_to(np.eye(3), (count, 2, 3, 3)).copy()
    modulation = tuple(np.stack([getattr(m, name) for m in (fig1_D1, fig1_D2)])
                       for name in ("amplitude", "omega", "phase", "sine"))
    result = [Systems(f"(a) figure-2 system, {count} x 10 tokens on S^2, h = 2, t1 = 2", base, identity, False, y0,
                      2.0, modulation)]
    for claim in SEARCH_CLAIMS[:1] if quick else SEARCH_CLAIMS:
        family = get_family(claim)
        rng = np.random.default_rng(chunk_seed(claim, 0))
        shape = family.draw_shape(rng)
        _, batch = family.draw(rng, count, shape)
        result.append(Systems(f"search {claim} chunk 0: {count} x {shape.tokens} tokens on S^{shape.dim - 1}, "
                              f"h = {shape.heads}, {'causal' if family.causal else 'full'}, t1 = 20",
                              batch.P, batch.U, family.causal, batch.y0, 20.0))
    return result


def _ours(systems: Systems, threads: int = 1) -> Callable[[float], np.ndarray]:
    from sim.field.modulation import CosineDiagonal

    modulation = None
    if systems.modulation is not None:
        modulation = tuple(CosineDiagonal(*(a[eta] for a in systems.modulation))
                           for eta in range(systems.P.shape[1]))

    def run(tol: float) -> np.ndarray:
        return solve_instances(InstanceField(systems.P, systems.U, systems.causal), systems.y0, systems.t1,
                               controller=AdaptiveStepSize(rtol=tol,
                                                           atol=tol), modulation=modulation, max_steps=500_000,
                               workers=threads).y1
    return run


def _reference(systems: Systems) -> tuple[np.ndarray, float]:
    """The 1e-12 reference (sim.solve on the project's field) and its distance from DOP853 on instance 0."""
    from sim.solvers.compiled import solve_field  # noqa: F401  (the field of (a) as sim.solve takes it)
    from sim.field.dynamics import AttentionField
    from sim.field.modulation import Modulated

    tight = AdaptiveStepSize(rtol=1e-12, atol=1e-12)
    if systems.modulation is None:
        field = InstanceField(systems.P, systems.U, systems.causal)
        reference = solve(field, Dopri5(), 0.0, systems.t1, systems.y0, controller=tight,
                          options=SolveOptions(max_steps=2_000_000)).ys[-1]
        one = InstanceField(systems.P[:1], systems.U[:1], systems.causal)
        rhs = lambda t, z: one(t, z.reshape(1, *systems.y0.shape[1:])).ravel()  # noqa: E731
    else:
        from sim.figures.scenarios import full_attention_example

        field = full_attention_example()
        reference = solve(field, Dopri5(), 0.0, systems.t1, systems.y0, controller=tight).ys[-1]
        rhs = lambda t, z: field(t, z.reshape(systems.y0.shape[1:])).ravel()  # noqa: E731
        assert isinstance(field, AttentionField) and all(isinstance(p, Modulated) for p in field.P)
    check = solve_ivp(rhs, (0.0, systems.t1), systems.y0[0].ravel(), method="DOP853", rtol=1e-13,
                      atol=1e-13).y[:, -1].reshape(systems.y0.shape[1:])
    return reference, float(np.max(np.abs(reference[0] - check)))


def _ladder(run: Callable[[float], np.ndarray], reference: np.ndarray) -> dict[float, dict[str, float]]:
    """Worst error and time of ``run`` at the tolerances it needs to meet every target (see the docstring)."""
    tried: dict[float, dict[str, float]] = {}

    def attempt(tol: float) -> float:
        started = time.perf_counter()
        try:
            worst = float(np.max(np.abs(run(tol) - reference)))
        except Exception as error:  # noqa: BLE001  (a peer's step budget spent, recorded as its result)
            lines = [line for line in str(error).splitlines() if line.strip(" -")]
            budget = [line for line in lines if "maximum number of solver steps" in line]  # diffrax's, in a traceback
            message = (budget or lines or [""])[-1].strip()[:200]
            tried[tol] = {"worst_error": np.inf, "seconds": time.perf_counter() - started,
                          "failed": f"{type(error).__name__}: {message}"}
            return np.inf
        tried[tol] = {"worst_error": worst, "seconds": time.perf_counter() - started}
        return worst

    for target in sorted(TARGETS, reverse=True):
        if any(entry["worst_error"] <= target for entry in tried.values()):
            continue
        if any("failed" in entry or "stalled" in entry for entry in tried.values()):
            break  # tighter tolerances need more steps still, or buy no accuracy
        previous = None
        for index, tol in enumerate(COARSE):
            if tol in tried and tried[tol]["worst_error"] > target:
                previous = tol
                continue
            if attempt(tol) <= target:
                break
            if "failed" in tried[tol]:
                return tried
            previous = tol
            if index >= STALL and tried[tol]["worst_error"] > 0.1 * tried[COARSE[index - STALL]]["worst_error"]:
                errors = [tried[rung]["worst_error"] for rung in COARSE[:index + 1]]
                tried[tol]["stalled"] = (f"worst error {min(errors):.2g}-{max(errors):.2g} from tol {COARSE[0]:.0e} "
                                         f"to {tol:.1e}: not converging to the reference")
                return tried
        if previous is not None:
            for step in (1, 2):
                tol = previous * 10.0 ** (-step / 6)
                if attempt(tol) <= target:
                    break
    return tried


def _loosest(tried: dict[float, dict[str, float]], target: float) -> float | None:
    hits = [tol for tol, entry in tried.items() if entry["worst_error"] <= target]
    return max(hits) if hits else None


def compare(systems: Systems, *, repeats: int = REPEATS, threads: int = 1, device: str = "cpu",
            peers: tuple[str, ...] | None = None) -> dict[str, Any]:
    """One problem: the reference, the ladder of each available library of ``peers`` (peers' names, default every
    one; ours
    always runs, on the CPU) with the peers on ``device``, then the timings at equal accuracy."""
    reference, check = _reference(systems)
    runners: dict[str, Callable[[float], np.ndarray]] = {}
    libraries: dict[str, dict[str, Any]] = {}
    started = time.perf_counter()
    ours = _ours(systems, threads)
    ours(1e-6)
    libraries["ours"] = {"first_call_seconds": time.perf_counter() - started,
                         "threads": "1 (Numba, no threads)" if threads == 1 else f"{threads} (workers)",
                         "method": "sim.solvers.compiled: Dopri5 per instance, own step size, retracted to the sphere"}
    runners["ours"] = ours
    for name, reason in available().items():
        if peers is not None and name not in peers:
            continue
        if reason is not None:
            libraries[name] = {"skipped": f"{name} {reason}"}
            continue
        prepared = PREPARE[name](systems, threads=threads, device=device)
        runners[name] = prepared.run
        libraries[name] = {"compile_seconds": prepared.compile_seconds, "threads": prepared.threads,
                           "method": prepared.method}
    for name, run in runners.items():
        libraries[name]["ladder"] = {f"{tol:.3g}": entry for tol, entry in _ladder(run, reference).items()}
    levels = []
    for target in TARGETS:
        chosen = {}
        for name in runners:
            tried = {float(tol): entry for tol, entry in libraries[name]["ladder"].items()}
            tol = _loosest(tried, target)
            if tol is not None:
                chosen[name] = {"tol": tol, "worst_error": tried[tol]["worst_error"], "timings": [],
                                "cpu_timings": []}
        for _ in range(repeats):  # the libraries take turns
            for name, entry in chosen.items():
                begun, cpu = time.perf_counter(), time.process_time()
                runners[name](entry["tol"])
                entry["timings"].append(time.perf_counter() - begun)
                entry["cpu_timings"].append(time.process_time() - cpu)
        for entry in chosen.values():
            entry["seconds"] = float(np.median(entry["timings"]))
            entry["cpu_seconds"] = float(np.median(entry["cpu_timings"]))
        level = {"target": target, "runs": chosen}
        if "ours" in chosen:
            level["ratios"] = {name: entry["seconds"] / chosen["ours"]["seconds"]
                               for name, entry in chosen.items() if name != "ours"}
            level["cpu_ratios"] = {name: entry["cpu_seconds"] / chosen["ours"]["cpu_seconds"]
                                   for name, entry in chosen.items() if name != "ours"}
        levels.append(level)
    return {"problem": systems.name, "instances": int(len(systems.y0)), "shape": list(systems.y0.shape[1:]),
            "heads": int(systems.P.shape[1]), "t1": systems.t1, "reference_vs_dop853": check,
            "libraries": libraries, "levels": levels}


def run_peer_benchmark(*, quick: bool = False, threads: int = 1, device: str = "cpu",
                       peers: tuple[str, ...] | None = None,
                       progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Every problem of ``problems(quick)`` through ``compare``: ours on ``threads`` threads of the CPU, the peers
    of ``peers`` on ``device`` (on ``threads`` threads where it is the CPU); JSON-ready, with the machine's
    load average and the libraries' versions. ``progress``, if given, gets each problem's table as soon as it is
    measured."""
    started = time.time()
    load_before = os.getloadavg()
    results = []
    for systems in problems(quick):
        results.append(compare(systems, repeats=2 if quick else REPEATS, threads=threads, device=device,
                               peers=peers))
        if progress is not None:
            progress(table({"benchmark": "so far", "targets": list(TARGETS), "repeats": 2 if quick else REPEATS,
                            "load_average_before": load_before, "load_average_after": os.getloadavg(),
                            "cpus": os.cpu_count(), "threads": threads, "device": device,
                            "problems": results[-1:]}))
    return {"benchmark": "sim.solvers.compiled vs diffrax (jax.jit) vs torchdiffeq vs torchode at equal accuracy",
            "quick": quick, "targets": list(TARGETS), "repeats": 2 if quick else REPEATS, "threads": threads,
            "device": device, "versions": versions(),
            "seeds": {"a.initial": SEED_A,
            **{claim: chunk_seed(claim, 0) for claim in SEARCH_CLAIMS}}, "cpus": os.cpu_count(),
            "load_average_before": load_before, "load_average_after": os.getloadavg(), "problems": results,
            "seconds": time.time() - started}


def versions() -> dict[str, str]:
    """The installed versions of the libraries compared (and of PyTorch's CUDA, where it has one)."""
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in ("numpy", "numba", "torch", "jax", "jaxlib", "diffrax", "torchdiffeq", "torchode"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "absent"
    return found


def table(results: dict[str, Any]) -> str:
    """The comparison as text: one row per problem and library, the two accuracy levels side by side."""
    lines = [f"{results['benchmark']} (run time, median of {results['repeats']}; compile times apart). "
             f"Load average {results['load_average_before'][0]:.1f} before, {results['load_average_after'][0]:.1f} "
             f"after, {results['cpus']} CPUs, {results.get('threads', 1)} thread(s) per library, the peers on "
             f"{results.get('device', 'cpu')}."]
    header = f"{'library':<12} | " + " | ".join(f"worst error <= {t:.0e}: wall, CPU (tol, error; peer/ours)" for t in
                                                   results["targets"]) + " | compile / first call"
    for problem in results["problems"]:
        lines += ["", problem["problem"], header, "-" * len(header)]
        for name, library in problem["libraries"].items():
            if "skipped" in library:
                lines.append(f"{name:<12} | SKIPPED: {library['skipped']}")
                continue
            failures = [f"tol {tol}: {entry['failed']}" if "failed" in entry else entry["stalled"]
                        for tol, entry in library.get("ladder", {}).items() if "failed" in entry or "stalled" in entry]
            cells = []
            for level in problem["levels"]:
                run = level["runs"].get(name)
                ratio = "" if name == "ours" or run is None else (
                    f"; {level['ratios'][name]:.2f}x / {level['cpu_ratios'][name]:.2f}x ours")
                cells.append(("not reached" + (f" ({failures[0]})" if failures else "")) if run is None else
                             f"{run['seconds']:.3f} s, CPU {run['cpu_seconds']:.3f} s (tol {run['tol']:.2g}, "
                             f"{run['worst_error']:.1e}{ratio})")
            extra = (f"{library['first_call_seconds']:.2f} s first call" if "first_call_seconds" in library
                     else f"{library['compile_seconds']:.2f} s jit compile" if library["compile_seconds"]
                     else "none (eager)")
            lines.append(f"{name:<12} | " + " | ".join(cells) + f" | {extra}")
    return "\n".join(lines)
