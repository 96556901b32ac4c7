"""``consensus gpu-checks``: the one GPU script (consensus/gpu_script.py), its steps and its record, run here with
stand-in steps (the real ones take minutes on a GPU; ``--tiny`` is their smoke test, docs/gpu.md)."""

import json

import pytest

from consensus import cli, gpu_script
from consensus.gpu_script import Step, steps


def test_the_steps_cover_the_protocol_and_the_peers_on_the_gpu_and_on_every_core(tmp_path):
    names = {step.name: step.argv for step in steps(tmp_path, tiny=False, cuda=True, cores=16)}
    assert list(names) == ["cuda-tests.xml", "gpu-checks.json", "peers-cuda.json", "peers-cpu-16.json",
                           "peers-cpu-1.json"]
    assert names["cuda-tests.xml"][:3] == ("pytest", "-m", "cuda") and names["cuda-tests.xml"][-1].endswith("tests")
    assert names["gpu-checks.json"][:2] == ("empirical", "gpu-checks") and "--tiny" not in names["gpu-checks.json"]
    assert names["peers-cuda.json"][-6:-2] == ("--device", "cuda", "--threads", "16")
    assert "--quick" not in names["peers-cuda.json"] and names["peers-cpu-1.json"][-4:-2] == ("--threads", "1")
    # the smoke test: the same steps at their smallest sizes, on the CPU
    tiny = {step.name: step.argv for step in steps(tmp_path, tiny=True, cuda=False, cores=2)}
    assert list(tiny) == ["cuda-tests.xml", "gpu-checks.json", "peers-cpu.json", "peers-cpu-2.json", "peers-cpu-1.json"]
    assert "--tiny" in tiny["gpu-checks.json"] and all("--quick" in argv for argv in list(tiny.values())[2:])


def test_the_cuda_tests_run_first_from_a_checkout_and_are_left_out_of_an_installed_package(tmp_path, monkeypatch):
    """Their step names only tests marked ``cuda``: collected here, every one is skipped for want of a device, with
    its reason (none passes silently); without a checkout's tests/ the step is not in the list."""
    import subprocess
    import sys

    (step, *_) = steps(tmp_path, tiny=True, cuda=False, cores=2)
    done = subprocess.run([sys.executable, "-m", *step.argv, "-rs"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
    import torch

    if not torch.cuda.is_available():
        assert " passed" not in done.stdout and "skipped" in done.stdout and "needs a CUDA device" in done.stdout
    assert (tmp_path / "cuda-tests.xml").is_file()
    monkeypatch.setattr(gpu_script, "CHECKOUT_TESTS", tmp_path / "no-tests-here")
    assert [s.name for s in steps(tmp_path, tiny=True, cuda=False, cores=2)][0] == "gpu-checks.json"


def test_a_failing_step_is_recorded_and_the_others_still_run(tmp_path, monkeypatch):
    ok = Step("ok.json", ("json.tool", "--help"))
    bad = Step("bad.json", ("sim", "bench", "--part", "nope"))
    monkeypatch.setattr(gpu_script, "steps", lambda out, **options: (bad, ok))
    monkeypatch.setattr(gpu_script, "_cuda", lambda: True)
    lines = []
    assert gpu_script.run(tmp_path, report=lines.append) == 1
    record = json.loads((tmp_path / "gpu-script.json").read_text())
    assert [(s["name"], s["exit_status"]) for s in record["steps"]] == [("bad.json", 2), ("ok.json", 0)]
    assert any("invalid choice" in line for line in record["steps"][0]["output_tail"])
    assert lines[-1].endswith("FAILED: bad.json")
    # control: the good step alone
    monkeypatch.setattr(gpu_script, "steps", lambda out, **options: (ok,))
    assert gpu_script.run(tmp_path, report=lines.append) == 0 and lines[-1].endswith("all ok")


def test_without_a_gpu_only_the_smoke_test_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(gpu_script, "_cuda", lambda: False)
    assert cli.main(["gpu-checks", "--out", str(tmp_path / "x")]) == 2
    captured = capsys.readouterr()
    assert "error: no CUDA device here" in captured.err and "--tiny" in captured.err and captured.out == ""
    assert not (tmp_path / "x").exists()


def test_the_command_is_routed_with_its_name(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["gpu-checks", "--help"])
    assert stop.value.code == 0 and capsys.readouterr().out.startswith("usage: consensus gpu-checks ")


def test_chosen_steps_run_alone_and_an_unknown_one_is_refused(tmp_path, monkeypatch, capsys):
    ran = []
    monkeypatch.setattr(gpu_script, "_cuda", lambda: True)
    monkeypatch.setattr(gpu_script.subprocess, "Popen", lambda argv, **options: ran.append(argv) or _Done())
    assert gpu_script.run(tmp_path, only=("peers-cpu-1.json",), report=lambda line: None) == 0
    assert len(ran) == 1 and ran[0][-1].endswith("peers-cpu-1.json")
    assert gpu_script.run(tmp_path, only=("nope.json",), report=lambda line: None) == 2
    assert "error: no step nope.json" in capsys.readouterr().err


class _Done:
    """A finished process with no output (the stand-in of subprocess.Popen above)."""

    stdout, returncode = (), 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
