"""Bad input, as a careless or hostile user types it, across the commands and the Python API: every row ends in exit
status 2 (a ``ValueError`` for the API) with one line naming the argument and what must hold, never a traceback
(SPEC section 8; issue 37, item 4). The controls: the same commands with good values run (``test_..._controls``)."""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
from pathlib import Path

import numpy as np
import pytest

import empirical.cli  # noqa: F401  (imported before the commands run: no import-time output in their stderr)
import reports.__main__  # noqa: F401
import sim.__main__  # noqa: F401
from consensus import cli

TINY = ["--model", "tiny-llama", "--weights", "random", "--prompts", "2", "--length", "8", "--device", "cpu",
        "--quiet"]
SEARCH = ["search", "conj.gradient-equilibria", "--method", "random", "--instances", "2", "--chunk-size", "2", "--no-adversarial", "--quiet"]


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    """Files and folders the rows point at: a finished 3-pass run, a search folder, witnesses, a GGUF header, a
    read-only folder, a plain file."""
    root = tmp_path_factory.mktemp("bad-input")
    assert cli.main(["run", *TINY, "--passes", "3", "--out", str(root / "run3")]) == 0
    assert cli.main([*SEARCH, "--out", str(root / "search")]) == 0
    (root / "header.gguf").write_bytes(b"GGUF" + (3).to_bytes(4, "little") + bytes(8))  # 16 bytes: a header only
    (root / "notes.txt").write_text("a file")
    (root / "not-json.json").write_text("{")
    good = {"claim": "conj.value-full", "P": [[[1, 0], [0, 1]]], "U": [[[1, 0], [0, 1]]], "causal": False,
            "equilibrium": [[1, 0]], "y0": [[1, 0]]}
    (root / "unknown-claim.json").write_text(json.dumps({**good, "claim": "conj.nope"}))
    (root / "no-keys.json").write_text(json.dumps({"claim": "conj.value-full"}))
    (root / "read-only").mkdir()
    (root / "read-only").chmod(stat.S_IRUSR | stat.S_IXUSR)
    yield root
    (root / "read-only").chmod(0o755)


def _read_only(root: Path) -> Path:
    """A folder this user cannot create files in: a read-only one; for root, who may write into any folder of a
    normal file system, sysfs, which accepts no new files from anyone."""
    return Path("/sys") if os.geteuid() == 0 else root / "read-only"


def _chunk_without_witnesses(root: Path) -> Path:
    from foundation.files import sha256

    folder = root / "search-no-witnesses"
    if not folder.exists():
        shutil.copytree(root / "search", folder)
        chunk = folder / "chunks" / "chunk-00000.json"
        chunk.write_text(json.dumps({k: v for k, v in json.loads(chunk.read_text()).items() if k != "witnesses"}))
        (folder / "chunks" / "index.json").write_text(json.dumps({chunk.name: sha256(chunk)}))
    return folder


def _copy(root: Path, name: str) -> Path:
    """A fresh copy of the folder ``name`` (rows must not change what the others see)."""
    target = root / f"{name}-copy-{len(list(root.iterdir()))}"
    shutil.copytree(root / name, target)
    return target


