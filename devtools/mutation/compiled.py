"""cosmic-ray over the Numba-compiled code (tests/mutation/compiled.toml), which mutmut cannot reach.

mutmut 3 leaves decorated functions alone, so the ``@njit`` kernels of ``sim/field/kernels.py``,
``sim/field/instances.py`` and ``sim/solvers/compiled.py`` get none of its mutants; cosmic-ray mutates those files,
and ``sim/solvers/stepsize.py``, whose plain functions Numba compiles by a call (kept from mutmut:
``mutmut_mutates``). Its mutants that fall inside an undecorated function or method (the Python wrappers: input
checks, the workspace, the callers of the kernels) are marked skipped, "left to mutmut", which mutates those
functions itself (``leave_to_mutmut``): each mutant is counted once.

``run_session`` makes the session and applies the filters (or resumes one made from the same committed files and
configuration, or, after tests were added, resets its survivors) and executes it with cosmic-ray's HTTP distributor:
one ``cosmic-ray http-worker`` per configured URL, each in its own git clone of the committed tree (cosmic-ray's
``cr-http-workers``), so the workers mutate their clones side by side and the working tree is never touched.
"""

from __future__ import annotations

import ast
import fnmatch
import hashlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import time
import tomllib
from pathlib import Path

#: Why a mutant inside an undecorated function is not run by cosmic-ray (the session's record of it).
LEFT_TO_MUTMUT = "left to mutmut (an undecorated function: mutmut mutates it)"
#: Why a mutant of an ``@njit(...)`` option is not run: the mutants run with NUMBA_DISABLE_JIT=1, which makes
#: ``njit`` return the function itself, and its options (cache, nogil, fastmath flags) say how the machine code is
#: made, not what it computes (fastmath's reassociation is within the tests' tolerances).
COMPILE_OPTION = "a Numba compile option: excluded by construction (@njit is a no-op in the Python runs)"
#: How long the workers may take to clone the tree and listen (measured: about 3 s each on this machine).
WORKER_START_SECONDS = 120.0


def mutmut_lines(source: str) -> list[tuple[int, int]]:
    """The line ranges (first, last; 1-based) of the functions mutmut mutates in a module's ``source``: top-level
    functions and methods of top-level classes that carry no decorator."""
    ranges = []
    for node in ast.parse(source).body:
        functions = node.body if isinstance(node, ast.ClassDef) else [node]
        ranges += [(f.lineno, f.end_lineno) for f in functions
                   if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and not f.decorator_list]
    return ranges


def njit_lines(source: str) -> set[int]:
    """The lines (1-based) of the ``@njit(...)`` decorators in a module's ``source``."""
    lines = set()
    for node in ast.walk(ast.parse(source)):
        for decorator in getattr(node, "decorator_list", ()):
            call = decorator.func if isinstance(decorator, ast.Call) else decorator
            if isinstance(call, ast.Name) and call.id == "njit":
                lines.update(range(decorator.lineno, decorator.end_lineno + 1))
    return lines


def _definitions(nodes, prefix: str = ""):
    """(qualified name, def / class line, last line, bare name) of every function and class among ``nodes`` and
    inside them, outermost first."""
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = f"{prefix}{node.name}"
            yield name, node.lineno, node.end_lineno, node.name
            yield from _definitions(node.body, f"{name}.")


def _statement_name(node: ast.stmt) -> str:
    """A top-level statement's name: its (first) assigned name, or the name of a decorated definition."""
    target = (node.targets[0] if isinstance(node, ast.Assign) else node.target if isinstance(node, ast.AnnAssign)
              else node)
    if isinstance(target, ast.Tuple):
        target = target.elts[0]
    return getattr(target, "id", None) or getattr(target, "name", None) or type(node).__name__.lower()


