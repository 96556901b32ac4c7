"""The one script of GPU checks (`python -m empirical gpu-checks`), run here on tiny models (--tiny)."""

import json

import pytest

from empirical.__main__ import main
from empirical.gpu_checks import END_TO_END_TARGET, GEMM_BOUND_TARGET, PHASES, grid


def test_the_gpu_checks_run_on_tiny_models_and_write_their_measurements(tmp_path, capsys):
    out = tmp_path / "gpu.json"
    assert main(["gpu-checks", "--tiny", "--passes", "2", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["complete"] is True and result["device_start_s"] >= 0
    assert result["resume"]["identical"] is True
    assert [run["key"] for run in result["runs"]] == [check.key for check in grid(tiny=True)]
    for run in result["runs"]:
        assert run["passes"] == 2 and run["prompts"] == 4
        assert 0 < run["model_build_s"] and 0 < run["loop_s"] < run["end_to_end_s"] <= run["wall_s"]
        assert all(run[phase] >= 0 for phase in PHASES) and run["other_s"] >= 0  # the phases do not overlap
        assert run["E_floor"] == run["floor"]["E_floor"] > 0
    floors = {run["dtype"]: run["E_floor"] for run in result["runs"] if run["model"] == "tiny-gpt-neo"}
    assert floors["bfloat16"] > 10 * floors["float32"]  # bfloat16 keeps 8 bits of mantissa, float32 24
    # every run carries a float64 twin of its first prompts and records the effective floor
    assert result["twin_prompts"] == 2
    for run in result["runs"]:
        layers = (len(run["twin_divergence_per_block"]) - 1) // 2
        assert run["twin_prompts"] == 2 and run["twin_s"] > 0 and len(run["twin_divergence_pass_max"]) == 2
        assert run["effective_floor"] == max(run["E_floor"], run["twin_divergence_max"]) > 0
        assert run["twin_divergence_max"] == max(run["twin_divergence_per_block"]) > 0 and layers >= 1
        assert len(run["twin_E_pass_end_float64"]) == len(run["twin_E_pass_end_run"]) == 3
    divergence = {run["dtype"]: run["twin_divergence_max"] for run in result["runs"] if run["model"] == "tiny-gpt-neo"}
    assert divergence["bfloat16"] > 100 * divergence["float32"]  # the twin tells bfloat16's rounding from float32's
    assert set(result["effective_floor_per_dtype"]) == set(result["E_floor_per_dtype"])
    speed = [run for run in result["runs"] if "targets" in run]
    assert [len(run["targets"]) for run in speed] == [3, 2]  # the GEMM bound's target: float32 alone
    assert f"end_to_end <= {END_TO_END_TARGET:g} x loop" in speed[0]["targets"]
    assert f"loop <= {GEMM_BOUND_TARGET:g} x GEMM bound" in speed[0]["targets"]
    # every run against its GEMM bound, the redraws timed apart
    for run in result["runs"]:
        bound = run["gemm_bound"]
        assert bound["passes"] == 2 and bound["bound_s"] > 0 and bound["dtype"] == run["dtype"]
        assert run["loop_with_draws_over_gemm_bound"] * bound["bound_s"] == pytest.approx(run["loop_s"] - run["twin_s"])
        assert (run["draws_s"] > 0) == (run["weights"] == "redrawn")
        assert run["loop_over_gemm_bound"] < run["loop_with_draws_over_gemm_bound"] or run["weights"] != "redrawn"
    # the draw of a redrawn pass, piece by piece, on the redrawn run's model
    draw = result["draw_breakdown"]
    assert draw["model"] == "tiny-gpt-neo" and draw["dtype"] == "float32" and draw["parameter_bytes"] > 0
    assert all(len(draw["timings"][key]) == draw["repeats"] == 3 and draw[key] > 0
               for key in ("initialiser_s", "check_s", "plain_draw_s"))
    assert draw["plain_draw_check"]["random_parameters"] > 0 and draw["plain_draw_check"]["checked_against_previous"]
    # the resume check, a line per run, the draw's line, then the file
    assert len(capsys.readouterr().out.splitlines()) == 7


def test_gpu_checks_on_cuda_without_cuda_is_an_error(tmp_path, capsys):
    import pytest
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert main(["gpu-checks", "--tiny", "--device", "cuda", "--out", str(tmp_path / "x.json")]) == 2
    assert "CUDA is not available" in capsys.readouterr().err


def test_a_cut_off_call_keeps_the_runs_it_finished(tmp_path, monkeypatch):
    """The device's time limit kills a call mid-grid: the file written after each run holds the finished ones."""
    import pytest

    from empirical import gpu_checks

    finished = []
    real = gpu_checks._measure

    def measure_then_die(check, settings, folder):
        if finished:
            raise KeyboardInterrupt  # what a time limit's kill looks like from inside
        finished.append(check.key)
        return real(check, settings, folder)

    monkeypatch.setattr(gpu_checks, "_measure", measure_then_die)
    out = tmp_path / "gpu.json"
    with pytest.raises(KeyboardInterrupt):
        gpu_checks.run_checks(out, tiny=True, passes=1, report=lambda line: None)
    result = json.loads(out.read_text())
    assert result["complete"] is False and [run["key"] for run in result["runs"]] == finished
    assert len(result["summary"]) == 1


def test_the_resume_check_tells_a_resumed_run_that_differs(tmp_path, monkeypatch):
    """The control: a checkpoint whose hidden state is not the one the run reached (as one saved before its
    asynchronous copy landed would be) is reported as different numbers."""
    from empirical import gpu_checks, run

    save = run.Checkpoint.save
    monkeypatch.setattr(run.Checkpoint, "save",
                        lambda self, passes, hidden, E, *rest, **named: save(self, passes, hidden + 0.5 * hidden.std(),
                                                                             E, *rest, **named))
    assert gpu_checks.resume_check("cpu", tmp_path)["identical"] is False


def test_the_resume_check_tells_a_resumed_twin_that_differs(tmp_path, monkeypatch):
    """The same control for the float64 twin's state: the run's E resumes right, the twin's does not."""
    from empirical import gpu_checks, run

    save = run.Checkpoint.save

    def shifted(self, passes, hidden, E, *rest, twin=None, **named):
        return save(self, passes, hidden, E, *rest, twin={**twin, "hidden": twin["hidden"] * 1.5}, **named)

    monkeypatch.setattr(run.Checkpoint, "save", shifted)
    assert gpu_checks.resume_check("cpu", tmp_path)["identical"] is False


@pytest.mark.parametrize("name", ["tiny-gpt2", "tiny-gpt-neo"])
def test_a_plain_draw_draws_what_the_initialiser_prescribes(name):
    """The yardstick of the draw's timing draws each parameter from its initialiser's distribution (GPT-2's scaled
    residual projections included): ``verify_draw`` accepts it; the control, every std doubled, it refuses."""
    import torch

    from empirical.adapters import adapter_for
    from empirical.draw_timing import plain_draw
    from empirical.fingerprints import fingerprint
    from empirical.models import build_random, verify_draw

    model = build_random(name, 0, device="cpu")
    adapter = adapter_for(model)
    before = fingerprint(model, statistics=False)
    plain_draw(adapter, 1)
    assert verify_draw(adapter, before)["random_parameters"] > 0
    state = torch.get_rng_state()
    plain_draw(adapter, 2)
    assert torch.equal(torch.get_rng_state(), state)  # the global RNG state is restored
    expected = adapter.expected_init
    adapter.expected_init = lambda n, p: (lambda kind, value: (kind, 2 * value if kind == "normal" else value))(
        *expected(n, p))
    plain_draw(adapter, 3)
    adapter.expected_init = expected
    with pytest.raises(RuntimeError, match="expected normal"):
        verify_draw(adapter, None)