#: (arguments of ``consensus`` given the fixture's folder, a regular expression the one error line must match)
ROWS = [
    # consensus run
    (lambda p: ["run", *TINY, "--model", str(p / "header.gguf"), "--out", str(p / "o")], r"--model .*header.gguf"),
    (lambda p: ["run", *TINY, "--seed", str(2**70), "--out", str(p / "o")], r"--seed 1180591620717411303424 must"),
    (lambda p: ["run", *TINY, "--seed", "-1", "--out", str(p / "o")], r"--seed -1 must be an integer in 0"),
    (lambda p: ["run", *TINY, "--passes", str(10**12), "--out", str(p / "o")], r"--passes 1000000000000 must be at most"),
    (lambda p: ["run", *TINY, "--prompts", str(10**9), "--out", str(p / "o")], r"--prompts 1000000000 must be at most"),
    (lambda p: ["run", *TINY, "--prompt-seed", "-5", "--out", str(p / "o")], r"--prompt-seed -5 must be an integer in 0"),
    (lambda p: ["run", *TINY, "--prompt-seed", str(2**70), "--out", str(p / "o")], r"--prompt-seed .* must be an"),
    (lambda p: ["run", *TINY, "--prompts", "0", "--out", str(p / "o")], r"--prompts 0 must be a positive integer"),
    (lambda p: ["run", *TINY, "--length", "0", "--out", str(p / "o")], r"--length 0 must be a positive integer"),
    (lambda p: ["run", *TINY, "--length", "100000", "--out", str(p / "o")], r"--length 100000 is longer than"),
    (lambda p: ["run", *TINY, "--passes", "-1", "--out", str(p / "o")], r"--passes -1 must be a positive integer"),
    (lambda p: ["run", *TINY, "--passes", "two", "--out", str(p / "o")], r"argument --passes: invalid int value"),
    (lambda p: ["run", *TINY, "--device", "tpu", "--out", str(p / "o")], r"argument --device: invalid choice"),
    (lambda p: ["run", *TINY, "--dtype", "float8", "--out", str(p / "o")], r"argument --dtype: invalid choice"),
    (lambda p: ["run", *TINY, "--weights", "pretrained", "--out", str(p / "o")], r"argument --weights: invalid choice"),
    (lambda p: ["run", *TINY, "--model", "no-such-model-xyz", "--out", str(p / "o")], r"no-such-model-xyz"),
    (lambda p: ["run", *TINY, "--model", str(p / "missing-folder"), "--out", str(p / "o")], r"missing-folder"),
    (lambda p: ["run", *TINY, "--threshold", "20", "--out", str(p / "o")], r"threshold=20.0 must lie in \(0, 10\)"),
    (lambda p: ["run", *TINY, "--window", "0", "--until-decided", "--out", str(p / "o")], r"window"),
    (lambda p: ["run", *TINY, "--attn-implementation", "magic", "--out", str(p / "o")],
     r"argument --attn-implementation: invalid choice"),
    (lambda p: ["run", *TINY, "--out", str(p / "notes.txt")], r"--out .*notes.txt must be a folder; it is a file"),
    (lambda p: ["run", *TINY, "--out", str(_read_only(p) / "o")], r"--out .*/o must be a folder this user can write"),
    (lambda p: ["run", *TINY, "--passes", "2", "--out", str(_copy(p, "run3"))],
     r"--passes 2 is fewer than the 3 passes"),
    (lambda p: ["run", *TINY, "--out"], r"argument --out: expected one argument"),
    # consensus prompts
    (lambda p: ["prompts", "--n", "-1"], r"--n -1 must be a positive integer"),
    (lambda p: ["prompts", "--n", "0"], r"--n 0 must be a positive integer"),
    (lambda p: ["prompts", "--n", str(10**9)], r"--n 1000000000 must be at most"),
    (lambda p: ["prompts", "--vocab-size", "0"], r"--vocab-size 0 must be a positive integer"),
    (lambda p: ["prompts", "--vocab-size", "-3"], r"--vocab-size -3 must be a positive integer"),
    (lambda p: ["prompts", "--length", "0"], r"--length 0 must be a positive integer"),
    (lambda p: ["prompts", "--length", str(10**9)], r"--length 1000000000 must be at most"),
    (lambda p: ["prompts", "--seed", "-5"], r"--seed -5 must be an integer in 0"),
    (lambda p: ["prompts", "--seed", str(2**70)], r"--seed 1180591620717411303424 must be an integer in 0"),
    (lambda p: ["prompts", "--n", "many"], r"argument --n: invalid int value"),
    # consensus plot
    (lambda p: ["plot", str(p / "run3"), "--out", str(_read_only(p) / "E.png")], r"--out .* must be a folder this user can write to"),
    (lambda p: ["plot", str(p / "run3"), "--out", str(p / "x.json")], r"--out .*x.json must end in .png"),
    (lambda p: ["plot", str(p / "run3"), "--out", str(p / "notes.txt" / "E.png")], r"--out .*notes.txt .*is a file"),
    (lambda p: ["plot", str(p / "missing-run"), "--out", str(p / "E.png")], r"missing-run is not a folder"),
    (lambda p: ["plot", str(p / "notes.txt"), "--out", str(p / "E.png")], r"notes.txt is not a folder"),
    (lambda p: ["plot", str(p / "search"), "--out", str(p / "E.png")], r"search has no manifest.json: it is not a run folder"),
    # consensus search
    (lambda p: [*SEARCH, "--out", str(p / "s"), "--scheduler", "not an address"],
     r"--scheduler 'not an address' must be an address tcp://HOST:PORT"),
    (lambda p: [*SEARCH, "--out", str(p / "s"), "--scheduler", "tcp://127.0.0.1"], r"--scheduler .* must be an address"),
    (lambda p: [*SEARCH, "--out", str(p / "s"), "--scheduler", "http://127.0.0.1:80"], r"--scheduler .* must be an"),
    (lambda p: ["search", "conj.value-full", "--instances", str(10**10), "--out", str(p / "s")],
     r"argument --instances: 10000000000 must be at most"),
    (lambda p: ["search", "conj.value-full", "--instances", "0", "--out", str(p / "s")], r"argument --instances: 0"),
    (lambda p: [*SEARCH, "--chunk-size", "0", "--out", str(p / "s")], r"argument --chunk-size: 0 must be a positive"),
    (lambda p: [*SEARCH, "--workers", "0", "--out", str(p / "s")], r"argument --workers: 0 must be a positive"),
    (lambda p: [*SEARCH, "--workers", str(10**6), "--out", str(p / "s")], r"argument --workers: 1000000 must be at"),
    (lambda p: ["search", "conj.nope", "--instances", "2", "--out", str(p / "s")], r"'conj.nope' is not a conjecture"),
    (lambda p: [*SEARCH, "--out", str(p / "s"), "--scheduler", "tls://127.0.0.1:9", "--tls-cert", "c.pem"],
     r"--tls-ca-file is missing"),
    (lambda p: [*SEARCH, "--out", str(p / "s"), "--scheduler", "tls://127.0.0.1:9", "--tls-ca-file",
                str(p / "none.pem"), "--tls-cert", "c.pem", "--tls-key", "k.pem"], r"--tls-ca-file .*none.pem must be"),
    (lambda p: [*SEARCH, "--out", str(p / "s"), "--scheduler", "tls://127.0.0.1:9"], r"a tls:// address needs"),
    (lambda p: [*SEARCH, "--out", str(p / "notes.txt")], r"--out .*notes.txt must be a folder; it is a file"),
    (lambda p: [*SEARCH, "--out", str(_chunk_without_witnesses(p))], r"chunk-00000.json must be a chunk's record .*"
     r"missing witnesses"),
    # consensus replay
    (lambda p: ["replay", str(p / "missing.json")], r"missing.json: not a readable witness file"),
    (lambda p: ["replay", str(p / "not-json.json")], r"not-json.json: not a readable witness file"),
    (lambda p: ["replay", str(p / "unknown-claim.json")], r"unknown-claim.json: not a valid witness"),
    (lambda p: ["replay", str(p / "no-keys.json")], r"no-keys.json: not a valid witness .* is a required property"),
    # consensus audit
    (lambda p: ["audit", "--model", "no-such-model-xyz", "--out", str(p / "a")], r"no-such-model-xyz"),
    (lambda p: ["audit", "--model", "tiny-llama", "--weights", "random", "--prompts", "0", "--out", str(p / "a")],
     r"--prompts 0 must be"),
    (lambda p: ["audit", "--model", "tiny-llama", "--weights", "random", "--prompts", "1", "--out", str(p / "a")],
     r"--prompts 1 must be at least 2"),
    (lambda p: ["audit", "--model", "tiny-llama", "--weights", "random", "--passes", str(10**12), "--out",
                str(p / "a")], r"--passes 1000000000000 must be at most"),
    (lambda p: ["audit", "--model", "tiny-llama", "--weights", "random", "--seed", "-1", "--out", str(p / "a")],
     r"--seed -1 must be an integer in 0"),
    (lambda p: ["audit", "--model", "tiny-llama", "--out", str(p / "notes.txt")], r"--out .*notes.txt must be a folder"),
    # consensus figure
    (lambda p: ["figure", "7", "--out", str(p / "f")], r"argument N: invalid choice"),
    (lambda p: ["figure", "1", "--out", str(p / "notes.txt")], r"--out .*notes.txt must be a folder; it is a file"),
    (lambda p: ["figure", "1", "--size", "huge", "--out", str(p / "f")], r"argument --size: invalid choice"),
    (lambda p: ["figure", "1", "--out", str(_read_only(p) / "f")], r"--out .*/f must be a folder this user can"),
    # consensus check
    (lambda p: ["check", "full.wendell"], r"claim id 'full.wendell' is not in the registry"),
    (lambda p: ["check", "--nope"], r"unrecognized arguments: --nope"),
    # consensus itself
    (lambda p: ["runn"], r"argument COMMAND: 'runn' must be one of"),
    (lambda p: ["bench", "gpu"], r"argument WHICH"),
]