def mutant_anchor(source: str, function: str | None, row: int) -> tuple[str, int]:
    """Where a cosmic-ray mutant at ``row`` of a module's ``source`` lies, as (name, first row): the innermost
    function or class named ``function`` (cosmic-ray's definition name) around the row, by its qualified name and
    its ``def`` / ``class`` line; for a mutant outside any (``function`` None: a constant, a decorator's argument)
    the top-level statement around it, as ``<its name>`` and its first line. A mutant named by its row relative to
    this anchor keeps its name while the rest of the file is edited."""
    tree = ast.parse(source)
    if function is None:
        for node in tree.body:
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])
            if first <= row <= node.end_lineno:
                return f"<{_statement_name(node)}>", first
    else:
        around = [(first, name) for name, first, last, bare in _definitions(tree.body)
                  if bare == function and first <= row <= last]
        if around:
            first, name = max(around)
            return name, first
    raise ValueError(f"row {row} must lie in {function or 'a top-level statement'} of the module; the session was "
                     "made from another version of the file.")


def mutmut_mutates(module: str, pyproject: str) -> bool:
    """Whether mutmut mutates the file ``module`` (a path relative to the project's root) under ``pyproject``'s
    ``[tool.mutmut]``: matched by an ``only_mutate`` glob and by no ``do_not_mutate`` one (mutmut's own fnmatch
    rule). A file compiled whole by Numba (sim/solvers/stepsize.py, whose plain functions are passed to ``njit``)
    is kept from mutmut, whose wrapper around each mutated function Numba cannot compile: cosmic-ray runs all of
    its mutants."""
    config = tomllib.loads(pyproject)["tool"]["mutmut"]
    return (any(fnmatch.fnmatch(module, glob) for glob in config["only_mutate"])
            and not any(fnmatch.fnmatch(module, glob) for glob in config.get("do_not_mutate", [])))


def leave_to_mutmut(session: Path, root: Path = Path(".")) -> int:
    """Record as skipped, with ``LEFT_TO_MUTMUT``, every mutant of ``session`` (a cosmic-ray 8 session file) not
    yet run whose first line lies in a function mutmut mutates (an undecorated function of a file that
    ``root``'s pyproject.toml gives mutmut, :func:`mutmut_mutates`), and with ``COMPILE_OPTION`` one of an
    ``@njit`` option (module paths relative to ``root``); return how many were left to mutmut. cosmic-ray's own
    filters record a skip the same way: a result row, so that ``exec`` passes it by."""
    pyproject = (root / "pyproject.toml").read_text()
    pending = ("SELECT s.job_id, s.module_path, s.start_pos_row FROM mutation_specs s "
               "LEFT JOIN work_results r USING (job_id) WHERE r.job_id IS NULL")
    lines: dict[str, tuple[list[tuple[int, int]], set[int]]] = {}  # module -> (mutmut's functions, @njit lines)
    with sqlite3.connect(session) as db:
        skipped = []
        for job, module, row in db.execute(pending).fetchall():
            if module not in lines:
                source = (root / module).read_text()
                lines[module] = (mutmut_lines(source) if mutmut_mutates(module, pyproject) else [],
                                 njit_lines(source))
            functions, options = lines[module]
            if any(first <= row <= last for first, last in functions):
                skipped.append((LEFT_TO_MUTMUT, job))
            elif row in options:
                skipped.append((COMPILE_OPTION, job))
        db.executemany("INSERT INTO work_results (worker_outcome, output, test_outcome, diff, job_id) "
                       "VALUES ('SKIPPED', ?, NULL, NULL, ?)", skipped)
    return sum(reason == LEFT_TO_MUTMUT for reason, _ in skipped)


def forget_survivors(session: Path) -> int:
    """Delete the results of ``session``'s surviving mutants, so that ``cosmic-ray exec`` runs them again (after
    tests were added: the killed ones stay killed, as tests are only added), and of the mutants whose worker
    failed (no verdict: a worker stopped or unreachable); return how many."""
    with sqlite3.connect(session) as db:
        return db.execute("DELETE FROM work_results WHERE test_outcome = 'SURVIVED' "
                          "OR worker_outcome IN ('ABNORMAL', 'EXCEPTION')").rowcount


