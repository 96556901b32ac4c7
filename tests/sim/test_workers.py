"""``solve(..., options=SolveOptions(workers=N))``: instances stepped in threads give the run of ``workers=1``."""

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from sim import AdaptiveStepSize, AttentionField, ConstantStepSize, Dopri5, Ellipsoid, RK4, SaveAt, SolveOptions, solve
from sim.figures.scenarios import causal_random_example, full_attention_example

#: Split runs differ from whole-batch runs by rounding only (BLAS blocking, and the softmax shift, which is
#: the largest score of the batch handed to the field): a few ulps of the O(1) coordinates per step.
SAME_RUN_TOL = 1e-13
#: Adaptive step sizes scale as err^(-1/5), and err (~1e-9 here) is a difference of O(1) stage values, so
#: its rounding is ~1e-16 / 1e-9 = 1e-7 of itself: step sizes, hence the states between steps, may differ
#: by ~1e-8 relative. (Measured: 6e-12 in time, 4e-13 in state.) Both runs land exactly on t1, where they
#: agree to the solver's rounding, SAME_RUN_TOL.
STEP_SIZE_RTOL = 1e-8


@pytest.mark.parametrize("workers", [2, 3])
def test_adaptive_run_with_workers_takes_the_same_steps(workers):
    field = full_attention_example()
    y0 = Ellipsoid().random_point(np.random.default_rng(5), (7, 10, 3))  # 7 instances: uneven groups
    options = dict(controller=AdaptiveStepSize(rtol=1e-8, atol=1e-8), saveat=SaveAt(steps=True))
    alone = solve(field, Dopri5(), 0.0, 2.0, y0, **options)
    split = solve(field, Dopri5(), 0.0, 2.0, y0, options=SolveOptions(workers=workers), **options)
    assert (split.steps, split.rejected_steps, split.evaluations) == (alone.steps, alone.rejected_steps,
                                                                      alone.evaluations)
    np.testing.assert_allclose(split.ts, alone.ts, rtol=STEP_SIZE_RTOL, atol=0)
    np.testing.assert_allclose(split.ys, alone.ys, rtol=0, atol=STEP_SIZE_RTOL)
    np.testing.assert_allclose(split.ys[-1], alone.ys[-1], rtol=0, atol=SAME_RUN_TOL)
    assert split.stats["workers"] == workers and split.max_drift <= 1e-12


def test_fixed_step_causal_run_with_workers():
    example = causal_random_example(4, dim=20)
    y0 = Ellipsoid().random_point(np.random.default_rng(6), (4, 6, 20))
    alone = solve(example.field, RK4(), 0.0, 1.0, y0, controller=ConstantStepSize(0.05))
    split = solve(example.field, RK4(), 0.0, 1.0, y0, controller=ConstantStepSize(0.05),
                  options=SolveOptions(workers=2))
    assert split.evaluations == alone.evaluations == 80  # 20 steps x 4 stages, counted once per whole batch
    np.testing.assert_allclose(split.ys, alone.ys, rtol=0, atol=SAME_RUN_TOL)


def test_more_workers_than_instances_and_a_single_instance():
    field = full_attention_example()
    y0 = Ellipsoid().random_point(np.random.default_rng(7), (10, 3))
    alone = solve(field, RK4(), 0.0, 0.5, y0, controller=ConstantStepSize(0.05))
    assert solve(field, RK4(), 0.0, 0.5, y0, controller=ConstantStepSize(0.05),
                 options=SolveOptions(workers=4)).stats["workers"] == 1
    two = solve(field, RK4(), 0.0, 0.5, np.stack([y0, y0]), controller=ConstantStepSize(0.05),
                options=SolveOptions(workers=4))
    assert two.stats["workers"] == 2
    np.testing.assert_allclose(two.ys[-1, 1], alone.ys[-1], rtol=0, atol=SAME_RUN_TOL)


def test_blas_threads_are_restored_after_a_run_with_workers():
    before = [info["num_threads"] for info in threadpool_info()]
    field = full_attention_example()
    solve(field, RK4(), 0.0, 0.1, Ellipsoid().random_point(np.random.default_rng(8), (4, 10, 3)),
          controller=ConstantStepSize(0.05), options=SolveOptions(workers=2))
    assert [info["num_threads"] for info in threadpool_info()] == before


def test_non_finite_instance_in_one_worker_stops_the_run():
    def field(t, y):
        out = np.zeros_like(y)
        out[-1] = np.nan  # the last instance only: it lands in the second worker's group
        return out

    field.manifold = Ellipsoid()
    y0 = Ellipsoid().random_point(np.random.default_rng(9), (4, 5, 3))
    with pytest.raises(FloatingPointError, match="non-finite at t=0"):
        solve(field, RK4(), 0.0, 1.0, y0, controller=ConstantStepSize(0.1), options=SolveOptions(workers=2))
    with pytest.raises(FloatingPointError, match="non-finite at t=0"):
        solve(field, Dopri5(), 0.0, 1.0, y0, controller=AdaptiveStepSize(dt0=0.1), options=SolveOptions(workers=2))


@pytest.mark.parametrize("workers", [0, -1, 1.5])
def test_bad_worker_counts_are_rejected(workers):
    field = AttentionField(P=(np.eye(3),))
    y0 = Ellipsoid().random_point(np.random.default_rng(10), (2, 4, 3))
    with pytest.raises(ValueError, match="workers"):
        solve(field, RK4(), 0.0, 1.0, y0, controller=ConstantStepSize(0.1), options=SolveOptions(workers=workers))


@pytest.mark.parametrize("workers", [1, 2])
def test_a_batch_stepped_in_parts_takes_the_same_steps(workers, monkeypatch):
    """Batches larger than ``PART_BYTES`` are stepped in parts (here of at most 5 of the 13 instances, their count a
    multiple of the workers', shared out as the workers come free): the same steps, step sizes and states as the
    whole batch in one part."""
    import sim.solvers.stepper

    field = full_attention_example()
    y0 = Ellipsoid().random_point(np.random.default_rng(9), (13, 10, 3))
    options = dict(controller=AdaptiveStepSize(rtol=1e-8, atol=1e-8), saveat=SaveAt(steps=True),
                   options=SolveOptions(workers=workers))
    whole = solve(field, Dopri5(), 0.0, 2.0, y0, **options)
    assert whole.stats["parts"] == workers
    monkeypatch.setattr(sim.solvers.stepper, "PART_BYTES", 5 * y0[0].nbytes)
    parts = solve(field, Dopri5(), 0.0, 2.0, y0, **options)
    assert parts.stats["parts"] == {1: 3, 2: 4}[workers] and parts.stats["workers"] == workers
    assert (parts.steps, parts.rejected_steps, parts.evaluations) == (whole.steps, whole.rejected_steps,
                                                                      whole.evaluations)
    np.testing.assert_allclose(parts.ys, whole.ys, rtol=0, atol=STEP_SIZE_RTOL)
    np.testing.assert_allclose(parts.ys[-1], whole.ys[-1], rtol=0, atol=SAME_RUN_TOL)
