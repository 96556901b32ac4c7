"""The compiled whole integrations (``sim.solvers.compiled``) on small systems, step for step against ``sim.solve``
(Dopri5).

The systems are small enough that every run also takes seconds with NUMBA_DISABLE_JIT=1 (the same loops in
Python): these are the tests `make mutants` runs on each mutant of sim/solvers/compiled.py and sim/field/instances.py
(tests/mutation/compiled.toml), so this module imports only what they need (a mutant's test process starts in
about 1 s; SciPy's integrators and the search machinery of tests/sim/test_compiled.py add another second each).
"""

import numba
import numpy as np
import pytest

import sim.solvers.compiled as compiled
from sim import AdaptiveStepSize, AttentionField, Dopri5, Ellipsoid, SaveAt, SolveOptions, solve
from sim.solvers.compiled import solve_field, solve_instances
from sim.field.instances import InstanceField
from sim.field.modulation import CosineDiagonal, Modulated
from sim.solvers.ahead import PATHS
from sim.figures.scenarios import FIG3_V, full_attention_example
from sim.solvers import MaxStepsReached
from sim.solvers.solve import _tiny

#: Same algorithm as sim.solve on one instance (same starting step, controller, FSAL, retraction): only the order
#: of the field's additions differs (BLAS products against the compiled loops), a rounding of ~1e-16 per
#: evaluation carried over ~100 steps; 1e-12 leaves a factor of 100 and catches any change of the method.
SAME_METHOD = 1e-12

#: Seed and count of the drawn small instances. 11: a full group of LANES = 8, then lanes freed by finished
#: instances take the 3 left.
SMALL_SEED, SMALL_COUNT = 11, 11
#: The small runs' step budget (accepted and rejected steps, each instance; the compiled loop's and sim.solve's):
#: 5 times the most any of them takes (19, two drawn heads at 1e-7), so a mutant that stalls the step size fails
#: at once, naming the instance, instead of spending the default budget in Python (measured: such mutants of
#: sim/solvers/compiled.py took about 70 s each, a third of them, under the default budget).
SMALL_BUDGET = 100


def _small_instances(heads: int, values: str):
    rng = np.random.default_rng(SMALL_SEED)
    P = rng.normal(0.0, 1.5, (SMALL_COUNT, heads, 3, 3))
    U = (np.broadcast_to(np.eye(3), P.shape).copy() if values == "identity"
         else np.eye(3) + rng.normal(0.0, 0.5, P.shape))
    y0 = rng.standard_normal((SMALL_COUNT, 3, 3))
    return P, U, y0 / np.linalg.norm(y0, axis=-1, keepdims=True)


def _assert_step_for_step(together, field_of, y0, t1, rtol, own_steps=True, t0=0.0):
    """Each instance of ``together`` (a compiled integration from ``t0``) ends where sim.solve's Dopri5 ends on that
    instance alone (``field_of(b)``), after the same accepted and rejected steps and evaluations, on the sphere."""
    for b in range(len(y0)):
        alone = solve(field_of(b), Dopri5(), t0, t1, y0[b:b + 1], controller=AdaptiveStepSize(rtol=rtol, atol=rtol),
                      options=SolveOptions(max_steps=SMALL_BUDGET))
        np.testing.assert_allclose(together.y1[b], alone.ys[-1][0], rtol=0.0, atol=SAME_METHOD)
        assert (together.steps[b], together.rejected[b], together.evaluations[b]) == (
            alone.steps, alone.rejected_steps, alone.evaluations), b
        assert together.drift[b] <= 1e-12  # retracted after every accepted step
    if own_steps:  # the instances differ in steps, and some steps are rejected: both paths of the controller run
        assert len(set(together.steps.tolist())) > 1 and together.rejected.sum() > 0


@pytest.mark.parametrize("causal, heads, values, tol", [(False, 1, "identity", 1e-7), (True, 2, "drawn", 1e-7),
                                                         (True, 2, "drawn", 1e-3)])