def worker_ports(config: Path) -> list[int]:
    """The localhost ports of the HTTP workers ``config`` names (``[cosmic-ray.distributor.http] worker-urls``)."""
    urls = tomllib.loads(config.read_text())["cosmic-ray"]["distributor"]["http"]["worker-urls"]
    return [int(url.rsplit(":", 1)[1]) for url in urls]


def wait_for_workers(ports: list[int], workers: subprocess.Popen, seconds: float) -> None:
    """Wait until a worker listens on each of ``ports``; an error naming the port when ``workers`` exits first or
    ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    for port in ports:
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if workers.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"cosmic-ray's HTTP worker on port {port} did not start (exit code "
                                   f"{workers.poll()}); is another run using the port?")
            time.sleep(0.5)


def sources(config: Path, root: Path = Path(".")) -> dict[str, str]:
    """What a session's mutants are made of: the committed blob of each of ``config``'s module-path files (the
    workers mutate clones of the committed tree) and the configuration's own text (its test command, filters)."""
    paths = tomllib.loads(config.read_text())["cosmic-ray"]["module-path"]
    blobs = {path: subprocess.run(["git", "rev-parse", f"HEAD:{path}"], cwd=root, capture_output=True, text=True,
                                  check=True).stdout.strip() for path in paths}
    return {"configuration": hashlib.sha256(config.read_bytes()).hexdigest(), **blobs}


def sources_record(session: Path) -> Path:
    """Where ``run_session`` keeps the :func:`sources` a session was made from (beside it)."""
    return session.with_name(session.name + ".sources.json")


def session_sources(session: Path, paths, root: Path = Path(".")) -> dict[str, str]:
    """The text of each module of ``paths`` as ``session`` mutated it, from the blobs its sources record names (read
    with git in ``root``); a session without a record (made by hand) reads the files in ``root``."""
    record = sources_record(session)
    blobs = {path: blob for path, blob in json.loads(record.read_text()).items()
             if path != "configuration"} if record.exists() else {}
    return {path: (subprocess.run(["git", "cat-file", "blob", blobs[path]], cwd=root, capture_output=True, text=True,
                                  check=True).stdout if path in blobs else (root / path).read_text())
            for path in paths}


def made_alike(session: Path, made_from: dict[str, str]) -> bool:
    """Whether ``session`` exists and was made from ``made_from`` (:func:`sources`): its results still hold and its
    pending mutants can run."""
    record = sources_record(session)
    return session.exists() and record.exists() and json.loads(record.read_text()) == made_from


def run_session(config: Path, session: Path, *, survivors: bool = False) -> int:
    """cosmic-ray's session ``session`` of ``config``, executed by the configured HTTP workers: resumed when it
    exists and was made from the same committed files and configuration (its mutants without a result run; with
    ``survivors`` its survivors too, after tests were added), made afresh otherwise (its operator filter and
    ``leave_to_mutmut`` applied); returns ``cosmic-ray exec``'s exit code."""
    made_from = sources(config)
    if made_alike(session, made_from):
        print(f"resuming {session}: the same committed files and configuration", flush=True)
        if survivors:
            print(f"{forget_survivors(session)} survivors to run again", flush=True)
    else:
        subprocess.run(["cosmic-ray", "init", str(config), str(session), "--force"], check=True)
        subprocess.run(["cr-filter-operators", str(session), str(config)], check=True)
        print(f"{leave_to_mutmut(session)} mutants left to mutmut", flush=True)
        sources_record(session).write_text(json.dumps(made_from, indent=1))
    workers = subprocess.Popen(["cr-http-workers", str(config), "."], start_new_session=True)
    try:
        wait_for_workers(worker_ports(config), workers, WORKER_START_SECONDS)
        return subprocess.run(["cosmic-ray", "exec", str(config), str(session)]).returncode
    finally:  # an interrupt to cr-http-workers' process group: the workers stop and it removes their clones
        os.killpg(workers.pid, signal.SIGINT)
        try:
            workers.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(workers.pid, signal.SIGKILL)
            workers.wait()
