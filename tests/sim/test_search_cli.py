"""``python -m sim search`` on Dask: worker-count independence and clear errors for bad input."""

import json
import time

import pytest

from sim.__main__ import main
from sim.conjectures.distributed import run_search


def _without_timing(summary):
    return {k: v for k, v in summary.items() if k != "timing"}


def _chunks(folder):
    return [{k: v for k, v in json.loads(p.read_text()).items() if k != "seconds"}
            for p in sorted((folder / "chunks").glob("chunk-*.json"))]


@pytest.mark.full  # two LocalClusters of worker processes: about 2 minutes on this shared 2-core machine
def test_results_do_not_depend_on_the_number_of_workers(tmp_path):
    one = run_search("conj.gradient-equilibria", 6, tmp_path / "one", chunk_size=2, workers=1, adversarial=False,
                     progress=False)
    two = run_search("conj.gradient-equilibria", 6, tmp_path / "two", chunk_size=2, workers=2, adversarial=False,
                     progress=False)
    assert _without_timing(one) == _without_timing(two)
    assert _chunks(tmp_path / "one") == _chunks(tmp_path / "two") and len(_chunks(tmp_path / "one")) == 3
    # control: another chunking draws other instances, and the comparison sees it
    three = run_search("conj.gradient-equilibria", 6, tmp_path / "three", chunk_size=3, adversarial=False,
                       progress=False)
    assert _chunks(tmp_path / "three") != _chunks(tmp_path / "one")


def test_cli_writes_the_summary(tmp_path, capsys):
    assert main(["search", "--json", "--method", "random", "conj.gradient-equilibria", "--instances", "2", "--chunk-size", "2", "--out",
                 str(tmp_path), "--no-adversarial", "--quiet"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["result"].startswith("no certified counterexample in 2 instances (random sampling, 2 integrated")
    assert printed["summary"] == str(tmp_path / "summary.json")
    assert printed["witnesses"] == []  # the paths of the witness files, none for a supported conjecture
    assert json.loads((tmp_path / "summary.json").read_text())["instances"] == 2


def test_cli_rejects_an_unknown_claim(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["search", "--method", "random", "conj.nope", "--instances", "2", "--out", str(tmp_path / "x")])
    assert exit_.value.code == 2
    assert "'conj.nope' is not a conjecture with a search; known: conj.multihead-causal" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("value", ["0", "-3", "many"])
def test_cli_rejects_a_non_positive_instance_count(tmp_path, capsys, value):
    with pytest.raises(SystemExit):
        main(["search", "--method", "random", "conj.value-full", "--instances", value, "--out", str(tmp_path / "x")])
    assert "--instances" in capsys.readouterr().err and not (tmp_path / "x").exists()


def test_cli_reports_a_scheduler_that_does_not_answer(tmp_path, capsys):
    started = time.monotonic()
    code = main(["search", "--method", "random", "conj.value-full", "--instances", "2", "--out", str(tmp_path / "x"),
                 "--scheduler", "tcp://127.0.0.1:9"])
    elapsed = time.monotonic() - started
    assert code == 2
    assert "--scheduler tcp://127.0.0.1:9: no Dask scheduler answered within 5 s" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()  # nothing half-written
    # A reliability bound, not a speed target: the connection attempt gives up after CONNECT_TIMEOUT = 5 s; 30 s
    # leaves room for a loaded machine while still failing a hang (Dask's default is 30 s per attempt, retried).
    assert elapsed < 30