def test_small_instances_run_step_for_step_as_sim_solve(causal, heads, values, tol):
    """At 1e-3 every instance has a rejected step, so the lanes given a new instance must reset their counts."""
    P, U, y0 = _small_instances(heads, values)
    together = solve_instances(InstanceField(P, U, causal), y0, 1.5, controller=AdaptiveStepSize(rtol=tol, atol=tol),
                               max_steps=SMALL_BUDGET)
    _assert_step_for_step(together, lambda b: InstanceField(P[b:b + 1], U[b:b + 1], causal), y0, 1.5, tol)


def test_small_modulated_field_runs_step_for_step_as_sim_solve():
    """Figure 2's P(t) = D(t) P' (the loop evaluates D(t) itself) on 3 instances of 3 tokens."""
    field = full_attention_example()
    y0 = Ellipsoid().random_point_in_hemisphere(FIG3_V, np.random.default_rng(SMALL_SEED), (3, 3, 3))
    together = solve_field(field, y0, 0.3, controller=AdaptiveStepSize(rtol=1e-7, atol=1e-7), max_steps=SMALL_BUDGET)
    _assert_step_for_step(together, lambda b: field, y0, 0.3, 1e-7, own_steps=False)  # (they share its steps)


def test_small_modulated_field_of_more_tokens_than_dimensions_runs_step_for_step_as_sim_solve():
    """Figure 2's field on 4 tokens in d = 3: the diagonals' arrays are [h, d], not [h, l]."""
    field = full_attention_example()
    y0 = Ellipsoid().random_point_in_hemisphere(FIG3_V, np.random.default_rng(SMALL_SEED), (2, 4, 3))
    together = solve_field(field, y0, 0.3, controller=AdaptiveStepSize(rtol=1e-7, atol=1e-7), max_steps=SMALL_BUDGET)
    _assert_step_for_step(together, lambda b: field, y0, 0.3, 1e-7, own_steps=False)


def test_a_modulation_must_hold_one_cosine_diagonal_per_head():
    from sim.field.modulation import CosineDiagonal

    P, U, y0 = (a[:2] for a in _small_instances(2, "drawn"))
    cosine = CosineDiagonal(np.ones(3), np.ones(3), np.zeros(3), np.zeros(3, dtype=bool))
    for modulation in ((cosine,), (cosine, lambda t: np.ones(3))):  # one for two heads; a diagonal of another kind
        with pytest.raises(ValueError, match=r"modulation must hold one CosineDiagonal per head \(2\)"):
            solve_instances(InstanceField(P, U, True), y0, 1.0, controller=AdaptiveStepSize(rtol=1e-6, atol=1e-6),
                            modulation=modulation)


def test_small_modulated_field_with_phases_runs_step_for_step_as_sim_solve():
    """P_eta(t) = diag(D_eta(t)) P'_eta with nonzero phases and mixed sines and cosines (figure 2's phases are 0)."""
    from sim.field.modulation import CosineDiagonal, Modulated

    rng = np.random.default_rng(SMALL_SEED)
    diagonals = [CosineDiagonal(rng.uniform(0.5, 2.0, 3), rng.uniform(1.0, 6.0, 3), rng.uniform(0.3, 3.0, 3),
                                np.array([True, False, True])) for _ in range(2)]
    field = AttentionField(P=tuple(Modulated(rng.normal(size=(3, 3)), diagonal) for diagonal in diagonals), W=np.eye(3))
    y0 = Ellipsoid().random_point(rng, (3, 3, 3))
    together = solve_field(field, y0, 0.7, controller=AdaptiveStepSize(rtol=1e-7, atol=1e-7), max_steps=SMALL_BUDGET)
    _assert_step_for_step(together, lambda b: field, y0, 0.7, 1e-7, own_steps=False)


def test_small_instances_start_at_t0():
    P, U, y0 = _small_instances(1, "drawn")
    later = solve_instances(InstanceField(P[:2], U[:2], False), y0[:2], 1.5, t0=0.5,
                            controller=AdaptiveStepSize(rtol=1e-7, atol=1e-7), max_steps=SMALL_BUDGET)
    _assert_step_for_step(later, lambda b: InstanceField(P[b:b + 1], U[b:b + 1]), y0[:2], 1.5, 1e-7, own_steps=False,
                          t0=0.5)


