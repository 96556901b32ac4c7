"""The mutation summary counts every mutant once, keeps equivalents apart, and the report section shows it."""

import json
import sys
from pathlib import Path

import pytest

from devtools.mutation.__main__ import main
from devtools.mutation.summary import (EQUIVALENTS, RECORDED, SUMMARY, measure, module_name, mutmut_function, mutmut_outcomes, read_cosmic_ray,
                                       read_equivalents, revision, section, summarise)

# mutmut's exit codes: 1 killed, 0 survived, 36 timed out, 33 no test reaches the mutant, -11 segfault
FAKE_RUN = {
    "sim.field.manifold.xǁSphereǁproject__mutmut_1": 1,
    "sim.field.manifold.xǁSphereǁproject__mutmut_2": 0,
    "sim.field.manifold.xǁSphereǁproject__mutmut_3": 0,
    "sim.field.manifold.x_check__mutmut_1": 36,
    "foundation.records.x_worst_verdict__mutmut_1": 1,
    "foundation.records.x_worst_verdict__mutmut_2": 33,
    "foundation.records.x__jsonable__mutmut_4": -11,
}
OUTCOMES = mutmut_outcomes(FAKE_RUN)
EQUIVALENT = {"sim.field.manifold.xǁSphereǁproject__mutmut_3": "a copy instead of a view: same values"}
#: What a segment of a run cost, as `measure` records it.
RUN = {"command": ["mutmut", "run"], "exit_code": 0, "revision": "abc123", "seconds": 120.0, "cpu_seconds": 180.0,
       "load_average": {"mean": 4.0, "max": 6.0, "samples": 5}, "cores": 2}


def test_module_name_drops_the_function_and_the_mutant_number():
    assert module_name("sim.field.manifold.xǁSphereǁproject__mutmut_3") == "sim.field.manifold"
    assert module_name("empirical.eq9.x_misalignment__mutmut_12") == "empirical.eq9"
    assert module_name("sim.field.instances.xǁInstanceFieldǁ__post_init____mutmut_4") == "sim.field.instances"
    assert mutmut_function("sim.field.instances.xǁInstanceFieldǁ__post_init____mutmut_4") == (
        "sim.field.instances.xǁInstanceFieldǁ__post_init__")  # a dunder method: only the last __mutmut_ splits
    assert module_name("sim.field.kernels:sphere_drift@+6:7:core/NumberReplacer#0") == "sim.field.kernels"
    assert module_name("sim.field.instances:InstanceField.__call__@+2:7:core/NumberReplacer#1") == "sim.field.instances"
    for bad in ("misalignment__mutmut_1", "sim.field.kernels.sphere_drift", "sim.field.kernels.f@12:7:core/X#0"):
        with pytest.raises(ValueError, match="mutant="):
            module_name(bad)


def test_mutmut_exit_codes_become_outcomes_within_the_scope():
    assert OUTCOMES["sim.field.manifold.x_check__mutmut_1"] == "timeout"
    assert OUTCOMES["foundation.records.x__jsonable__mutmut_4"] == "other"  # a segfault is neither killed nor survived
    assert set(mutmut_outcomes(FAKE_RUN, ("reports.*",))) == {k for k in FAKE_RUN if k.startswith("reports.")}


def test_summary_counts_each_outcome_per_module_and_keeps_equivalents_apart():
    summary = summarise(OUTCOMES, EQUIVALENT, runs=(RUN,))
    manifold = summary["modules"]["sim.field.manifold"]
    assert (manifold["killed"], manifold["timeout"], manifold["survived"], manifold["equivalent"]) == (1, 1, 1, 1)
    assert manifold["survivors"] == ["sim.field.manifold.xǁSphereǁproject__mutmut_2"]
    assert manifold["score"] == pytest.approx(2 / 3)  # (killed + timed out) / non-equivalent tested mutants
    records = summary["modules"]["foundation.records"]
    assert (records["killed"], records["no tests"], records["other"], records["total"]) == (1, 1, 1, 3)
    assert records["score"] == 1 / 3  # neither a mutant no test reaches nor one whose tests crashed is detected
    assert records["survivors"] == ["foundation.records.x__jsonable__mutmut_4",
                                    "foundation.records.x_worst_verdict__mutmut_2"]
    assert summary["totals"]["total"] == len(FAKE_RUN)
    assert summary["totals"]["score"] == pytest.approx(3 / 6)
    assert summary["stale_equivalents"] == {}


def test_an_equivalent_that_no_longer_survives_is_reported_stale_not_hidden(tmp_path):
    """Stale: killed now, or gone; an equivalent whose mutant has not run yet (an interrupted session) is not."""
    pending = "sim.field.kernels:f@+3:4:core/NumberReplacer#0"
    listed = {**EQUIVALENT, "sim.field.manifold.xǁSphereǁproject__mutmut_1": "once equivalent",
              "sim.gone.x_f__mutmut_1": "mutant no longer exists", pending: "not run yet"}
    summary = summarise({**OUTCOMES, pending: "not checked"}, listed)
    assert set(summary["stale_equivalents"]) == {"sim.field.manifold.xǁSphereǁproject__mutmut_1", "sim.gone.x_f__mutmut_1"}
    assert summary["modules"]["sim.field.manifold"]["killed"] == 1  # a killed mutant stays killed
    assert "stale" in section_of(summary, tmp_path).text


