"""The mutation summary counts every mutant once, keeps equivalents apart, and the report section shows it."""

import json

import pytest

from reports.mutation import EQUIVALENTS, SUMMARY, main, module_name, read_equivalents, section, summarise

# mutmut's exit codes: 1 killed, 0 survived, 36 timed out, 33 no test reaches the mutant, -11 segfault
FAKE_RUN = {
    "sim.manifold.xǁSphereǁproject__mutmut_1": 1,
    "sim.manifold.xǁSphereǁproject__mutmut_2": 0,
    "sim.manifold.xǁSphereǁproject__mutmut_3": 0,
    "sim.manifold.x_check__mutmut_1": 36,
    "reports.records.x_worst_verdict__mutmut_1": 1,
    "reports.records.x_worst_verdict__mutmut_2": 33,
    "reports.records.x__jsonable__mutmut_4": -11,
}
EQUIVALENT = {"sim.manifold.xǁSphereǁproject__mutmut_3": "a copy instead of a view: same values"}


def test_module_name_drops_the_function_and_the_mutant_number():
    assert module_name("sim.manifold.xǁSphereǁproject__mutmut_3") == "sim.manifold"
    assert module_name("empirical.consensus.x_misalignment__mutmut_12") == "empirical.consensus"
    with pytest.raises(ValueError, match="mutant="):
        module_name("misalignment__mutmut_1")


def test_summary_counts_each_outcome_per_module_and_keeps_equivalents_apart():
    summary = summarise(FAKE_RUN, EQUIVALENT, seconds=60.0)
    manifold = summary["modules"]["sim.manifold"]
    assert (manifold["killed"], manifold["timeout"], manifold["survived"], manifold["equivalent"]) == (1, 1, 1, 1)
    assert manifold["survivors"] == ["sim.manifold.xǁSphereǁproject__mutmut_2"]
    assert manifold["score"] == pytest.approx(2 / 3)  # (killed + timed out) / non-equivalent tested mutants
    records = summary["modules"]["reports.records"]
    assert (records["killed"], records["no tests"], records["other"], records["total"]) == (1, 1, 1, 3)
    assert records["score"] == 1 / 2  # a mutant no test reaches is not detected
    assert records["survivors"] == ["reports.records.x_worst_verdict__mutmut_2"]
    assert summary["totals"]["total"] == len(FAKE_RUN)
    assert summary["totals"]["score"] == pytest.approx(3 / 5)
    assert summary["stale_equivalents"] == {}


def test_an_equivalent_that_no_longer_survives_is_reported_stale_not_hidden(tmp_path):
    listed = {**EQUIVALENT, "sim.manifold.xǁSphereǁproject__mutmut_1": "once equivalent",
              "sim.gone.x_f__mutmut_1": "mutant no longer exists"}
    summary = summarise(FAKE_RUN, listed)
    assert set(summary["stale_equivalents"]) == {"sim.manifold.xǁSphereǁproject__mutmut_1", "sim.gone.x_f__mutmut_1"}
    assert summary["modules"]["sim.manifold"]["killed"] == 1  # a killed mutant stays killed
    assert "stale" in section_of(summary, tmp_path).text


def test_summary_counts_only_the_mutants_in_scope():
    summary = summarise(FAKE_RUN, EQUIVALENT, scope=("sim.manifold.xǁSphereǁ*",))
    assert list(summary["modules"]) == ["sim.manifold"]
    assert summary["totals"]["total"] == 3  # x_check is out of scope, and so is reports.records
    assert summary["scope"] == ["sim.manifold.xǁSphereǁ*"]


def test_an_equivalent_without_a_reason_is_refused(tmp_path):
    path = tmp_path / "equivalent.toml"
    path.write_text('[equivalent]\n"sim.manifold.x_f__mutmut_1" = " "\n')
    with pytest.raises(ValueError, match="reason"):
        read_equivalents(path)


def test_checked_in_equivalents_each_give_a_reason():
    assert all(reason.strip() for reason in read_equivalents(EQUIVALENTS).values())


def section_of(summary, folder):
    path = folder / "summary.json"
    path.write_text(json.dumps(summary))
    return section(path)


def test_section_tabulates_a_summary_per_module_with_its_survivors(tmp_path):
    result = section_of(summarise(FAKE_RUN, EQUIVALENT, seconds=120.0), tmp_path)
    counts, survivors = result.tables
    rows = {row[0]: row for row in counts.rows}
    assert rows["sim.manifold"] == ("sim.manifold", 4, 1, 1, 1, 1, 0, 0, "66.7%")
    assert rows["all"][-1] == "60.0%"
    assert set(survivors.rows) == {("sim.manifold.xǁSphereǁproject__mutmut_2",),
                                   ("reports.records.x_worst_verdict__mutmut_2",)}
    assert "2 min" in result.text


def test_section_without_a_summary_says_how_to_make_one(tmp_path):
    result = section(tmp_path / "summary.json")
    assert "make mutants" in result.text and result.tables == ()


def test_command_writes_the_summary_from_mutmut_results(tmp_path):
    results = tmp_path / "mutants" / "sim"
    results.mkdir(parents=True)
    (results / "manifold.py.meta").write_text(json.dumps({"exit_code_by_key": FAKE_RUN}))
    equivalents = tmp_path / "equivalent.toml"
    equivalents.write_text('[equivalent]\n"sim.manifold.xǁSphereǁproject__mutmut_3" = "same values"\n')
    out = tmp_path / "build" / "summary.json"
    assert main([str(tmp_path / "mutants"), str(out), "--equivalents", str(equivalents),
                 "--scope", "sim.*", "--seconds", "90"]) == 0
    written = json.loads(out.read_text())
    assert (written["totals"]["equivalent"], written["totals"]["total"], written["seconds"]) == (1, 4, 90.0)
    with pytest.raises(FileNotFoundError, match="make mutants"):
        main([str(tmp_path / "empty"), str(out)])


@pytest.mark.full
def test_mutation_section(report_section, request):
    """The report's mutation-testing section, from the last `make mutants` (or how to run it)."""
    report_section(section(request.config.rootpath / SUMMARY))