def _ids():
    names: dict[str, int] = {}
    out = []
    for arguments, _ in ROWS:
        try:
            head = arguments(Path("P"))[0]
        except Exception:  # noqa: BLE001
            head = "row"
        names[head] = names.get(head, 0) + 1
        out.append(f"{head}-{names[head]}")
    return out


@pytest.mark.parametrize("arguments, message", ROWS, ids=_ids())
def test_bad_input_ends_in_exit_2_and_one_line(place, capsys, arguments, message):
    try:
        status = cli.main(arguments(place))
    except SystemExit as exit_:  # argparse
        status = exit_.code
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "error" in line.lower()]
    assert status == 2, err
    assert "Traceback" not in err and len(errors) == 1, err
    import re

    assert re.search(message, errors[0]), errors[0]


API_ROWS = [
    pytest.param(lambda: _run_settings(prompts=0), r"--prompts 0 must be a positive integer", id="RunSettings-prompts"),
    pytest.param(lambda: _run_settings(seed=2**70), r"--seed .* must be an integer in 0", id="RunSettings-seed"),
    pytest.param(lambda: _run_settings(prompt_seed=-5), r"--prompt-seed -5 must", id="RunSettings-prompt-seed"),
    pytest.param(lambda: _run_settings(passes=10**12), r"--passes .* must be at most", id="RunSettings-passes"),
    pytest.param(lambda: _run_settings(prompts=True), r"--prompts True must be a positive integer",
                 id="RunSettings-bool"),
    pytest.param(lambda: _prompts(-1, 4, 10), r"n=-1 must be a positive integer", id="authors_prompts-n"),
    pytest.param(lambda: _prompts(2, 4, 0), r"vocab_size=0 must be a positive integer", id="authors_prompts-vocab"),
    pytest.param(lambda: _prompts(2, 4, 10, seed=-5), r"seed=-5 must be an integer in 0", id="authors_prompts-seed"),
    pytest.param(lambda: _prompts(10**9, 4, 10), r"n=1000000000 must be at most", id="authors_prompts-bound"),
    pytest.param(lambda: _field()(0.0, np.array([[1.0, 0.0], [np.nan, 1.0]])), r"y must be finite",
                 id="AttentionField-nan"),
    pytest.param(lambda: _field()(0.0, np.array([[1.0, 0.0], [np.inf, 1.0]])), r"y must be finite",
                 id="AttentionField-inf"),
    pytest.param(lambda: _ellipsoid().project([0.0, 0.0]), r"point must be nonzero", id="Ellipsoid-zero"),
    pytest.param(lambda: _ellipsoid().project([np.nan, 1.0]), r"point", id="Ellipsoid-nan"),
    pytest.param(lambda: _search(instances=10**10), r"instances=10000000000 must be at most", id="run_search-bound"),
    pytest.param(lambda: _search(instances=0), r"instances=0 must be a positive integer", id="run_search-zero"),
    pytest.param(lambda: _search(workers=0), r"workers=0 must be a positive integer", id="run_search-workers"),
    pytest.param(lambda: _audit_settings(prompts=1), r"prompts=1 must be at least 2", id="AuditSettings-prompts"),
    pytest.param(lambda: _audit_settings(passes=10**12), r"passes=1000000000000 must be at most",
                 id="AuditSettings-passes"),
]