def test_small_instances_at_rest_and_a_short_span_run_step_for_step_as_sim_solve():
    """The starting step's other regimes, as sim.solve takes them (its own is SciPy's, tests/sim/test_controllers):
    a state at consensus (f = 0 up to rounding: h0 = 1e-6, then 100 h0 or the fallback bound the first step), one
    a rounding away from it, and a span shorter than any first guess (the first step lands on t1 from t0)."""
    P, U, y0 = _small_instances(2, "drawn")
    rest = np.broadcast_to(y0[0, :1], y0[0].shape)
    exact = np.broadcast_to(np.eye(3)[0], y0[0].shape)  # every token e_1: f = 0 exactly (d1 = d2 = 0: the fallback)
    y0 = np.stack([rest, rest + 1e-9 * np.arange(9).reshape(3, 3), y0[2], y0[3], exact])
    y0 /= np.linalg.norm(y0, axis=-1, keepdims=True)
    P, U = P[:5], np.broadcast_to(np.eye(3), P[:5].shape).copy()
    for t1 in (1.5, 1e-3):
        together = solve_instances(InstanceField(P, U, True), y0, t1,
                                   controller=AdaptiveStepSize(rtol=1e-7, atol=1e-7), max_steps=SMALL_BUDGET)
        _assert_step_for_step(together, lambda b: InstanceField(P[b:b + 1], U[b:b + 1], True), y0, t1, 1e-7,
                              own_steps=False)
    # the short span: the moving instances land on t1 in one step; at rest the first step is 100 h0 = 1e-4
    assert together.steps[2:4].tolist() == [1, 1] and together.steps[0] > 1


def test_the_step_budget_counts_accepted_and_rejected_steps():
    """As sim.solve's max_steps: an instance that needs s accepted and r rejected steps runs with a budget of s + r
    and is stopped, naming it, with s + r - 1."""
    P, U, y0 = _small_instances(2, "drawn")
    full = solve_instances(InstanceField(P, U, True), y0, 1.5, controller=AdaptiveStepSize(rtol=1e-7, atol=1e-7),
                           max_steps=SMALL_BUDGET)
    hardest = int(np.argmax(full.steps + full.rejected))
    budget = int(full.steps[hardest] + full.rejected[hardest])
    assert full.rejected[hardest] > 0
    solve_instances(InstanceField(P, U, True), y0, 1.5, controller=AdaptiveStepSize(rtol=1e-7, atol=1e-7),
                    max_steps=budget)  # enough
    with pytest.raises(MaxStepsReached, match=f"instance {hardest} .* max_steps={budget - 1}"):
        solve_instances(InstanceField(P, U, True), y0, 1.5, controller=AdaptiveStepSize(rtol=1e-7, atol=1e-7),
                        max_steps=budget - 1)


def test_an_instance_that_becomes_non_finite_is_named():
    """A matrix of entries 1e308 (finite) overflows the scores y_i^T P y_j to inf (inf - inf in the softmax): the
    instance's error is not finite, and the call raises FloatingPointError naming it, not MaxStepsReached."""
    P, U, y0 = _small_instances(1, "drawn")
    P[1] = 1e308
    with pytest.raises(FloatingPointError, match="instance 1 .* became non-finite"):
        solve_instances(InstanceField(P[:3], U[:3], False), y0[:3], 1.5,
                        controller=AdaptiveStepSize(rtol=1e-7, atol=1e-7), max_steps=SMALL_BUDGET)


def test_a_single_instance_runs_step_for_step_and_its_result_is_immutable():
    """A batch of one (the lanes are first filled with instance 0: there is no other); the result is frozen, its
    counts integers (as sim.solve's)."""
    from dataclasses import FrozenInstanceError

    P, U, y0 = _small_instances(2, "drawn")
    alone = solve_instances(InstanceField(P[:1], U[:1], True), y0[:1], 1.5,
                            controller=AdaptiveStepSize(rtol=1e-7, atol=1e-7), max_steps=SMALL_BUDGET)
    _assert_step_for_step(alone, lambda b: InstanceField(P[:1], U[:1], True), y0[:1], 1.5, 1e-7, own_steps=False)
    with pytest.raises(FrozenInstanceError):
        alone.y1 = y0[:1]
    assert [a.dtype for a in (alone.steps, alone.rejected, alone.evaluations)] == [np.dtype(np.int64)] * 3