def test_summary_refuses_an_unknown_outcome_or_a_claimed_equivalent():
    for bad in ("passed", "equivalent"):
        with pytest.raises(ValueError, match="outcomes must be among"):
            summarise({"sim.field.manifold.x_f__mutmut_1": bad}, {})


def test_an_equivalent_without_a_reason_is_refused(tmp_path):
    path = tmp_path / "equivalent.toml"
    path.write_text('[equivalent]\n"sim.field.manifold.x_f__mutmut_1" = " "\n')
    with pytest.raises(ValueError, match="reason"):
        read_equivalents(path)


def test_checked_in_equivalents_each_give_a_reason():
    assert all(reason.strip() for reason in read_equivalents(EQUIVALENTS).values())


def section_of(summary, folder):
    path = folder / "summary.json"
    path.write_text(json.dumps(summary))
    return section(path)


def test_section_tabulates_a_summary_per_module_with_its_survivors(tmp_path):
    result = section_of(summarise(OUTCOMES, EQUIVALENT, runs=(RUN,)), tmp_path)
    counts, survivors = result.tables
    rows = {row[0]: row for row in counts.rows}
    assert rows["sim.field.manifold"] == ("sim.field.manifold", 4, 1, 1, 1, 1, 0, 0, 0, 0, "66.7%")
    assert rows["foundation.records"] == ("foundation.records", 3, 1, 0, 0, 0, 1, 0, 1, 0, "33.3%")  # a crash
    assert rows["all"][-1] == "50.0%"
    assert set(survivors.rows) == {("sim.field.manifold.xǁSphereǁproject__mutmut_2",),
                                   ("foundation.records.x_worst_verdict__mutmut_2",),
                                   ("foundation.records.x__jsonable__mutmut_4",)}
    assert ("revision abc123: 2 min of wall time, 3 min of CPU time, load average 4.0 (at most 6.0) on 2 cores"
            in result.text)


def test_section_adds_up_the_segments_of_a_resumed_run_and_says_what_was_not_measured(tmp_path):
    later = {**RUN, "revision": "def456", "cpu_seconds": None, "load_average": {"mean": 1.0, "max": 9.0, "samples": 15}}
    text = section_of(summarise(OUTCOMES, EQUIVALENT, runs=(RUN, later)), tmp_path).text
    # (4 x 5 + 1 x 15) / 20 samples: the mean of every sample
    assert ("revision abc123, def456 in 2 segments: 4 min of wall time, CPU time not measured, load average 1.8 "
            "(at most 9.0)") in text
    assert "cost was not measured" in section_of(summarise(OUTCOMES, EQUIVALENT), tmp_path).text


def test_section_without_a_summary_says_how_to_make_one(tmp_path):
    result = section(tmp_path / "summary.json", tmp_path / "recorded.json")
    assert "make mutants" in result.text and result.tables == ()


def test_section_without_a_summary_shows_the_recorded_run_and_says_so(tmp_path):
    recorded = tmp_path / "recorded.json"
    recorded.write_text(json.dumps(summarise(OUTCOMES, EQUIVALENT, runs=(RUN,))))
    result = section(tmp_path / "summary.json", recorded)
    assert result.text.startswith("No mutation run in this tree") and "recorded in docs/mutation-summary.json" in result.text
    assert "revision abc123" in result.text and {row[0] for row in result.tables[0].rows} >= {"all"}
    (tmp_path / "summary.json").write_text(json.dumps(summarise(OUTCOMES, {}, runs=(RUN,))))
    assert not section(tmp_path / "summary.json", recorded).text.startswith("No mutation run")  # the tree's own


def test_the_recorded_run_is_a_whole_run_of_the_current_scope():
    """docs/mutation-summary.json, shown by the report where `make mutants` has not run: a summary of the Makefile's
    scope with nothing left to run."""
    import re

    recorded = json.loads(RECORDED.read_text())
    makefile = Path("Makefile").read_text()
    scope = re.findall(r"'([^']+)'", re.search(r"^MUTANTS_SCOPE := (.*?)\n(?=\S)", makefile, re.M | re.S).group(1))
    assert recorded["scope"] == scope
    assert recorded["totals"]["not checked"] == 0 and recorded["runs"]


#: The module of ``_cosmic_ray_session``'s mutants: a function (rows 1-7) and a constant (row 10).
SESSION_MODULE = '''def sphere_drift(x):
    a = x + 1
    b = x + 2
    c = x + 3
    d = x + 4
    e = x + 5
    return a + b + c + d + e


LIMIT = 2
'''


