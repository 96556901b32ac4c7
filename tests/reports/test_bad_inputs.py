"""Bad inputs of the report (its output folder, the benchmark sections it reuses) raise clear errors naming the
path and what must hold, before any test or benchmark runs (SPEC section 8)."""

import json
import os
import sys
from pathlib import Path

import pytest

from foundation.memory import MEMORY_LEDGER_ENV

from reports.__main__ import ROOT, main, run_benchmark
from reports.build import SECTION_REVISION_KEY, ReportInputError, check_reused_sections, read_section
from foundation.manifest import git_revision
from foundation.outputs import OutputError, check_output_folder, claim_output_folder

pytest_plugins = ["pytester"]

OTHER_REVISION = "0123456789ab"


def _file(tmp_path: Path) -> Path:
    path = tmp_path / "report.html"
    path.write_text("a file, not a folder")
    return path


def _unwritable_folder(tmp_path: Path) -> Path:
    """A folder this user cannot create files in: a read-only one; for root, who may write into any folder of a
    normal file system, sysfs, which accepts no new files from anyone."""
    if os.geteuid() == 0:
        return Path("/sys")
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    return folder


KNOWN = ("sim-bench", "empirical-bench")  # reports.__main__.BENCHMARKS' names


def _sections(tmp_path: Path, name: str = "sim-bench", **section) -> Path:
    """A sections folder holding one benchmark section ``name`` (``section`` added to a valid one)."""
    folder = tmp_path / "sections"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.section.json").write_text(json.dumps({"title": "Benchmark", **section}))
    return folder


def output_folder(path: Path):
    return check_output_folder(path, command="reports build", settings={"pytest_args": []})


BAD_INPUTS = [
    pytest.param(lambda tmp: output_folder(_file(tmp)), "must be a folder; it is a file", id="out-is-a-file"),
    pytest.param(lambda tmp: output_folder(_file(tmp) / "report"), "must be a folder; .*report.html above it is a file",
                 id="out-under-a-file"),
    pytest.param(lambda tmp: output_folder(_unwritable_folder(tmp)), "must be a folder this user can write to",
                 id="out-unwritable"),
    pytest.param(lambda tmp: output_folder(_unwritable_folder(tmp) / "report"), "must be a folder this user can write",
                 id="out-under-an-unwritable-folder"),
    pytest.param(lambda tmp: read_section(_sections(tmp) / "missing.section.json"), "cannot be read as JSON",
                 id="section-missing"),
    pytest.param(lambda tmp: read_section(_file(tmp)), "cannot be read as JSON", id="section-not-json"),
    pytest.param(lambda tmp: (_file(tmp).write_text("[1, 2]"), read_section(tmp / "report.html")),
                 "must be a JSON object with a 'title'", id="section-not-an-object"),
    pytest.param(lambda tmp: check_reused_sections(_sections(tmp, **{SECTION_REVISION_KEY: OTHER_REVISION}),
                                                   git_revision(ROOT), known=KNOWN),
                 f"was measured at revision {OTHER_REVISION}, not at this tree's revision",
                 id="section-other-revision"),
    pytest.param(lambda tmp: check_reused_sections(_sections(tmp), git_revision(ROOT), known=KNOWN),
                 "at an unrecorded revision", id="section-unstamped"),
    # the referee's forged section, stamped with a dirty revision: refused whether benchmarks run or not
    pytest.param(lambda tmp: check_reused_sections(_sections(tmp, "zz-old", **{SECTION_REVISION_KEY: "0000000-dirty"}),
                                                   "0000000-dirty", known=KNOWN, reused=False),
                 "is not a section any benchmark of this build writes", id="section-of-no-benchmark"),
]


@pytest.mark.parametrize("call, message", BAD_INPUTS)
def test_bad_input_raises_a_clear_error(tmp_path, call, message):
    with pytest.raises((ReportInputError, OutputError), match=message):
        call(tmp_path)