def test_bad_inputs_name_the_argument():
    """Each check of the compiled integrations' inputs, at its edge where it has one: y0 named when not finite, a
    drift of 0.5 off the sphere, a controller other than an AdaptiveStepSize without dt0, max_steps and workers not
    positive integers (1 is allowed: one step lands on a short span)."""
    from sim import ConstantStepSize

    P, U, y0 = _small_instances(2, "drawn")
    P, U, y0 = P[:2], U[:2], y0[:2]
    with pytest.raises(ValueError, match="y0 must lie on the unit sphere"):
        solve_instances(InstanceField(P, U, True), 2 * y0, 1.0, controller=AdaptiveStepSize(rtol=1e-6, atol=1e-6))
    with pytest.raises(ValueError, match=r"P must have shape \[b=2"):
        solve_instances(InstanceField(P[:1], U[:1], True), y0, 1.0, controller=AdaptiveStepSize(rtol=1e-6, atol=1e-6))
    with pytest.raises(ValueError, match="rtol"):
        solve_instances(InstanceField(P, U, True), y0, 1.0, controller=AdaptiveStepSize(rtol=-1.0, atol=1e-6))
    with pytest.raises(ValueError, match="t1"):
        solve_instances(InstanceField(P, U, True), y0, 0.0, controller=AdaptiveStepSize(rtol=1e-6, atol=1e-6))
    with pytest.raises(MaxStepsReached, match="instance 0"):
        solve_instances(InstanceField(P, U, True), y0, 50.0, controller=AdaptiveStepSize(rtol=1e-6, atol=1e-6),
                        max_steps=3)
    with pytest.raises(ValueError, match="sphere"):
        solve_field(AttentionField(P=(np.eye(2),), W=np.diag([1.0, 2.0])), y0[:, :, :2], 1.0,
                    controller=AdaptiveStepSize(rtol=1e-6, atol=1e-6))
    field, tol = InstanceField(P, U, True), AdaptiveStepSize(rtol=1e-6, atol=1e-6)
    bad = y0.copy()
    bad[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="^y0 must be finite"):
        solve_instances(field, bad, 1.0, controller=tol)
    with pytest.raises(ValueError, match="y0 must lie on the unit sphere"):
        solve_instances(field, y0 * np.sqrt(1.5), 1.0, controller=tol)
    for controller in (ConstantStepSize(0.1), AdaptiveStepSize(rtol=1e-6, atol=1e-6, dt0=0.1)):
        with pytest.raises(ValueError, match="controller must be an AdaptiveStepSize without dt0"):
            solve_instances(field, y0, 1.0, controller=controller)
    for name, value in (("max_steps", 0), ("max_steps", 1.5), ("workers", 0), ("workers", 1.5)):
        with pytest.raises(ValueError, match=f"{name}={value!r} must be a positive integer"):
            solve_instances(field, y0, 1.0, controller=tol, **{name: value})
    one = solve_instances(field, y0, 1e-9, controller=tol, max_steps=1)
    assert one.steps.tolist() == [1, 1]


def _constant_causal_field() -> AttentionField:
    """Two drawn constant heads with drawn value matrices, causal: the path of solve_field that is not figure 2's."""
    rng = np.random.default_rng(SMALL_SEED)
    return AttentionField(P=tuple(rng.normal(0.0, 1.5, (2, 3, 3))), U=tuple(np.eye(3) + rng.normal(0.0, 0.5, (2, 3, 3))),
                          causal=True)


def test_a_constant_causal_field_runs_step_for_step_from_t0():
    """solve_field on constant heads and value matrices, causal, 4 tokens in d = 3 (l != d), from t0 = 0.2: each
    instance as sim.solve takes it alone, over [0.2, 0.9]."""
    field = _constant_causal_field()
    y0 = Ellipsoid().random_point(np.random.default_rng(SMALL_SEED), (3, 4, 3))
    together = solve_field(field, y0, 0.9, t0=0.2, controller=AdaptiveStepSize(rtol=1e-7, atol=1e-7),
                           max_steps=SMALL_BUDGET)
    _assert_step_for_step(together, lambda b: field, y0, 0.9, 1e-7, own_steps=False, t0=0.2)


