"""A stored witness as a reader sees it in the report: its instance, its start, its attractor and its certificate.

:func:`trajectory` integrates eq. 6 from the witness's ``y0`` (sim's Dopri5 at the replay's evidence tolerance, to the
replay's horizon); a rotating state is drawn in its co-rotating frame: y(t) exp(-mu t Omega)^T, with mu the rotation
speed of the attractor itself (f(y*) = mu y* Omega^T, fitted by least squares), then turned along the orbit so that
its end faces y* (the orbit's phase is free). :func:`draw` plots the tokens' paths (on the circle for d = 2, on the
sphere in a 3-D view for d = 3, in the plane of the two leading principal components of all the drawn points
otherwise) beside the distance to the attractor over time; a trajectory that does not end within ``REACHED`` of the
attractor is **flagged** (caption, title and ``numbers["figure_reaches_attractor"]``).

:func:`tables` gives P_eta and U_eta (each head), y0 beside y*, and the certificate split into its rigorous part
(ball-arithmetic enclosures: Krawczyk box, zero enclosure, eigenvalue bound, ball of attraction, the start's distance
from the certified zero) and its float64 part (the certificate's own ``float64_parts`` and the replay's float64
numbers), as ``python -m sim replay`` labels them.

Everything here is a picture or a listing: the verdict is the replay's (:mod:`sim.conjectures.replay`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.linalg import expm

from foundation.records import Figure, Table

from sim.conjectures.certify import EVIDENCE, EVIDENCE_HORIZON, attention_field, integrate

#: The end of the drawn trajectory counts as reaching the attractor within this distance (max over tokens, after the
#: orbit's phase for rotating states): replay's runs end ~1e-12 away (the slowest certified rate ~0.03 over t = 1000).
REACHED = 1e-6
#: Drawn samples: t = 0 and log-spaced times from ``FIRST`` to the horizon.
SAMPLES = 300
FIRST = 1e-2
#: Rigorous (ball arithmetic) numbers of a certificate and of a replay, in the order shown; the rest are float64.
RIGOROUS = {
    "box_radius": "Krawczyk box half-width (unique zero in it)",
    "krawczyk_max": "Krawczyk image: max |K_i| (inside the box)",
    "unknowns": "unknowns of the chart (and slice)",
    "residual_at_centre": "|F| at the chart centre (ball upper bound)",
    "rotation_speed": "rotation speed mu (ball)",
    "zero_box_radius": "tight Krawczyk box around the zero u*",
    "zero_enclosure": "|u*| bound (far corner of u*'s box)",
    "real_part_bound": "every tangent eigenvalue has Re <= this",
    "basin_radius": "radius of the certified ball of attraction",
    "start_from_centre": "|u(y0)| upper bound (chart, slice)",
    "start_inside_certified_ball": "|u(y0)| + |u*| bound <= basin radius",
}
FLOAT64 = {
    "distance_from_claim": "distance of y* from the claimed outcome (>= 1e-2 asked)",
    "hypothesis_margin_at_y0": "margin of y0 inside the claim's state hypotheses",
    "evidence_horizon": "horizon of the float64 runs from y0",
    "sim_end_distance": "chart distance of sim's Dopri5 end from y*",
    "scipy_end_distance": "chart distance of SciPy's LSODA end from y*",
}


def _arrays(witness: dict):
    P, U = (np.asarray(witness[key], float) for key in ("P", "U"))
    generator = witness.get("generator")
    return P, U, bool(witness["causal"]), np.asarray(witness["y0"], float), \
        np.asarray(witness["equilibrium"], float), None if generator is None else np.asarray(generator, float)


def trajectory(witness: dict, horizon: float | None = None) -> dict:
    """The drawn trajectory from y0: ``t : shape=[T]``, ``y : shape=[T, l, d]`` (co-rotating and phase-aligned for a
    rotating state), ``distance : shape=[T]`` (max_i |y_i(t) - y*_i|), ``end_distance``, ``reaches`` and ``mu``."""

    P, U, causal, y0, y_star, generator = _arrays(witness)
    horizon = EVIDENCE_HORIZON if horizon is None else float(horizon)
    ts = np.concatenate([[0.0], np.geomspace(min(FIRST, horizon / 2), horizon, SAMPLES - 1)])
    field = attention_field(P, U, causal)
    ys = np.asarray(integrate(field, y0, horizon, EVIDENCE, ts=ts))
    mu = 0.0
    if generator is not None:
        direction = y_star @ generator.T                      # d/dt y* exp(mu t Omega)^T at t = 0, per unit mu
        mu = float(np.sum(np.asarray(field(0.0, y_star)) * direction) / np.sum(direction * direction))
        ys = np.stack([y @ expm(-mu * t * generator).T for t, y in zip(ts, ys)])
        ys = ys @ expm(_phase(ys[-1], y_star, generator) * generator).T
    distance = np.max(np.linalg.norm(ys - y_star, axis=-1), axis=-1)
    return {"t": ts, "y": ys, "distance": distance, "end_distance": float(distance[-1]),
            "reaches": bool(distance[-1] <= REACHED), "mu": mu, "horizon": horizon}


def _phase(y: np.ndarray, target: np.ndarray, generator: np.ndarray) -> float:
    """The theta minimising |y exp(theta Omega)^T - target| (a grid, then a bounded scalar search)."""
    from scipy.optimize import minimize_scalar

    def cost(theta):
        return float(np.sum((y @ expm(theta * generator).T - target) ** 2))

    grid = np.linspace(-np.pi, np.pi, 721)
    best = grid[int(np.argmin([cost(theta) for theta in grid]))]
    step = grid[1] - grid[0]
    return float(minimize_scalar(cost, bounds=(best - step, best + step), method="bounded",
                                 options={"xatol": 1e-14}).x)


def _tokens_panel(figure, ys: np.ndarray, y_star: np.ndarray, rotating: bool) -> str:
    """The left panel of :func:`draw`: the tokens' paths ``ys`` ``(times, l, d)`` from y0 (o) to ``y_star`` (x), on
    the circle (d = 2), the sphere (d = 3) or a PCA plane; return the words for where they are drawn."""
    import matplotlib.pyplot as plt

    l, d = y_star.shape
    geometry = figure.add_subplot(1, 2, 1, projection="3d" if d == 3 else None)
    colours = plt.get_cmap("tab10")
    if d == 2:
        circle = np.linspace(0, 2 * np.pi, 361)
        geometry.plot(np.cos(circle), np.sin(circle), color="0.8", linewidth=0.8)
        points, labels = ys, ("y_1", "y_2")
    elif d == 3:
        u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 25), np.linspace(0, np.pi, 13))
        geometry.plot_wireframe(np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v), color="0.85",
                                linewidth=0.4)
        points, labels = ys, ("y_1", "y_2", "y_3")
    else:
        flat = np.concatenate([ys.reshape(-1, d), y_star])
        mean = flat.mean(axis=0)
        axes_ = np.linalg.svd(flat - mean, full_matrices=False)[2][:2]
        points, labels = (ys - mean) @ axes_.T, ("PC 1", "PC 2")
        y_star_drawn = (y_star - mean) @ axes_.T
    end = y_star if d <= 3 else y_star_drawn
    for i in range(l):
        colour = colours(i % 10)
        path_i = points[:, i].T
        geometry.plot(*path_i, color=colour, linewidth=1.2)
        geometry.scatter(*points[0, i][:, None], color=colour, marker="o", s=22)
        geometry.scatter(*end[i][:, None], color="black", marker="x", s=60, linewidths=1.6)
    for axis, label in zip(("x", "y", "z"), labels):
        getattr(geometry, f"set_{axis}label")(label)
    if d == 2:
        geometry.set_aspect("equal")
    frame = "co-rotating frame" if rotating else "fixed frame"
    projection = {2: "on the circle", 3: "on the sphere"}.get(d, f"in a PCA projection of S^{d - 1}")
    geometry.set_title(f"tokens {projection}, {frame}\no: y0, x: certified attractor y*", fontsize=9)
    return projection


def draw(witness: dict, path: Path | str, name: str, data: dict | None = None) -> tuple[Figure, dict]:
    """Write the witness's figure to ``path`` (PNG); its :class:`Figure` and the numbers it rests on."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = trajectory(witness) if data is None else data
    ys, y_star = data["y"], np.asarray(witness["equilibrium"], float)
    l, d = y_star.shape
    rotating = witness.get("generator") is not None
    figure = plt.figure(figsize=(9.6, 4.2))
    projection = _tokens_panel(figure, ys, y_star, rotating)
    frame = "co-rotating frame" if rotating else "fixed frame"
    distance = figure.add_subplot(1, 2, 2)
    distance.plot(data["t"][1:], np.maximum(data["distance"][1:], 1e-17), color="tab:blue")
    distance.axhline(REACHED, color="tab:red", linestyle="--", linewidth=0.8, label=f"reached: {REACHED:g}")
    distance.set_xscale("log")
    distance.set_yscale("log")
    distance.set_xlabel("t")
    distance.set_ylabel("max_i |y_i(t) - y*_i|")
    distance.legend(fontsize=8)
    flag = "" if data["reaches"] else "FLAGGED: the trajectory does not reach the attractor. "
    distance.set_title(f"{flag}distance to y* ({frame})", fontsize=9, color="tab:red" if flag else "black")
    figure.suptitle(f"{witness['claim']}: {name}", fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    numbers = {"figure_end_distance": data["end_distance"], "figure_reaches_attractor": data["reaches"]}
    if rotating:
        numbers["figure_rotation_speed"] = data["mu"]
    caption = (f"{flag}Witness {name} of {witness['claim']} (l = {l}, d = {d}, h = {len(witness['P'])}, "
               f"{'causal' if witness['causal'] else 'full'} attention): eq. 6 integrated from y0 (o) by sim's Dopri5 "
               f"(rtol 1e-10) to t = {data['horizon']:g}, tokens {projection}"
               + (f", in the co-rotating frame (mu = {data['mu']:.6g}, the attractor's own rotation speed; the "
                  f"orbit's phase turned to face y*)" if rotating else "")
               + f"; x marks the certified attractor y*. Right: max_i |y_i(t) - y*_i|, "
                 f"{data['end_distance']:.2g} at the end ({'within' if data['reaches'] else 'NOT within'} "
                 f"{REACHED:g}). Float64 picture; the certificate is in the tables.")
    return Figure(str(path), caption), numbers


def _row(vector) -> str:
    return "[" + ", ".join(f"{x:.6g}" for x in np.asarray(vector, float)) + "]"


def tables(witness: dict, outcome) -> tuple[Table, ...]:
    """P_eta, U_eta and the generator; y0 beside y*; the certificate, rigorous part first (``outcome``: the
    witness's :class:`sim.conjectures.replay.Replay`)."""
    P, U, _, y0, _, generator = _arrays(witness)
    y_star = np.asarray(outcome.certificate.equilibrium, float) if len(outcome.certificate.equilibrium) else \
        np.asarray(witness["equilibrium"], float)
    rows = []
    for eta in range(len(P)):
        for label, matrix in ((f"P_{eta + 1}", P[eta]), (f"U_{eta + 1}", U[eta])):
            rows += [(label if i == 0 else "", i + 1, _row(r)) for i, r in enumerate(matrix)]
    if generator is not None:
        rows += [("Omega (generator)" if i == 0 else "", i + 1, _row(r)) for i, r in enumerate(generator)]
    instance = Table("Instance: P_eta and U_eta of each head" + (" and the rotation generator" if generator is not
                                                                  None else ""),
                     ("matrix", "row", "entries"), tuple(rows))
    states = Table("Start y0 and certified attractor y* (token by token)", ("token", "y0", "y*"),
                   tuple((i + 1, _row(a), _row(b)) for i, (a, b) in enumerate(zip(y0, y_star))))
    certificate = outcome.certificate
    rigorous = [("rigorous (Arb ball arithmetic)", label, _cell(certificate.numbers.get(key, outcome.numbers.get(key))))
                for key, label in RIGOROUS.items() if key in certificate.numbers or key in outcome.numbers]
    rigorous += [("rigorous (Arb ball arithmetic)", f"eigenvalue enclosure {k + 1}", ball)
                 for k, ball in enumerate(certificate.eigenvalues)]
    float64 = [("float64, not validated", part, "") for part in certificate.float64_parts]
    float64 += [("float64, not validated", label, _cell(outcome.numbers[key])) for key, label in FLOAT64.items()
                if key in outcome.numbers]
    return instance, states, Table(f"Certificate: {certificate.reason}", ("part", "quantity", "value"),
                                   tuple(rigorous + float64))


def _cell(value):
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{value:.6g}"
    return value
