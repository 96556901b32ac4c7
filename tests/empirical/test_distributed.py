"""``python -m empirical suite --scheduler``: one variant per Dask task, resuming when a worker dies."""

import json
import os
import signal
import time

import pytest

from empirical.__main__ import main
from empirical.distributed import run_suite
from empirical.run import load_results
from empirical.suite import Variant, run_variant

#: Tiny models with random weights: long enough runs (hundreds of passes) to kill a worker in the middle of one.
LONG = Variant("tiny-gpt2-random-no-ffn", "tiny-gpt2", "random", False, prompts=2, length=16, passes=150,
               figure="Fig. 9")
SHORT = Variant("tiny-gpt-neo-random-ffn", "tiny-gpt-neo", "random", True, prompts=2, length=16, passes=20,
                figure="Fig. 9")


def _passes_done(folder):
    try:
        return json.loads((folder / "manifest.json").read_text()).get("passes_done", 0)
    except (OSError, ValueError):
        return 0


@pytest.mark.full  # a LocalCluster of 2 worker processes, one killed and restarted: 1-4 minutes on this shared machine
def test_a_killed_worker_loses_and_duplicates_nothing(tmp_path):
    from distributed import Client, LocalCluster

    root = tmp_path / "cluster"
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        future = client.submit(run_suite_task_probe, 0)  # warm the workers' imports before timing the kill
        future.result()
        import threading

        outcome = {}
        thread = threading.Thread(target=lambda: outcome.update(
            summaries=run_suite([LONG, SHORT], root, scheduler=cluster.scheduler_address, progress=False)))
        thread.start()
        deadline = time.monotonic() + 300
        while _passes_done(root / LONG.key) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        killed_at = _passes_done(root / LONG.key)
        assert 3 <= killed_at < LONG.passes, killed_at
        running = [address for address, keys in client.processing().items()
                   if any(str(k).startswith(f"variant-{LONG.key}") for k in keys)]
        assert running, client.processing()
        pid = client.run(os.getpid, workers=running)[running[0]]
        os.kill(pid, signal.SIGKILL)
        thread.join(timeout=600)
    assert not thread.is_alive() and "summaries" in outcome
    summaries = {s["key"]: s for s in outcome["summaries"]}
    assert summaries[LONG.key]["passes"] == LONG.passes and summaries[SHORT.key]["passes"] == SHORT.passes
    # the same variants without a cluster, uninterrupted: every number equal (nothing lost, nothing twice)
    for variant in (LONG, SHORT):
        _, alone = run_variant(variant, tmp_path / "alone", progress=False)
        _, resumed = load_results(root / variant.key)
        assert len(resumed["E"][0]) == variant.passes * resumed["layers"] + 1
        assert resumed["E"] == alone["E"], variant.key


def run_suite_task_probe(x):
    import empirical.suite  # noqa: F401  (imports torch and transformers once per worker)

    return x


def test_suite_reports_a_scheduler_that_does_not_answer(tmp_path, capsys):
    code = main(["suite", "--only", "smollm2-trained-no-ffn", "--scheduler", "tcp://127.0.0.1:9",
                 "--out", str(tmp_path / "runs")])
    assert code == 2 and "no Dask scheduler answered" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_suite_tls_files_need_a_scheduler_and_all_three(tmp_path, capsys):
    """`suite` takes the TLS files of `search` (foundation/dask_tls.py): without --scheduler, or with one of the three
    missing, it is refused in one line before anything runs (the TLS connection: tests/sim/test_search_tls.py)."""
    from empirical.cli import main

    pem = tmp_path / "x.pem"
    pem.write_text("not a certificate")
    only = ["suite", "--only", "smollm2-trained-no-ffn"]
    assert main([*only, "--tls-cert", str(pem), "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "go with --scheduler" in err[0]
    assert main([*only, "--scheduler", "tls://127.0.0.1:9", "--tls-cert", str(pem), "--tls-ca-file", str(pem),
                 "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--tls-key is missing" in err[0]
    assert not (tmp_path / "a").exists() and not (tmp_path / "b" / "smollm2-trained-no-ffn").exists()


TINY = Variant("tiny-gpt2-random-no-ffn", "tiny-gpt2", "random", False, prompts=2, length=8, passes=3, figure="Fig. 9")


def test_two_suites_on_one_scheduler_each_run_their_own_variant(tmp_path):
    """The referee's case: two suites on one cluster, the same variant into two folders in two dtypes, both in
    flight. Their tasks had the same Dask key (variant and seed), so the second was handed the first one's result and
    wrote nothing; under :func:`task_key` each writes its own folder in its own dtype."""
    from distributed import Client, LocalCluster

    from empirical.distributed import VariantOptions, _task, task_key

    suites = [(str(tmp_path / "a"), VariantOptions(dtype="float32")),
              (str(tmp_path / "b"), VariantOptions(dtype="float64"))]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        futures = [client.submit(_task, TINY, root, options, key=task_key(TINY, root, options))
                   for root, options in suites]
        summaries = client.gather(futures)
    assert [s["dtype"] for s in summaries] == ["float32", "float64"]
    for (root, options), summary in zip(suites, summaries):
        manifest, results = load_results(tmp_path / root / TINY.key)
        assert summary["folder"] == f"{root}/{TINY.key}" and manifest["dtype"] == options.dtype
        assert results["passes"] == TINY.passes


def test_a_task_key_names_the_folder_and_every_option():
    from empirical.distributed import VariantOptions, task_key

    base = task_key(TINY, "/runs/a", VariantOptions())
    assert base.startswith(f"variant-{TINY.key}-") and base == task_key(TINY, "/runs/a", VariantOptions())
    others = [task_key(TINY, "/runs/b", VariantOptions()), task_key(TINY, "/runs/a", VariantOptions(dtype="float64")),
              task_key(TINY, "/runs/a", VariantOptions(device="cuda")),
              task_key(TINY, "/runs/a", VariantOptions(seed=1)), task_key(TINY, "/runs/a", VariantOptions(decide=True))]
    assert len({base, *others}) == 6