def test_solve_field_hands_its_span_budget_and_workers_to_solve_instances(monkeypatch):
    """What solve_field passes on (workers give the same numbers by design, so only a spy tells them apart): t0,
    max_steps and workers as given, 1 worker by default, the field's mask and constant heads broadcast per instance."""
    calls = []
    monkeypatch.setattr(compiled, "solve_instances", lambda *args, **kwargs: calls.append((args, kwargs)))
    field = _constant_causal_field()
    y0 = Ellipsoid().random_point(np.random.default_rng(SMALL_SEED), (2, 4, 3))
    controller = AdaptiveStepSize(rtol=1e-6, atol=1e-6)
    solve_field(field, y0, 1.0, controller=controller, t0=0.25, max_steps=7, workers=3)
    solve_field(field, y0, 1.0, controller=controller)
    (args, given), (_, default) = calls
    instances = args[0]
    assert given == {"controller": controller, "t0": 0.25, "modulation": None, "max_steps": 7, "workers": 3}
    assert default["workers"] == 1 and default["t0"] == 0.0 and default["max_steps"] == compiled.MAX_STEPS
    assert instances.causal is True and instances.P.shape == (2, 2, 3, 3) and instances.U.shape == (2, 2, 3, 3)
    np.testing.assert_array_equal(instances.P[1], np.stack(field.P))
    np.testing.assert_array_equal(instances.U[0], np.stack(field.U))


def test_solve_field_refuses_heads_and_values_the_compiled_loop_cannot_evaluate():
    """Heads must be all constant or all Modulated by a CosineDiagonal; value matrices constant; y0 [b, l, d], finite,
    in the heads' d. Each refusal names what is wrong."""
    from sim.field.modulation import CosineDiagonal, Modulated

    P = np.eye(3)
    cosine = CosineDiagonal(np.ones(3), np.ones(3), np.zeros(3), np.zeros(3, dtype=bool))
    y0 = Ellipsoid().random_point(np.random.default_rng(SMALL_SEED), (2, 4, 3))
    controller = AdaptiveStepSize(rtol=1e-6, atol=1e-6)
    heads = "all be constant matrices or all Modulated by a CosineDiagonal"
    for P_heads in ((Modulated(P, cosine), P),  # mixed
                    (Modulated(P, lambda t: np.ones(3)),),  # modulated by another diagonal
                    (lambda t: P,)):  # a plain function of t
        with pytest.raises(ValueError, match=heads):
            solve_field(AttentionField(P=P_heads, W=np.eye(3)), y0, 1.0, controller=controller)
    with pytest.raises(ValueError, match="value matrices U_eta must be constant"):
        solve_field(AttentionField(P=(P,), U=(lambda t: P,)), y0, 1.0, controller=controller)
    bad = y0.copy()
    bad[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="^y0 must be finite"):
        solve_field(AttentionField(P=(P,)), bad, 1.0, controller=controller)
    with pytest.raises(ValueError, match=r"y0 must have shape \[b, l, d\]"):
        solve_field(AttentionField(P=(P,)), y0[0], 1.0, controller=controller)
    with pytest.raises(ValueError, match="y0 must have last axis d = 3"):
        solve_field(AttentionField(P=(P,)), y0[:, :, :2], 1.0, controller=controller)


def test_solve_field_stops_at_its_step_budget():
    y0 = Ellipsoid().random_point(np.random.default_rng(SMALL_SEED), (2, 4, 3))
    with pytest.raises(MaxStepsReached, match="instance 0"):
        solve_field(_constant_causal_field(), y0, 50.0, controller=AdaptiveStepSize(rtol=1e-6, atol=1e-6), max_steps=3)