def _run_settings(**changes):
    from empirical.run import RunSettings

    return RunSettings(**{"model": "tiny-llama", "weights": "random", **changes})


def _prompts(n, length, vocab, seed=42):
    from empirical.prompts import authors_prompts

    return authors_prompts(n, length, vocab, seed)


def _field():
    from sim.field.dynamics import AttentionField

    return AttentionField(P=(np.eye(2),))


def _ellipsoid():
    from sim.field.manifold import Ellipsoid

    return Ellipsoid()


def _search(instances=2, workers=None):
    from sim.conjectures.distributed import run_search

    return run_search("conj.value-full", instances, "unused", workers=workers)


def _audit_settings(**changes):
    from empirical.audit.measure import AuditSettings

    return AuditSettings(**changes)


@pytest.mark.parametrize("call, message", API_ROWS)
def test_bad_input_of_the_api_raises_a_value_error(call, message):
    with pytest.raises(ValueError, match=message) as error:
        call()
    assert "\n" not in str(error.value)


#: The functions that start a command's work (a search, a simulation, a benchmark, an audit, a model run, the GPU
#: script's steps): a row of ``EARLY_ROWS`` must be refused before it calls one.
WORK = ("sim.conjectures.seeking:seek", "sim.figures.plots:make_figure", "sim.bench.solvers:run_benchmark",
        "sim.bench.search:measure", "empirical.audit.measure:audit_model", "empirical.suite:run_variant",
        "empirical.distributed:run_suite", "consensus.gpu_script:steps")
