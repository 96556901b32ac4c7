"""``consensus gpu-checks --out DIR``: every GPU check of the project in one call, each step its own process.

The steps (each a command of a package, so that it can also be run alone):

0. in a checkout (its ``tests/`` beside the package), ``python -m pytest -m cuda tests``: the tests that need a CUDA
   device (the CUDA graph of the draw's check, :mod:`empirical.fingerprints`), first, since the measurements rest
   on them -> ``cuda-tests.xml`` (JUnit XML);
1. ``python -m empirical gpu-checks``: the paper's protocol on random GPT-2 XL and redrawn GPT-Neo 2.7B in float32
   and bfloat16, each run's end-to-end and loop times, its float64 twin, and its loop against the GEMM bound
   (:mod:`empirical.gemm_bound`) -> ``gpu-checks.json``;
2. ``python -m sim bench --part peers --device cuda --threads N``: diffrax (JAX's GPU backend), torchdiffeq and
   torchode (tensors on the GPU) against ours on the machine's N cores -> ``peers-cuda.json``;
3. ``python -m sim bench --part peers --libraries diffrax --threads N`` and ``--threads 1``: the scaling of ours
   and of diffrax (JAX on the CPU) with the cores -> ``peers-cpu-N.json``, ``peers-cpu-1.json`` (the PyTorch peers,
   5-100 x slower than ours on one thread and slower still on more, are left out of the scaling to keep the call
   within the device's minutes).

A separate process per step: JAX's platform and XLA's threads are fixed when JAX is first imported, and the GPU's
memory of one step is the system's again for the next. A step that fails does not stop the others; the call
writes ``gpu-script.json`` (each step's command, exit status, seconds and the last lines of its output) after
every step and exits 1 if one failed. ``--tiny`` runs the same steps at their smallest sizes (``--tiny``,
``--quick``), on the CPU where there is no GPU: a smoke test of the script, not a measurement.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from foundation.files import write_json
from foundation.helpformat import Parser
from foundation.outputs import OutputError, check_writable_folder

#: Lines of each step's output kept in gpu-script.json (the rest is in the step's own JSON).
TAIL_LINES = 40
#: The tests of the checkout this package sits in (absent from an installed package: the CUDA tests' step is left out).
CHECKOUT_TESTS = Path(__file__).resolve().parents[1] / "tests"


@dataclass(frozen=True)
class Step:
    """One step: ``argv`` after ``python -m``; it writes the file ``name`` in the call's folder."""

    name: str
    argv: tuple[str, ...]


def steps(out: Path, *, tiny: bool, cuda: bool, cores: int) -> tuple[Step, ...]:
    """The steps of a call writing into ``out``; with ``cuda`` False (no GPU: ``--tiny`` only) the peers run on the
    CPU. The CUDA tests' step only from a checkout (:data:`CHECKOUT_TESTS`)."""
    quick = ("--quick",) if tiny else ()
    device = "cuda" if cuda else "cpu"

    def peers(name: str, *options: str) -> Step:
        return Step(name, ("sim", "bench", "--part", "peers", *quick, *options, "--peers-out", str(out / name)))

    tests = ((Step("cuda-tests.xml", ("pytest", "-m", "cuda", "-q", "-p", "no:cacheprovider", "--no-report",
                                      f"--junitxml={out / 'cuda-tests.xml'}", str(CHECKOUT_TESTS))),)
             if CHECKOUT_TESTS.is_dir() else ())
    return (*tests,
            Step("gpu-checks.json", ("empirical", "gpu-checks", *(("--tiny",) if tiny else ()), "--device", device,
                                     "--out", str(out / "gpu-checks.json"))),
            peers(f"peers-{device}.json", "--device", device, "--threads", str(cores)),
            peers(f"peers-cpu-{cores}.json", "--libraries", "diffrax", "--threads", str(cores)),
            peers("peers-cpu-1.json", "--libraries", "diffrax", "--threads", "1"))


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def run(out: Path, *, tiny: bool = False, only: tuple[str, ...] = (), report=print) -> int:
    """Run every step into ``out`` (those named in ``only``, if any); return 0 when each exited 0, else 1; bad input
    (``out`` not a folder this user can write, no GPU without ``tiny``, an unknown step): one line on stderr, 2,
    before any step runs. ``report`` gets the steps' progress and output."""
    try:
        check_writable_folder(out)
    except OutputError as error:
        return _refuse(str(error))
    cuda = _cuda()
    if not cuda and not tiny:
        return _refuse("no CUDA device here; `consensus gpu-checks --tiny` runs the script's smoke test on the CPU")
    cores = os.cpu_count() or 1
    every = steps(out, tiny=tiny, cuda=cuda, cores=cores)
    chosen = [step for step in every if not only or step.name in only]
    unknown = set(only) - {step.name for step in chosen}
    if unknown:
        return _refuse(f"no step {', '.join(sorted(unknown))}; the steps: " + ", ".join(step.name for step in every))
    out.mkdir(parents=True, exist_ok=True)
    record = {"tiny": tiny, "cuda": cuda, "cores": cores, "steps": []}
    for step in chosen:
        report(f"== {step.name}: python -m {' '.join(step.argv)}")
        started = time.perf_counter()
        lines = []
        with subprocess.Popen([sys.executable, "-m", *step.argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}) as process:
            for line in process.stdout:  # shown as it comes: a step takes minutes
                report(line.rstrip("\n"))
                lines.append(line.rstrip("\n"))
        record["steps"].append({"name": step.name, "command": ["python", "-m", *step.argv],
                                "exit_status": process.returncode, "seconds": time.perf_counter() - started,
                                "output_tail": lines[-TAIL_LINES:]})
        write_json(out / "gpu-script.json", record)
    failed = [entry["name"] for entry in record["steps"] if entry["exit_status"] != 0]
    report(f"wrote {out}: {len(record['steps'])} steps" + (f"; FAILED: {', '.join(failed)}" if failed else ", all ok"))
    return 1 if failed else 0


def _refuse(message: str) -> int:
    """Bad input: ``error: message`` on stderr; the exit status 2."""
    print(f"error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """``consensus gpu-checks ARGV``; exit status 0 when every step succeeded, 1 when one failed, 2 bad input."""
    parser = Parser(prog=prog or "python -m consensus gpu-checks", description=__doc__.splitlines()[0].replace("``", ""))
    parser.add_argument("--out", type=Path, required=True, help="the folder of the call's JSON files")
    parser.add_argument("--tiny", action="store_true",
                        help="every step at its smallest sizes (on the CPU without a GPU): a smoke test")
    parser.add_argument("--step", action="append", default=[], metavar="NAME",
                        help="run only this step, named by its file (gpu-checks.json, peers-cuda.json, ...); "
                             "repeatable")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    return run(args.out, tiny=args.tiny, only=tuple(args.step))