def test_solve_instances_on_two_workers_runs_each_group_in_the_pool_as_on_one(monkeypatch):
    """workers = 2 splits the batch in groups run by a pool of that many threads (a spy on the pool): the same
    numbers as one worker, which is also the default."""
    P, U, y0 = _small_instances(2, "drawn")
    field, tol = InstanceField(P, U, True), AdaptiveStepSize(rtol=1e-7, atol=1e-7)
    pools = []
    real = compiled.worker_pool

    def spy(count):
        pools.append(count)
        return real(count)

    monkeypatch.setattr(compiled, "worker_pool", spy)
    alone = solve_instances(field, y0, 0.5, controller=tol, max_steps=SMALL_BUDGET)
    assert pools == []  # one worker by default: no pool
    two = solve_instances(field, y0, 0.5, controller=tol, max_steps=SMALL_BUDGET, workers=2)
    assert pools == [2]
    np.testing.assert_array_equal(two.y1, alone.y1)
    assert two.steps.tolist() == alone.steps.tolist() and two.evaluations.tolist() == alone.evaluations.tolist()

@pytest.mark.parametrize("state, first", [("rest", 1e-4), ("exact", 1e-6)])
def test_the_first_step_at_rest(state, first):
    """At consensus (U = I, so consensus is an equilibrium) h0 = 1e-6; up to rounding (f ~ 1e-17) h1 is far longer
    and the first step is 100 h0 = 1e-4; at exactly e_1 (f = 0: d1 = d2 = 0) the fallback h1 = max(1e-6, 1e-3 h0)
    = 1e-6 is. A span of that first step takes one step, 1.0005 times it two, as in sim.solve."""
    P, _, y0 = (a[:1] for a in _small_instances(2, "drawn"))
    U = np.broadcast_to(np.eye(3), P.shape).copy()
    at_rest = np.broadcast_to(y0[0, :1] if state == "rest" else np.eye(3)[0], y0[0].shape)[None].copy()
    for t1, steps in ((first, 1), (1.0005 * first, 2)):
        together = solve_instances(InstanceField(P, U, True), at_rest, t1,
                                   controller=AdaptiveStepSize(rtol=1e-7, atol=1e-7), max_steps=SMALL_BUDGET)
        _assert_step_for_step(together, lambda b: InstanceField(P, U, True), at_rest, t1, 1e-7, own_steps=False)
        assert together.steps.tolist() == [steps], t1


@pytest.mark.parametrize("tol", [1e5, 1.0])
def test_the_starting_step_at_loose_tolerances(tol):
    """At a tolerance of 1e5 a state on the sphere has a scaled norm d0 ~ 5e-6 < 1e-5, so h0 = 1e-6 whatever the
    field's d1 (here > 1e-5: U = 100 x drawn); at 1, 1e-5 < d0 < 1 and h0 = 0.01 d0 / d1: as SciPy's rule and
    sim.solve."""
    P, U, y0 = (a[:2] for a in _small_instances(2, "drawn"))
    together = solve_instances(InstanceField(P, 100 * U, True), y0, 1e-3,
                               controller=AdaptiveStepSize(rtol=tol, atol=tol), max_steps=SMALL_BUDGET)
    _assert_step_for_step(together, lambda b: InstanceField(P[b:b + 1], 100 * U[b:b + 1], True), y0, 1e-3, tol,
                          own_steps=False)


@pytest.mark.parametrize("tol", [1e16, 1e15])
def test_the_starting_step_when_only_the_second_derivative_is_seen(tol):
    """A state at rest to the tolerance (d0, d1 <= 1e-15 at tolerances of 1e15 and more) whose field changes fast in
    time (P(t) = cos(1e8 t) P'): f moves by ~1e-2 within h0 = 1e-6, so d2 > 1e-15 and h1 = (0.01 / d2)^(1/5) is
    taken, not the fallback for rest h1 = 1e-6 (SciPy's rule, as sim.solve): one step of 1e-4."""
    from sim.field.modulation import CosineDiagonal, Modulated

    rng = np.random.default_rng(SMALL_SEED)
    fast = CosineDiagonal(np.ones(3), np.full(3, 1e8), np.zeros(3), np.zeros(3, dtype=bool))
    field = AttentionField(P=(Modulated(5 * rng.normal(size=(3, 3)), fast),), W=np.eye(3))
    y0 = Ellipsoid().random_point(rng, (1, 3, 3))
    together = solve_field(field, y0, 1e-4, controller=AdaptiveStepSize(rtol=tol, atol=tol), max_steps=SMALL_BUDGET)
    _assert_step_for_step(together, lambda b: field, y0, 1e-4, tol, own_steps=False)
    assert together.steps.tolist() == [1]