#: How long a refusal may take (seconds): it parses the arguments and checks a folder, milliseconds; the bound fails a
#: command that starts its work (minutes) or hangs, with room for a loaded machine.
REFUSAL_SECONDS = 10

#: (arguments of ``consensus`` given a folder holding the file notes.txt, the one error line's regular expression):
#: bad input that used to end in a traceback, a hang or a silent fallback, and must be refused before any work.
EARLY_ROWS = [
    pytest.param(lambda p: ["search", "conj.value-full", "--seed", "-1", "--budget", "1", "--out", str(p / "s")],
                 r"argument --seed: -1 must be an integer in 0\.\.2\^63 - 1", id="search-negative-seed"),
    pytest.param(lambda p: ["search", "conj.value-full", "--budget", "inf", "--out", str(p / "s")],
                 r"argument --budget: inf must be a finite positive number of seconds", id="search-endless-budget"),
    pytest.param(lambda p: ["figure", "1", "--out", str(p / "f"), "--blas-threads", "-2"],
                 r"argument --blas-threads: -2 must be a positive integer", id="figure-blas-threads"),
    pytest.param(lambda p: ["bench", "sim", "--blas-threads", "-2"], r"argument --blas-threads: -2 must be a positive",
                 id="bench-blas-threads"),
    pytest.param(lambda p: ["bench", "search", "--t1", "-1"], r"argument --t1: -1.0 must be a finite positive number",
                 id="search-bench-horizon"),
    pytest.param(lambda p: ["bench", "search", "--out", str(p / "notes.txt" / "x.json")],
                 r"argument --out: .*notes.txt/x.json: its folder .*notes.txt must be a folder; it is a file",
                 id="search-bench-out-under-a-file"),
    pytest.param(lambda p: ["bench", "search", "--out", str(p)], r"argument --out: .* must be a file to write; it is a "
                 "folder", id="search-bench-out-a-folder"),
    pytest.param(lambda p: ["audit", "--model", "tiny-llama", "--weights", "random", "--results",
                            str(p / "missing-run"), "--out", str(p / "a")],
                 r"--results .*missing-run: not a folder written by `empirical run`",
                 id="audit-results-missing"),
    pytest.param(lambda p: ["gpu-checks", "--tiny", "--out", str(p / "notes.txt")],
                 r"--out .*notes.txt must be a folder; it is a file", id="gpu-checks-out-a-file"),
    pytest.param(lambda p: ["suite", "--workers", "-1", "--out", str(p / "runs")],
                 r"argument --workers: -1 must be a positive integer", id="suite-negative-workers"),
    pytest.param(lambda p: ["suite", "--workers", "0", "--out", str(p / "runs")],
                 r"argument --workers: 0 must be a positive integer", id="suite-no-workers"),
]


@pytest.fixture
def no_work(monkeypatch):
    """Every function of :data:`WORK` replaced by one that fails the test."""
    import importlib

    def started(*args, **kwargs):
        raise AssertionError("the command started its work before refusing its input")

    for target in WORK:
        module, name = target.split(":")
        monkeypatch.setattr(importlib.import_module(module), name, started)


