"""The machine-readable outputs and their JSON Schemas (foundation/schemas/): each schema is valid, carries the version
the writers write, and real outputs of the commands validate against it; a file missing a core key does not."""

import json
from pathlib import Path

import jsonschema
import pytest

from consensus import cli
from foundation.outputs import SCHEMA_VERSIONS, SCHEMAS, SETTINGS_FILE, schema_path
from sim.conjectures.families import FAMILIES
from sim.conjectures.distributed import run_search
from sim.conjectures.search import planted
from sim.conjectures.seeking import run_seek
from tests.sim.test_conjectures import _repulsive, _repulsive_hypotheses


pytest_plugins = ["pytester"]


def schema(name: str) -> dict:
    return json.loads((SCHEMAS / f"{name}.schema.json").read_text())


def assert_valid(name: str, path: Path) -> dict:
    data = json.loads(Path(path).read_text())
    jsonschema.validate(data, schema(name), cls=jsonschema.Draft202012Validator)
    assert data["schema_version"] == SCHEMA_VERSIONS[name]
    return data


@pytest.mark.parametrize("name", sorted(SCHEMA_VERSIONS))
def test_each_schema_is_valid_and_states_the_version_written(name):
    document = schema(name)
    jsonschema.Draft202012Validator.check_schema(document)
    assert document["properties"]["schema_version"] == {"const": SCHEMA_VERSIONS[name]}
    assert "schema_version" in document["required"] and document["additionalProperties"] is True


def test_every_schema_file_is_a_known_output():
    assert sorted(p.name.removesuffix(".schema.json") for p in SCHEMAS.glob("*.json")) == sorted(SCHEMA_VERSIONS)


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "tiny"
    assert cli.main(["run", "--model", "tiny-llama", "--weights", "random", "--prompts", "2", "--length", "8",
                     "--passes", "2", "--device", "cpu", "--quiet", "--out", str(out)]) == 0
    return out


def test_a_run_writes_results_and_settings_that_validate(run_folder):
    results = assert_valid("results", run_folder / "results.json")
    assert len(results["E_mean"]) == results["passes"] * results["layers"] + 1
    assert_valid("settings", run_folder / SETTINGS_FILE)


def test_a_search_writes_a_summary_and_witnesses_that_validate(tmp_path):
    family = planted(FAMILIES["conj.gradient-equilibria"], claim="planted.repulsive", tokens=(2,), dims=(2,),
                     horizon=50.0, decode=_repulsive, hypotheses=_repulsive_hypotheses)
    summary = run_search(family, 4, tmp_path, chunk_size=4, adversarial=False, progress=False)
    assert assert_valid("summary", tmp_path / "summary.json")["witnesses"] == summary["witnesses"] != []
    for name in summary["witnesses"]:
        assert assert_valid("witness", tmp_path / "witnesses" / "planted.repulsive" / f"{name}.json")["P"]
    assert_valid("settings", tmp_path / SETTINGS_FILE)


def test_a_seeking_search_writes_a_summary_and_witnesses_that_validate(tmp_path):
    """One instance of conj.nonsymmetric-full, seed 0: a certified hit (the instance is seeded; tests/sim/test_karagodin.py
    finds the same hit by the CLI)."""
    summary = run_seek("conj.nonsymmetric-full", tmp_path, budget=60.0, seed=0, instances=3)
    written = assert_valid("seek-summary", tmp_path / "summary.json")
    assert written["witnesses"] == summary["witnesses"] != [] and written["search"] == "seek"
    for name in summary["witnesses"]:
        assert assert_valid("witness", tmp_path / "witnesses" / "conj.nonsymmetric-full" / f"{name}.json")["P"]
    assert_valid("settings", tmp_path / SETTINGS_FILE)


def test_a_seek_summary_is_not_a_random_search_summary_nor_the_reverse(tmp_path):
    """The two summary.json layouts are told apart by their schemas: neither validates against the other's."""
    run_seek("conj.gradient-equilibria", tmp_path / "seek", budget=60.0, instances=1)
    seek_summary = json.loads((tmp_path / "seek" / "summary.json").read_text())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(seek_summary, schema("summary"), cls=jsonschema.Draft202012Validator)
    jsonschema.validate(seek_summary, schema("seek-summary"), cls=jsonschema.Draft202012Validator)
    del seek_summary["result"]
    with pytest.raises(jsonschema.ValidationError, match="result"):
        jsonschema.validate(seek_summary, schema("seek-summary"), cls=jsonschema.Draft202012Validator)
    family = planted(FAMILIES["conj.gradient-equilibria"], claim="planted.repulsive", tokens=(2,), dims=(2,),
                     horizon=50.0, decode=_repulsive, hypotheses=_repulsive_hypotheses)
    random_summary = run_search(family, 4, tmp_path / "random", chunk_size=4, adversarial=False, progress=False)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(json.loads(json.dumps(random_summary, default=float)), schema("seek-summary"),
                            cls=jsonschema.Draft202012Validator)


def test_a_test_run_writes_verdicts_that_validate(pytester):
    pytester.makepyfile(test_one=(
        "from foundation.registration import check\n"
        "@check('full.wendel', method='exact')\n"
        "def test_one():\n    pass\n"))
    pytester.runpytest("-p", "reports.pytest_plugin", "--report-dir", "out").assert_outcomes(passed=1)
    verdicts = assert_valid("verdicts", pytester.path / "out" / "verdicts.json")
    assert {c["claim"]: c["verdict"] for c in verdicts["claims"]}["full.wendel"] == "verified"


@pytest.mark.parametrize("name, damage", [
    pytest.param("results", lambda d: d.pop("E"), id="results-without-E"),
    pytest.param("results", lambda d: d.update(layers="30"), id="results-layers-a-string"),
    pytest.param("settings", lambda d: d.update(schema_version=2), id="settings-another-version"),
])
def test_a_file_missing_a_core_key_does_not_validate(run_folder, name, damage):
    data = json.loads((run_folder / ("results.json" if name == "results" else SETTINGS_FILE)).read_text())
    damage(data)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, schema(name), cls=jsonschema.Draft202012Validator)


STORED_WITNESSES = sorted(p for p in (Path(__file__).resolve().parents[2] / "sim" / "conjectures" / "witnesses").glob("*/*.json")
                          if p.name != "index.json")


@pytest.mark.parametrize("path", STORED_WITNESSES, ids=[f"{p.parent.name}/{p.stem}" for p in STORED_WITNESSES])
def test_every_stored_witness_validates(path):
    assert assert_valid("witness", path)["claim"] == path.parent.name


def test_a_witness_without_its_certificate_does_not_validate():
    witness = json.loads(STORED_WITNESSES[0].read_text())
    del witness["certificate"]["numbers"]["basin_radius"]
    with pytest.raises(jsonschema.ValidationError, match="basin_radius"):
        jsonschema.validate(witness, schema("witness"), cls=jsonschema.Draft202012Validator)


def test_every_output_has_its_schema_file_and_an_unknown_name_none():
    """sim.conjectures.replay finds the witness schema through foundation.outputs.schema_path, not a path of its own."""
    assert all(schema_path(name).is_file() for name in SCHEMA_VERSIONS)
    with pytest.raises(KeyError, match="no output named 'witnesses'"):
        schema_path("witnesses")