@pytest.mark.parametrize("t0, t1", [(0.0, 1.5), (-1.0, 0.5)])
def test_a_first_guess_longer_than_the_span_is_bounded_by_the_span(t0, t1):
    """Near rest at a loose tolerance the starting step's guess (100 h0, h1) is far longer than t1 - t0 = 1.5: the
    span bounds it, and the one step lands on t1, as sim.solve's (from t0 = 0 and from a negative t0)."""
    P, U, y0 = _small_instances(2, "drawn")
    near = y0[0, :1] + 1e-6 * np.arange(9).reshape(3, 3)
    y0 = np.stack([near, near[::-1]])
    y0 /= np.linalg.norm(y0, axis=-1, keepdims=True)
    P, U = P[:2], np.broadcast_to(np.eye(3), P[:2].shape).copy()
    together = solve_instances(InstanceField(P, U, True), y0, t1, t0=t0,
                               controller=AdaptiveStepSize(rtol=1e-3, atol=1e-3), max_steps=SMALL_BUDGET)
    _assert_step_for_step(together, lambda b: InstanceField(P[b:b + 1], U[b:b + 1], True), y0, t1, 1e-3,
                          own_steps=False, t0=t0)
    assert together.steps.tolist() == [1, 1]


@pytest.mark.parametrize("t0", [0.0, 10.0])
@pytest.mark.parametrize("fraction, extra", [(0.5, 0), (0.95, 0), (1.5, 1)])
def test_a_step_ending_within_the_landing_tolerance_of_t1_lands_on_it(t0, fraction, extra):
    """t1 set ``fraction`` x 1e-12 max(1, |t0|, |t1|) past the end of the first step: within that tolerance the
    step lands on t1; beyond it one more step of about 1e-12 follows, as in sim.solve. (The first step only: later
    steps' ends differ between the two implementations by more than 1e-12 when compiled, their error norms'
    roundings compounding.)"""
    P, U, y0 = (a[:1] for a in _small_instances(2, "drawn"))
    field = InstanceField(P, U, True)
    first = solve(field, Dopri5(), t0, t0 + 1.5, y0, controller=AdaptiveStepSize(rtol=1e-7, atol=1e-7),
                  saveat=SaveAt(steps=True)).ts[1]
    t1 = first + fraction * 1e-12 * max(1.0, first)
    together = solve_instances(InstanceField(P, U, True), y0, t1, t0=t0,
                               controller=AdaptiveStepSize(rtol=1e-7, atol=1e-7), max_steps=SMALL_BUDGET)
    _assert_step_for_step(together, lambda b: field, y0, t1, 1e-7, own_steps=False, t0=t0)
    assert together.steps.tolist() == [1 + extra]


@pytest.mark.parametrize("t0, t1, tiny", [(0.0, 0.5, 1e-12), (-1e6, 0.0, 1e-6), (0.0, 1e6, 1e-6),
                                         (-4e3, -2e3, 4e-9)])
def test_the_landing_tolerance_is_sim_solves(t0, t1, tiny):
    """Times closer than 1e-12 max(1, |t0|, |t1|) are one, in the compiled loop as in sim.solve (their steps land
    on t1 alike): the spans reach the scale through |t0| alone and through |t1| alone."""
    assert compiled._settings(AdaptiveStepSize(), t0, t1, SMALL_BUDGET).tiny == pytest.approx(tiny, rel=1e-15)
    assert compiled._settings(AdaptiveStepSize(), t0, t1, SMALL_BUDGET).tiny == _tiny(t0, t1)