def test_build_into_a_file_stops_at_once(tmp_path, capsys):
    assert main(["build", "--out", str(_file(tmp_path)), "--", "--no-such-option"]) == 2
    assert "--out" in (err := capsys.readouterr().err) and "must be a folder; it is a file" in err


def test_build_refuses_benchmark_sections_and_verdicts_of_another_revision(tmp_path, capsys):
    out = claim_output_folder(output_folder(tmp_path / "report"))  # an earlier build's folder
    (out / "verdicts.json").write_text(json.dumps({"manifest": {"git_revision": OTHER_REVISION}, "claims": []}))
    _sections(out, **{SECTION_REVISION_KEY: OTHER_REVISION})
    assert main(["build", "--no-bench", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"measured at revision {OTHER_REVISION}" in err and "without --no-bench" in err


def test_build_keeps_benchmark_sections_of_this_revision(tmp_path):
    sections = _sections(tmp_path, **{SECTION_REVISION_KEY: git_revision(ROOT)})
    check_reused_sections(sections, git_revision(ROOT), known=KNOWN)  # raises if refused


def test_failed_benchmark_leaves_no_section_of_an_earlier_build(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(MEMORY_LEDGER_ENV, raising=False)  # inside `make report`: not a stage of the real build
    sections = _sections(tmp_path, **{SECTION_REVISION_KEY: git_revision(ROOT)})
    run_benchmark("sim-bench", "no_such_benchmark_module", tmp_path, sections, "abc", dict(os.environ))
    assert not (sections / "sim-bench.section.json").exists()
    assert "benchmark sim-bench failed" in capsys.readouterr().err


def test_benchmark_section_is_stamped_with_the_revision(tmp_path, monkeypatch):
    monkeypatch.delenv(MEMORY_LEDGER_ENV, raising=False)  # inside `make report`: not a stage of the real build
    package = tmp_path / "modules" / "fake_benchmark"
    package.mkdir(parents=True)
    (package / "__main__.py").write_text(
        "import json, sys\n"
        "section = sys.argv[sys.argv.index('--section') + 1]\n"
        "open(section, 'w').write(json.dumps({'title': 'Fake benchmark'}))\n")
    sections = tmp_path / "sections"
    sections.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "modules"), *sys.path])}
    run_benchmark("fake", "fake_benchmark", tmp_path, sections, "abc123", env)
    assert read_section(sections / "fake.section.json") == {"title": "Fake benchmark", SECTION_REVISION_KEY: "abc123"}


@pytest.mark.parametrize("make_target, message", [
    pytest.param(_file, "must be a folder; it is a file", id="a-file"),
    pytest.param(_unwritable_folder, "must be a folder this user can write to", id="unwritable"),
])
def test_plugin_refuses_a_report_dir_it_cannot_write_before_running_tests(pytester, make_target, message):
    pytester.makepyfile(test_one="def test_one():\n    raise AssertionError('must not run')\n")
    result = pytester.runpytest("-p", "reports.pytest_plugin", f"--report-dir={make_target(pytester.path)}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--report-dir*{message}*"])


def test_the_known_sections_are_the_builds_benchmarks():
    from reports.__main__ import BENCHMARKS

    assert KNOWN == tuple(name for name, _ in BENCHMARKS)


def test_two_sets_of_uncommitted_changes_are_two_revisions(tmp_path):
    """The referee's stamp: `git describe --dirty` read the same for every uncommitted change on a commit, so a
    section measured with one change was reused with another. The dirty revision now names its diff; the clean tree
    none (the control)."""
    import subprocess

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "a.txt").write_text("one\n")
    git("add", "a.txt")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    clean = git_revision(tmp_path)
    assert "dirty" not in clean
    (tmp_path / "a.txt").write_text("two\n")
    first = git_revision(tmp_path)
    (tmp_path / "a.txt").write_text("three\n")
    second = git_revision(tmp_path)
    assert first.startswith(f"{clean}-dirty+") and second.startswith(f"{clean}-dirty+") and first != second
    assert len(first.rsplit("+", 1)[1]) == 12
