"""The verdicts on trained GPT-2 XL / GPT-Neo 2.7B wherever the weights are, tested offline.

Tiny checkpoints with hand-set weights (tests/empirical/tiny_trained.py) are saved under the paper's hub ids
into a temporary Hugging Face cache; the report's own functions then find them, run them and give the
verdicts of emp.no-ffn, emp.full, emp.rate, emp.theory-scope and emp.in-kind-trained. Every verdict each
check can give is reached here: collapsing models -> supported (a finite run supports "E -> 0", never proves it;
emp.rate and emp.theory-scope, finite statements, verified), a non-collapsing control -> unsupported (refuted for
a rate claim's effect on the wrong side), no weights -> not-run with the command.
"""

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from empirical.__main__ import main
from empirical.audit import AuditSettings
from empirical.audit.report import audit_section, ffn_record, rate_record, run_rates, scope_record, trained_paper_audits
from empirical.checks import check_in_kind, check_trained
from empirical.run import RunSettings, load_results, run_experiment
from empirical.sources import (GPT2_XL, GPT_NEO, WEIGHTS_DIR_ENV, WEIGHTS_DIRS_ENV, WeightsFolderError, locate,
                               parse_weights_dirs, report_weights_dirs)
from empirical.suite import split_by_weights, trained_paper_runs, variants

from .tiny_trained import BUDGET, REVISION, RULE, save_to_hub_cache, tiny_model

AUDIT = AuditSettings(prompts=4, length=16, passes=2, seed=0)