@pytest.mark.parametrize("arguments, message", EARLY_ROWS)
def test_bad_input_is_refused_before_any_work(tmp_path, capsys, no_work, arguments, message):
    import re
    import time

    (tmp_path / "notes.txt").write_text("a file")
    started = time.monotonic()
    try:
        status = cli.main(arguments(tmp_path))
    except SystemExit as exit_:  # argparse
        status = exit_.code
    assert time.monotonic() - started < REFUSAL_SECONDS
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "error" in line.lower()]
    assert status == 2 and "Traceback" not in err and len(errors) == 1, err
    assert re.search(message, errors[0]), errors[0]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["notes.txt"]  # nothing written


def test_search_bench_creates_the_folder_of_its_out_file(tmp_path):
    """The control of the --out rows: a file in a folder that does not exist yet is written, the folder made (two
    instances to t = 0.5: about a second)."""
    assert cli.main(["bench", "search", "--instances", "2", "--t1", "0.5", "--out",
                     str(tmp_path / "missing" / "x.json")]) == 0
    assert json.loads((tmp_path / "missing" / "x.json").read_text())


def test_the_table_is_large_enough():
    assert len(ROWS) + len(API_ROWS) >= 60


def test_project_scales_before_the_norm():
    """|x| of [3e154, 4e154] overflows float64 (its square is 2.5e309); pi(x) is still [0.6, 0.8]. The control: a
    small and an ordinary vector give the same direction."""
    from sim.field.manifold import Ellipsoid

    for scale in (1e154, 1e-170, 1.0):
        np.testing.assert_allclose(Ellipsoid().project([3 * scale, 4 * scale]), [0.6, 0.8], rtol=1e-15)
    W = np.diag([4.0, 1.0])  # |x|_W = sqrt(4 x1^2 + x2^2)
    np.testing.assert_allclose(Ellipsoid(W).project([3e154, 4e154]), np.array([3, 4]) / np.sqrt(52), rtol=1e-15)


def test_plot_into_an_existing_folder_writes_and_names_overlay_png(place, capsys):
    """plot --out DIR (an existing folder): the figure is DIR/overlay.png, and that is the path printed."""
    folder = place / "figures"
    folder.mkdir(exist_ok=True)
    assert cli.main(["plot", str(place / "run3"), "--out", str(folder)]) == 0
    printed = capsys.readouterr().out.strip()
    assert printed == f"wrote {folder / 'overlay.png'}" and (folder / "overlay.png").is_file()
    assert cli.main(["plot", str(place / "run3"), "--out", str(place / "E.png")]) == 0  # a file path: as given
    assert capsys.readouterr().out.strip() == f"wrote {place / 'E.png'}" and (place / "E.png").is_file()


def test_a_full_disk_is_one_line_and_the_folder_resumes(tmp_path, capsys, monkeypatch):
    """The disk fills (ENOSPC) while pass 2's checkpoint is written: one line, exit 2, no temporary file left; the
    same command, once there is room, resumes from pass 1 and gives the numbers of an uninterrupted run."""
    import torch

    from foundation import files

    arguments = ["run", *TINY, "--passes", "2"]
    assert cli.main([*arguments, "--out", str(tmp_path / "whole")]) == 0
    assert cli.main([*arguments[:-1], "1", "--out", str(tmp_path / "cut")]) == 0
    capsys.readouterr()
    real_save, write = torch.save, files._Hashing.write

    def no_space(self, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def save(obj, stream, *args, **kwargs):  # the checkpoint's bytes meet a full disk
        monkeypatch.setattr(files._Hashing, "write", no_space)
        try:
            return real_save(obj, stream, *args, **kwargs)
        finally:
            monkeypatch.setattr(files._Hashing, "write", write)

    monkeypatch.setattr(torch, "save", save)
    status = cli.main([*arguments, "--out", str(tmp_path / "cut")])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1, err
    assert "No space left on device" in err[0] and "rerun the same command to resume" in err[0]
    assert not [p for p in (tmp_path / "cut").iterdir() if p.name.startswith(".checkpoint")]  # no temporary left
    monkeypatch.setattr(torch, "save", real_save)
    assert cli.main([*arguments, "--out", str(tmp_path / "cut")]) == 0
    whole = json.loads((tmp_path / "whole" / "results.json").read_text())
    cut = json.loads((tmp_path / "cut" / "results.json").read_text())
    assert cut["E"] == whole["E"] and cut["passes"] == 2