def test_an_error_of_exactly_1_is_accepted():
    """As scipy's rule and sim.solve's controller (tests/sim/test_controllers.py): a step is rejected only when its
    scaled error exceeds 1. Lane 0 of ``_control``, a state of 2 tokens in d = 1."""
    controller = AdaptiveStepSize()
    y0 = np.ones((1, 2, 1))
    _, lanes, work = compiled._lanes_records(InstanceField(np.ones((1, 1, 1, 1)), np.ones((1, 1, 1, 1))),
                                              compiled._modulation_arrays(None, 1, 1), False, y0)
    lanes.dt[:], lanes.step[:] = 0.1, 0.1
    work.y_next[:] = work.y
    compiled._control(0, 1.0, compiled._settings(controller, 0.0, 1.0, SMALL_BUDGET), lanes, work)
    assert (lanes.tally.steps[0], lanes.tally.rejected[0], lanes.t[0]) == (1, 0, 0.1)  # accepted, not rejected
    assert lanes.dt[0] == pytest.approx(0.1 * controller.safety)  # the step times safety * 1 ** (-1/5)


def _loop_types(monkeypatch, runs) -> list:
    """The Numba types of the records each of ``runs`` hands the compiled loop (``_dopri5_instances``), recorded by
    a stand-in for the loop (nothing is integrated or compiled)."""
    seen = []
    monkeypatch.setattr(compiled, "_dopri5_instances", lambda *records: seen.append(numba.typeof(records)))
    for run in runs:
        run()
    return seen


def _user_forms():
    """Inputs as a user may write them: integer modulation numbers and 0 / 1 sine flags, a field of one matrix
    broadcast over the instances (read-only, stride 0), a Fortran-ordered read-only y0, integer matrices."""
    rng = np.random.default_rng(SMALL_SEED)
    y0 = Ellipsoid().random_point(rng, (3, 4, 3))
    fortran = np.asfortranarray(y0)
    fortran.flags.writeable = False
    diagonal = CosineDiagonal(np.array([1, 1, 2]), np.array([3, 1, 2]), np.zeros(3, dtype=int), np.array([0, 1, 0]))
    modulated = AttentionField(P=(Modulated(np.eye(3), diagonal),), W=np.eye(3))
    matrices = np.broadcast_to(rng.uniform(-0.5, 0.5, (1, 3, 3)), (3, 1, 3, 3))
    controller = AdaptiveStepSize(rtol=1e-6, atol=1e-6)
    return [lambda: solve_field(modulated, y0, 0.1, controller=controller),
            lambda: solve_instances(InstanceField(matrices, np.broadcast_to(np.eye(3, dtype=int), matrices.shape)),
                                    fortran, 0.1, controller=controller),
            lambda: solve_field(full_attention_example(), fortran, 0.1, controller=controller, workers=2)]


def test_every_input_form_reaches_the_compiled_loop_with_the_types_compiled_ahead(monkeypatch):
    """``python -m sim compile`` (sim.solvers.ahead) compiles the loop once, for the types of its two paths; the
    integrations bring every input to those types (float64 C-contiguous writable matrices and states, float64 and
    bool modulation arrays), so a user's integers, broadcast matrices or Fortran-ordered states compile nothing new
    (each new set of types is a compilation of about 30 s in every process)."""
    ahead = _loop_types(monkeypatch, [PATHS["solve_field"], PATHS["solve_instances"]])
    assert len(set(ahead)) == 1  # the module's claim: both paths compile the same types
    assert set(_loop_types(monkeypatch, _user_forms())) == set(ahead)


def test_control_a_field_left_unconverted_reaches_the_loop_with_other_types(monkeypatch):
    """The check above sees a field whose matrices skipped InstanceField's conversion (a read-only broadcast view,
    as solve_field builds them)."""
    ahead = _loop_types(monkeypatch, [PATHS["solve_instances"]])
    rng = np.random.default_rng(SMALL_SEED)
    field = InstanceField(np.ones((2, 1, 3, 3)), np.ones((2, 1, 3, 3)))
    object.__setattr__(field, "P", np.broadcast_to(rng.uniform(-0.5, 0.5, (1, 3, 3)), (2, 1, 3, 3)))
    y0 = Ellipsoid().random_point(rng, (2, 4, 3))
    unconverted = _loop_types(monkeypatch, [lambda: solve_instances(field, y0, 0.1, controller=AdaptiveStepSize())])
    assert set(unconverted) != set(ahead)