def _empty_hub(folder, monkeypatch):
    """An empty Hugging Face cache under ``folder``, offline; no weights folders named in the environment."""
    cache = folder / "hf" / "hub"
    cache.mkdir(parents=True)
    monkeypatch.setenv("HF_HOME", str(folder / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for variable in (*WEIGHTS_DIR_ENV.values(), WEIGHTS_DIRS_ENV):
        monkeypatch.delenv(variable, raising=False)
    return cache


@pytest.fixture
def hub(tmp_path, monkeypatch):
    return _empty_hub(tmp_path, monkeypatch)


@pytest.fixture(scope="module")
def collapsing(tmp_path_factory):
    """Collapsing tiny models under both paper ids (GPT-2: an FFN that speeds the alignment, GPT-Neo: one that
    slows it, as printed), found in the cache and run as the report runs them: the suite's trained variants
    with and without FFN, and the audits. Computed once for the tests that read them."""
    folder = tmp_path_factory.mktemp("collapsing")
    with pytest.MonkeyPatch.context() as monkeypatch:
        _cache(_empty_hub(folder, monkeypatch), gpt2=tiny_model("gpt2", mlp="push"),
               neo=tiny_model("gpt-neo", mlp="echo"))
        runs, missing = _runs(folder, (False, True))
        audits, audits_missing = trained_paper_audits(AUDIT, folder / "audits")
    return {"runs": runs, "missing": missing, "audits": audits, "audits_missing": audits_missing, "folder": folder}


def _cache(hub, gpt2=None, neo=None):
    """Save tiny models under the paper's ids (``None``: leave that model out)."""
    if gpt2 is not None:
        save_to_hub_cache(gpt2, GPT2_XL, hub)
    if neo is not None:
        save_to_hub_cache(neo, GPT_NEO, hub)


def _runs(tmp_path, ffn):
    return trained_paper_runs(tmp_path / "runs", ffn, profile="cpu", budget=BUDGET)


# -- detection ------------------------------------------------------------------------------------------

def test_weights_are_found_in_the_cache_under_the_paper_ids(hub):
    assert locate(GPT2_XL) is None and locate(GPT_NEO) is None
    _cache(hub, gpt2=tiny_model("gpt2"))
    source = locate("openai-community/gpt2-xl")  # an alias finds the same model
    assert source.origin == "hf-cache" and source.repo_id == GPT2_XL and source.revision == REVISION
    assert source.path == hub / "models--gpt2-xl" / "snapshots" / REVISION
    assert "model.safetensors" in source.files
    assert locate(GPT_NEO) is None


def test_a_named_folder_wins_over_the_cache_and_a_folder_without_weights_is_an_error(hub, tmp_path, monkeypatch):
    _cache(hub, gpt2=tiny_model("gpt2"))
    folder = tmp_path / "mine"
    tiny_model("gpt2", "still").save_pretrained(folder)
    monkeypatch.setenv(WEIGHTS_DIR_ENV[GPT2_XL], str(folder))
    source = locate(GPT2_XL)
    assert source.origin == "folder" and source.path == folder.resolve()
    assert "CONSENSUS_WEIGHTS_GPT2_XL" in source.named_by
    other = tmp_path / "other"
    tiny_model("gpt2").save_pretrained(other)
    assert locate(GPT2_XL, {"gpt2-xl": other}).path == other.resolve()  # --weights-dir over the variable
    (tmp_path / "empty").mkdir()
    with pytest.raises(WeightsFolderError, match="has no config.json"):
        locate(GPT2_XL, {"gpt2-xl": tmp_path / "empty"})
    (tmp_path / "empty" / "config.json").write_text("{}")
    with pytest.raises(WeightsFolderError, match="none of the weight files"):
        locate(GPT2_XL, {"gpt2-xl": tmp_path / "empty"})
    monkeypatch.setenv(WEIGHTS_DIR_ENV[GPT_NEO], str(tmp_path / "nowhere"))
    with pytest.raises(WeightsFolderError, match="does not exist"):
        locate(GPT_NEO)


def test_weights_dir_options_are_parsed_with_clear_errors(tmp_path, monkeypatch):
    assert parse_weights_dirs(["openai-community/gpt2-xl=/data/x"]) == {GPT2_XL: Path("/data/x")}
    with pytest.raises(ValueError, match="must be MODEL=DIR"):
        parse_weights_dirs(["/data/x"])
    monkeypatch.setenv(WEIGHTS_DIRS_ENV, json.dumps({"gpt-neo-2.7B": str(tmp_path)}))
    assert report_weights_dirs() == {GPT_NEO: tmp_path}
    monkeypatch.setenv(WEIGHTS_DIRS_ENV, json.dumps({"smollm2-135m": str(tmp_path)}))
    with pytest.raises(ValueError, match="trained weights of"):
        report_weights_dirs()


def test_the_manifest_records_where_the_weights_came_from(hub, tmp_path):
    _cache(hub, neo=tiny_model("gpt-neo"))
    settings = RunSettings(model=GPT_NEO, weights="trained", device="cpu", **{**BUDGET, "passes": 1})
    run_experiment(settings, tmp_path / "run", progress=False)
    manifest, _ = load_results(tmp_path / "run")
    assert manifest["weights_source"]["origin"] == "hf-cache"
    assert manifest["weights_source"]["revision"] == REVISION
    assert manifest["model"]["layers"] == 4  # the tiny checkpoint, not the built-in 2.7B configuration


def test_trained_paper_variants_are_skipped_without_weights_and_an_error_when_asked_for(hub, tmp_path, capsys):
    ready, missing = split_by_weights(variants("cpu"))
    assert set(missing) == {"gpt2-xl-trained-no-ffn", "gpt2-xl-trained-ffn", "gpt-neo-2.7b-trained-no-ffn",
                            "gpt-neo-2.7b-trained-ffn"}
    assert all(v.weights != "trained" or v.model not in (GPT2_XL, GPT_NEO) for v in ready)
    status = main(["suite", "--only", "gpt2-xl-trained-ffn", "--out", str(tmp_path), "--quiet"])
    assert status == 2
    assert "hf download gpt2-xl" in capsys.readouterr().err
    assert main(["suite", "--weights-dir", "gpt2-xl", "--out", str(tmp_path)]) == 2
    assert "must be MODEL=DIR" in capsys.readouterr().err


# -- emp.no-ffn / emp.full: convergence -----------------------------------------------------------------

def test_no_weights_gives_not_run_with_the_command(hub, tmp_path):
    runs, missing = _runs(tmp_path, (False,))
    result = check_trained("emp.no-ffn", runs, missing, tmp_path / "fig7.png", "Fig. 7", "no FFN", rule=RULE)
    assert result.verdict == "not-run"
    assert "hf download gpt2-xl" in result.detail
    assert "CONSENSUS_WEIGHTS_GPT_NEO_2_7B=DIR make report" in result.detail


def test_collapsing_trained_models_support_figures_7_and_8(collapsing, tmp_path):
    assert len(collapsing["runs"]) == 4 and not collapsing["missing"]
    for claim, ffn in (("emp.no-ffn", False), ("emp.full", True)):
        runs = [(m, r) for m, r in collapsing["runs"] if m["settings"]["ffn"] == ffn]
        missing = collapsing["missing"]
        result = check_trained(claim, runs, missing, tmp_path / f"{claim}.png", "Fig. 7", "trained", rule=RULE)
        assert result.verdict == "supported", result.detail
        assert (tmp_path / f"{claim}.png").is_file()
        assert all(run["weights_source"]["origin"] == "hf-cache" for run in result.numbers["runs"])


def test_control_a_non_collapsing_trained_model_is_unsupported(hub, tmp_path):
    """Blocks that are the identity (zero value / output projections, zero MLP): E does not fall. A finite run goes
    against "E -> 0" and cannot refute it: ``unsupported``, even with the other model absent."""
    _cache(hub, gpt2=tiny_model("gpt2", "still"))
    runs, missing = _runs(tmp_path, (False,))
    result = check_trained("emp.no-ffn", runs, missing, tmp_path / "fig7.png", "Fig. 7", "no FFN", rule=RULE)
    assert result.verdict == "unsupported"
    assert list(missing) == [GPT_NEO] and "gpt-neo-2.7B" in result.detail  # the model that did not run is named


def test_one_paper_model_converging_does_not_verify_a_claim_about_both(hub, tmp_path):
    """GPT-2 XL's weights here and converging, GPT-Neo 2.7B's absent: the claim (figure 7 is about both) stays
    not-run, naming what converged and the command for the other; with both there it is supported
    (test_collapsing_trained_models_support_figures_7_and_8)."""
    _cache(hub, gpt2=tiny_model("gpt2"))
    runs, missing = _runs(tmp_path, (False,))
    result = check_trained("emp.no-ffn", runs, missing, tmp_path / "fig7.png", "Fig. 7", "no FFN", rule=RULE)
    assert [run["verdict"] for run in result.numbers["runs"]] == ["converging"]
    assert result.verdict == "not-run" and "no verdict from these alone" in result.detail
    assert "Every run converges" in result.detail and "gpt-neo-2.7B" in result.detail


# -- emp.full: the FFN's effect on the rate ---------------------------------------------------------------

def _rates(runs):
    return run_rates([(m["settings"]["model"], m, r) for m, r in runs])


def _suite_rates(tmp_path):
    return _rates(_runs(tmp_path, (False, True))[0])


def test_printed_ffn_effect_supported_on_the_suite_runs(collapsing):
    result = ffn_record([], _rates(collapsing["runs"]))
    assert result.verdict == "supported", result.detail
    assert result.numbers["decisive"] == {GPT2_XL: "faster", GPT_NEO: "slower"}


def test_control_the_opposite_ffn_effect_is_refuted(hub, tmp_path):
    _cache(hub, gpt2=tiny_model("gpt2", mlp="echo"), neo=tiny_model("gpt-neo", mlp="push"))
    result = ffn_record([], _suite_rates(tmp_path))
    assert result.verdict == "refuted"
    assert result.numbers["decisive"] == {GPT2_XL: "slower", GPT_NEO: "faster"}


def test_ffn_effect_without_weights_is_not_run(hub, tmp_path):
    result = ffn_record([], _suite_rates(tmp_path))
    assert result.verdict == "not-run" and "hf download EleutherAI/gpt-neo-2.7B" in result.detail


# -- emp.rate and emp.theory-scope from the audits of the trained models ------------------------------------

def test_audits_of_collapsing_models_verify_rate_and_ffn_effect(collapsing):
    audits = collapsing["audits"]
    assert [a["model"] for a in audits] == [GPT2_XL, GPT_NEO] and not collapsing["audits_missing"]
    assert audits[0]["weights_source"]["origin"] == "hf-cache"
    result = rate_record(audits)
    assert result.verdict == "verified", result.detail
    assert set(result.numbers["decisive"].values()) == {"faster"}
    # without suite runs, the FFN effect is decided on the audits
    assert ffn_record(audits).verdict == "supported"
    # four heads of rank 8 < 32: U = I and h = 1 fail, so no theorem covers these models
    scope = scope_record(audits)
    assert scope.verdict == "refuted"
    assert scope.numbers["covered_by"] == {GPT2_XL: [], GPT_NEO: []}
    section = audit_section(audits)
    assert "Trained weights of gpt2-xl and EleutherAI/gpt-neo-2.7B are on this machine" in section.text


def test_control_a_trained_model_no_faster_than_random_does_not_verify_the_rate_claim(hub, tmp_path):
    """Identity blocks against the tiny architecture's random weights, which barely move E either: their rates cannot
    be told apart at this budget, which is no evidence either way (``not-run``, saying so); a significantly slower
    trained model refutes the claim (tests/audit/test_report.py)."""
    _cache(hub, neo=tiny_model("gpt-neo", "still"))
    audits, missing = trained_paper_audits(AUDIT, tmp_path / "audits")
    result = rate_record(audits)
    assert result.verdict == "not-run" and "trained indistinguishable" in result.detail, result.detail
    assert list(missing) == [GPT2_XL] and "hf download gpt2-xl" in result.detail


def test_theory_scope_verified_when_u_is_the_identity(hub, tmp_path):
    """One head with W_O W_V = I, LayerNorm with gain 1 and centre 0: Theorem 5.1's hypotheses hold."""
    _cache(hub, gpt2=tiny_model("gpt2", heads=1, value_gain=1.0))
    audits, _ = trained_paper_audits(AUDIT, tmp_path / "audits")
    result = scope_record(audits)
    assert result.verdict == "verified", result.detail
    assert result.numbers["covered_by"][GPT2_XL] == ["Theorem 5.1 (U_eta = I)"]


def test_rate_and_scope_without_weights_are_not_run(hub, tmp_path):
    audits, missing = trained_paper_audits(AUDIT, tmp_path / "audits")
    assert audits == [] and set(missing) == {GPT2_XL, GPT_NEO}
    for result in (rate_record(audits), scope_record(audits)):
        assert result.verdict == "not-run" and "make report" in result.detail


# -- emp.in-kind-trained: the evidence of other families can fail ---------------------------------------

def test_in_kind_families_that_collapse_are_supported_side_by_side(collapsing, tmp_path):
    result = check_in_kind(collapsing["runs"], tmp_path / "in_kind.png", rule=RULE)
    assert result.verdict == "supported", result.detail
    assert (tmp_path / "in_kind.png").is_file() and len(result.numbers["runs"]) == 4


def test_control_an_in_kind_model_that_stops_collapsing_is_unsupported(collapsing, tmp_path):
    """A trained model saved to a folder (as --model DIR) whose blocks are the identity, beside a collapsing one."""
    tiny_model("gpt-neo", "still").save_pretrained(tmp_path / "still")
    settings = RunSettings(model=str(tmp_path / "still"), weights="trained", ffn=False, device="cpu",
                           **{**BUDGET, "passes": 2 * RULE.horizon})
    run_experiment(settings, tmp_path / "run", progress=False, until=tuple(RULE.grid().values()), rule=RULE)
    still = load_results(tmp_path / "run")
    assert still[0]["weights_source"]["origin"] == "folder"
    result = check_in_kind([collapsing["runs"][0], still], tmp_path / "in_kind.png", rule=RULE)
    assert result.verdict == "unsupported"
    assert "A run settled" in result.detail and str(tmp_path / "still") in result.detail
    run = result.numbers["runs"][1]
    # E does not move: settled in every cell, each at its own horizon; the run went on to the doubled one
    cells = run["decision"]["cells"]
    assert {cell["verdict"] for cell in cells.values()} == {"settled"} and run["passes_run"] == 2 * RULE.horizon
    assert (cells["base"]["decided_at"], cells["horizon x 2"]["decided_at"]) == (RULE.horizon, 2 * RULE.horizon)


def test_in_kind_needs_trained_runs(collapsing):
    with pytest.raises(ValueError, match="at least one trained run"):
        check_in_kind([], None, rule=RULE)
    manifest, results = collapsing["runs"][0]
    random = ({**manifest, "settings": {**manifest["settings"], "weights": "random"}}, results)
    with pytest.raises(ValueError, match="must all use trained weights"):
        check_in_kind([random], None, rule=RULE)


def test_report_build_names_weights_folders_to_the_tests(tmp_path, monkeypatch):
    import reports.__main__ as cli

    environments = []

    def run(command, **options):  # the report's pytest run records its environment; git answers a revision
        if "pytest" in command:
            environments.append(options["env"])
        return SimpleNamespace(returncode=0, stdout="0123abc", stderr="")

    monkeypatch.setattr(cli.subprocess, "run", run)
    assert cli.main(["build", "--out", str(tmp_path), "--no-bench", "--weights-dir", f"gpt2-xl={tmp_path}"]) == 0
    monkeypatch.setenv(WEIGHTS_DIRS_ENV, environments[0][WEIGHTS_DIRS_ENV])
    assert report_weights_dirs() == {GPT2_XL: tmp_path.resolve()}
    with pytest.raises(SystemExit):
        cli.main(["build", "--out", str(tmp_path), "--weights-dir", str(tmp_path)])


def test_control_the_report_tests_refuse_a_weights_folder_of_a_model_not_run_trained(tmp_path):
    """reports hands the folders over unchecked; the test process (tests/conftest.py) refuses an unknown model
    before collecting anything, as the report build's argument check runs it."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, WEIGHTS_DIRS_ENV: json.dumps({"smollm2-135m": str(tmp_path)})}
    refused = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "--no-report", "-p",
                              "no:cacheprovider", "tests/reports/test_registry.py"], cwd=root, env=env,
                             capture_output=True, text=True)
    assert refused.returncode == pytest.ExitCode.USAGE_ERROR, refused.stdout + refused.stderr
    assert "the report runs trained weights of" in refused.stderr


def test_the_cpu_profile_runs_two_trained_families_in_kind_with_the_smollm2_budget():
    trained = {v.key: v for v in variants("cpu") if v.weights == "trained"}
    for key in ("smollm2-trained-no-ffn", "smollm2-trained-ffn", "gemma3-trained-no-ffn", "gemma3-trained-ffn",
                "gpt2-xl-trained-ffn", "gpt-neo-2.7b-trained-no-ffn"):
        assert (trained[key].prompts, trained[key].length, trained[key].passes) == (8, 200, 50), key
        assert trained[key].rule.horizon == 50 and max(rule.horizon for rule in trained[key].until(True)) == 100
    assert trained["gemma3-trained-ffn"].model == "gemma3-270m" and trained["gemma3-trained-ffn"].ffn