def _cosmic_ray_session(path, module="sim/field/kernels.py"):
    """A cosmic-ray session (its tables, as cosmic-ray 8 writes them) with one mutant of each outcome, on
    ``SESSION_MODULE`` as ``module`` (written beside the session's folder's ``sim/``: the root of its paths)."""
    import sqlite3

    (path.parent / module).parent.mkdir(parents=True, exist_ok=True)
    (path.parent / module).write_text(SESSION_MODULE)
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE mutation_specs (module_path, operator_name, operator_args, occurrence, start_pos_row, "
                   "start_pos_col, end_pos_row, end_pos_col, definition_name, job_id PRIMARY KEY)")
        db.execute("CREATE TABLE work_results (worker_outcome, output, test_outcome, diff, job_id PRIMARY KEY)")
        results = {"a": ("NORMAL", "F", "KILLED"), "b": ("NORMAL", "timeout", "KILLED"), "c": ("NORMAL", ".", "SURVIVED"),
                   "d": ("SKIPPED", None, None), "e": ("EXCEPTION", "boom", "INCOMPETENT"),
                   "g": ("NORMAL", "E   Failed: Timeout (>30.0s) from pytest-timeout.\n1 failed", "KILLED")}
        for row, job in zip((2, 3, 4, 5, 6, 10, 7), "abcdefg"):
            db.execute("INSERT INTO mutation_specs VALUES (?, 'core/NumberReplacer', '{}', ?, ?, 4, ?, 5, ?, ?)",
                       (module, row, row, row, "sphere_drift" if job != "f" else None, job))
            if job in results:
                db.execute("INSERT INTO work_results VALUES (?, ?, ?, '', ?)", (*results[job], job))


def test_cosmic_ray_results_become_outcomes(tmp_path):
    _cosmic_ray_session(tmp_path / "kernels.sqlite")
    outcomes = read_cosmic_ray(tmp_path / "kernels.sqlite", tmp_path)
    expected = {f"sim.field.kernels:sphere_drift@+{row}:4:core/NumberReplacer#0": outcome for row, outcome in
                enumerate(("killed", "timeout", "survived", "excluded", "other"), start=1)}
    expected["sim.field.kernels:<LIMIT>@+0:4:core/NumberReplacer#0"] = "not checked"  # a constant: no function
    expected["sim.field.kernels:sphere_drift@+6:4:core/NumberReplacer#0"] = "timeout"  # a test past pytest's --timeout
    assert outcomes == expected
    with pytest.raises(FileNotFoundError, match="make mutants"):
        read_cosmic_ray(tmp_path / "missing.sqlite")


def test_command_writes_the_summary_from_mutmut_results(tmp_path):
    results = tmp_path / "mutants" / "sim"
    results.mkdir(parents=True)
    (results / "manifold.py.meta").write_text(json.dumps({"exit_code_by_key": FAKE_RUN}))
    equivalents = tmp_path / "equivalent.toml"
    equivalents.write_text('[equivalent]\n"sim.field.manifold.xǁSphereǁproject__mutmut_3" = "same values"\n')
    out = tmp_path / "build" / "summary.json"
    run = tmp_path / "run.json"
    run.write_text(json.dumps(RUN))
    _cosmic_ray_session(tmp_path / "kernels.sqlite")
    assert main([str(tmp_path / "mutants"), str(out), "--equivalents", str(equivalents), "--scope", "sim.*",
                 "--cosmic-ray", str(tmp_path / "kernels.sqlite"), "--run", str(run), "--run", str(run),
                 "--root", str(tmp_path)]) == 0
    written = json.loads(out.read_text())
    assert (written["totals"]["equivalent"], written["totals"]["total"], written["runs"]) == (1, 11, [RUN, RUN])
    assert written["modules"]["sim.field.kernels"]["excluded"] == 1
    with pytest.raises(FileNotFoundError, match="make mutants"):
        main([str(tmp_path / "empty"), str(out)])


def test_measure_records_exit_code_cpu_time_load_and_revision(tmp_path):
    burn = "import sys; sum(i * i for i in range(3_000_000)); sys.exit(3)"  # about 0.2 s of CPU, then exit 3
    record = measure([sys.executable, "-c", burn], interval=0.05)
    assert record["exit_code"] == 3
    assert record["cpu_seconds"] > 0.05  # the child's CPU time is counted ...
    assert record["load_average"]["samples"] >= 2  # ... and the load sampled while it ran (0.2 s > 0.05 s)
    assert record["revision"] == revision() != "unknown"  # the tests run in the project's git work tree
    idle = measure([sys.executable, "-c", "pass"])
    assert idle["cpu_seconds"] < record["cpu_seconds"]  # control: an idle child costs less
    with pytest.raises(ValueError, match="command must"):
        measure([])


def test_measure_command_writes_its_record_and_returns_the_exit_code(tmp_path):
    out = tmp_path / "build" / "run.json"
    assert main(["measure", str(out), "--", sys.executable, "-c", "raise SystemExit(2)"]) == 2
    assert json.loads(out.read_text())["command"][-1] == "raise SystemExit(2)"


def test_revision_outside_a_git_work_tree_is_unknown(tmp_path):
    assert revision(tmp_path) == "unknown"


@pytest.mark.full
def test_mutation_section(report_section, request):
    """The report's mutation-testing section, from the last `make mutants` (or how to run it)."""
    report_section(section(request.config.rootpath / SUMMARY, request.config.rootpath / RECORDED))
