"""The report's scales (foundation/scale.py): what each runs, and that a short report says what it left out."""

import pytest

from empirical import report_jobs
from empirical.checks import FULL_SCALE_COMMAND, PAPER_COMMAND, SHORT_SCALE_REASON, left_at_short_scale
from empirical.sources import PAPER_MODELS
from empirical.suite import PROFILES, report_profile_variants, report_variants
from foundation.registration import check
from foundation.scale import REPORT_SCALE_ENV, SCALES, check_sizes, default_scale, report_scale, scaled
from reports import __main__ as build_command

PAPER_KEYS = ("gpt2-xl-random-ffn", "gpt-neo-2.7b-redrawn-no-ffn")
IN_KIND_KEYS = ("smollm2-trained-ffn", "gemma3-trained-no-ffn")


@pytest.fixture(params=SCALES)
def scale(request, monkeypatch):
    monkeypatch.setenv(REPORT_SCALE_ENV, request.param)
    return request.param


def test_make_report_builds_the_full_scale_only_with_a_gpu():
    assert default_scale(cuda_available=True) == "full"
    assert default_scale(cuda_available=False) == "short"


def test_an_unknown_scale_is_refused(monkeypatch):
    monkeypatch.setenv(REPORT_SCALE_ENV, "huge")
    with pytest.raises(ValueError, match="must be one of"):
        report_scale()


def test_the_short_scale_runs_the_full_sizes_in_the_full_builds_folders(scale, tmp_path):
    assert check_sizes() == ("smoke" if scale == "smoke" else "full")
    assert scaled(tmp_path / "runs") == (tmp_path / ("runs-smoke" if scale == "smoke" else "runs"))


def test_only_the_short_scale_leaves_out_the_paper_architectures(scale):
    ran = {v.model for v in report_profile_variants()}
    asked = report_variants(*PAPER_KEYS, *IN_KIND_KEYS)
    if scale == "short":
        assert not ran & set(PAPER_MODELS) and {v.key for v in asked} == set(IN_KIND_KEYS)
    elif scale == "full":
        assert set(PAPER_MODELS) <= ran and {v.key for v in asked} == {*PAPER_KEYS, *IN_KIND_KEYS}
    else:  # the smoke scale's tiny stand-ins, every key
        assert not ran & set(PAPER_MODELS) and len(asked) == len(PAPER_KEYS) + len(IN_KIND_KEYS)
    by_key = {v.key: v for v in PROFILES["cpu"]}
    # a run that does take place is the full scale's own: the short scale never shrinks one
    assert all(v == by_key[v.key] for v in asked) or scale == "smoke"


def test_the_short_scales_jobs_keep_the_audits_and_the_in_kind_runs(monkeypatch):
    monkeypatch.setenv(REPORT_SCALE_ENV, "short")
    short = report_jobs.jobs()
    monkeypatch.setenv(REPORT_SCALE_ENV, "full")
    full = report_jobs.jobs()
    assert set(short) < set(full)
    left = set(full) - set(short)
    assert left and all(name.startswith("run ") and ("gpt2-xl" in name or "gpt-neo" in name) for name in left)
    assert any(name.startswith("audit ") for name in short)
    assert [short[name] for name in short] == [full[name] for name in short]  # the same settings


@check("emp.random-fixed", method="empirical")
def _short_record():
    return left_at_short_scale("emp.random-fixed", "Fig. 9")


def test_a_claim_left_at_the_short_scale_is_not_run_with_the_commands_that_run_it():
    result = _short_record()
    assert (result.claim, result.verdict) == ("emp.random-fixed", "not-run")
    assert "make report SCALE=full" in result.detail and PAPER_COMMAND in result.detail
    assert SHORT_SCALE_REASON in result.detail and result.numbers["scale"] == "short"
    assert list(result.numbers["missing"].values()) == [FULL_SCALE_COMMAND]  # the first look's command for it


@pytest.mark.parametrize("cuda, expected", [(True, "full"), (False, "short")])
def test_scale_auto_asks_for_a_cuda_device(monkeypatch, tmp_path, cuda, expected):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    chosen = {}
    monkeypatch.setattr(build_command, "build", lambda out, **kwargs: chosen.update(kwargs) or 0)
    assert build_command.main(["build", "--out", str(tmp_path / "r")]) == 0
    assert chosen["scale"] == expected
    assert build_command.main(["build", "--out", str(tmp_path / "r"), "--scale", "smoke"]) == 0
    assert chosen["scale"] == "smoke"  # a scale named is kept


@pytest.mark.parametrize("scale", SCALES)
def test_the_reports_first_screen_names_its_scale_and_what_it_left_out(scale):
    from reports import render

    page = render.render_html(entries=[], sections=[], manifest={"scale": scale, "full_checks": True}, counts={},
                              mathjax=None)
    header = page.split("</header>")[0]
    assert f'<code id="scale">{scale}</code>' in header
    assert ("recorded not-run" in header) == (scale == "short")
    # the control: a test run (no expensive checks) names no report scale
    test_run = render.render_html(entries=[], sections=[], manifest={"scale": scale, "full_checks": False}, counts={},
                                  mathjax=None).split("</header>")[0]
    assert f'<code id="scale">' not in test_run and "a test run" in test_run
