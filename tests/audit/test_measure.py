"""The audit of one model (empirical.audit.measure): its rate summaries and paired comparisons against the rate fits
they wrap, the audit's parts against the functions that measure them, the runs it makes (trained and random, spied
on, with no checkpoint downloaded), and the memory check at its bound (about two seconds of CPU together)."""

import io

import numpy as np
import pytest
import threadpoolctl
import torch

import empirical.audit.measure as measure
from empirical.adapters import adapter_for
from empirical.audit import AuditSettings
from empirical.audit.checklist import hypothesis_rows
from empirical.audit.rates import E_FLOOR, blocks_to_fraction, compare_rates, fit_exponential
from empirical.audit.states import audit_states
from empirical.audit.weights import audit_weights, embedding_scale
from empirical.floor import measure_floor
from empirical.loop import embed
from empirical.models import builtin_config, describe_model, load_model
from empirical.prompts import authors_prompts


def _decaying(rates, blocks=12, seed=0):
    """E of prompts decaying at ``rates`` per block, with seeded multiplicative noise."""
    rng = np.random.default_rng(seed)
    k = np.arange(blocks)
    return 0.8 * np.exp(-np.asarray(rates)[:, None] * k) * np.exp(0.05 * rng.normal(size=(len(rates), blocks)))


# --- rates -----------------------------------------------------------------------------------------------------------
def test_a_rate_summary_is_the_fit_above_the_floor_with_the_means_at_both_ends():
    values = _decaying([0.3, 0.35, 0.25])
    values[0, 0] = 2.0  # the means at both ends are over prompts, not the first prompt's
    floor = float(np.sort(values[:, -1])[1])  # censors the smallest last values: a fit different from the default floor
    summary = measure.rate_summary(values, floor)
    fit = fit_exponential(values, floor=floor)
    assert summary == {"floor": floor, "rate": fit.rate, "ci_low": fit.ci_low, "ci_high": fit.ci_high, "r2": fit.r2,
                       "half_life": fit.half_life, "per_prompt": summary["per_prompt"], "window": list(fit.window),
                       "blocks_to_half": blocks_to_fraction(values, 0.5), "E_start": float(np.mean(values[:, 0])),
                       "E_end": float(np.mean(values[:, -1]))}
    np.testing.assert_array_equal(summary["per_prompt"], fit.per_prompt)
    assert summary["rate"] != fit_exponential(values).rate  # the floor was used
    assert summary["blocks_to_half"] is not None and isinstance(summary["window"], list)
    default = measure.rate_summary(values)
    assert default["floor"] == E_FLOOR and default["rate"] == fit_exponential(values, floor=E_FLOOR).rate


def test_a_comparison_is_the_paired_comparison_of_the_two_fits_prompt_by_prompt():
    fast, slow = _decaying([0.3, 0.35, 0.25, 0.3]), _decaying([0.1, 0.12, 0.09, 0.1], seed=1)
    fast[1, 2:] = 0.0  # one prompt under the floor from block 2 (2 points): its rate is nan and left out of the pairs
    first, second = measure.rate_summary(fast, 1e-6), measure.rate_summary(slow, 1e-6)
    assert np.isnan(first["per_prompt"][1])
    expected = compare_rates(fit_exponential(fast, floor=1e-6), fit_exponential(slow, floor=1e-6))
    result = measure.comparison(first, second)
    assert result == {"difference": expected.difference, "ci_low": expected.ci_low, "ci_high": expected.ci_high,
                      "ratio": expected.ratio, "verdict": expected.verdict, "prompts": expected.prompts}
    assert result["verdict"] == "faster" and result["prompts"] == 3
    assert measure.comparison(second, first)["verdict"] == "slower"  # control: the order matters
    # the fit rebuilt from the summary is the fit itself
    rebuilt = measure._fit(first)
    fit = fit_exponential(fast, floor=1e-6)
    assert (rebuilt.rate, rebuilt.ci_low, rebuilt.ci_high, rebuilt.r2, rebuilt.window) == (
        fit.rate, fit.ci_low, fit.ci_high, fit.r2, fit.window)
    np.testing.assert_array_equal(rebuilt.per_prompt, fit.per_prompt)
    assert rebuilt.per_prompt.dtype == np.float64 and rebuilt.window == tuple(first["window"])
    assert rebuilt == type(fit)(**{**fit.__dict__, "per_prompt": rebuilt.per_prompt})
    assert measure._fit({**first, "per_prompt": [0.1, float("nan"), 0.2, 0.3]}).prompts == 3
    # a rate stored as JSON's null is a missing prompt (nan), not an object
    nulls = measure._fit({**first, "per_prompt": [0.1, None, 0.2, None]})
    assert nulls.prompts == 2 and nulls.per_prompt.dtype == np.float64 and np.isnan(nulls.per_prompt[1])
    # float32 rates are compared in float64
    single = {**first, "per_prompt": np.float32([0.1, 0.3, 0.7, 0.9])}
    assert measure._fit(single).per_prompt.dtype == np.float64
    assert measure.comparison(single, second) == measure.comparison(
        {**single, "per_prompt": np.float32([0.1, 0.3, 0.7, 0.9]).astype(np.float64)}, second)


# --- the audit of one adapter ----------------------------------------------------------------------------------------
class _Clock:
    """``time.time`` that advances one second per reading."""

    def __init__(self):
        self.now = 100.0

    def time(self):
        self.now += 1.0
        return self.now


def test_an_adapters_audit_is_its_weights_states_floors_and_rates_with_one_blas_thread(monkeypatch):
    # float64: the floor's block inputs in the run's dtype (float32 rotary tables would move its E by 1e-8)
    adapter = adapter_for(load_model("tiny-llama", "random", seed=4, dtype=torch.float64))
    ids = torch.tensor(authors_prompts(3, 6, adapter.vocab_size))
    threads = []

    def spied_weights(adapter):
        threads.append({pool["num_threads"] for pool in threadpoolctl.threadpool_info() if pool["user_api"] == "blas"})
        return audit_weights(adapter)

    limits = []

    def spied_limits(**kwargs):  # OpenMP's threads (PyTorch's) are left alone: only BLAS is limited
        limits.append(kwargs)
        return threadpoolctl.threadpool_limits(**kwargs)

    monkeypatch.setattr(measure, "audit_weights", spied_weights)
    monkeypatch.setattr(measure, "threadpool_limits", spied_limits)
    monkeypatch.setattr(measure, "time", _Clock())
    lines = []
    # the audit sets one BLAS thread whatever it finds (OpenMP's are not raised here: PyTorch's pool would hang in
    # the forked processes of a mutation run)
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        run = measure.audit_adapter(adapter, ids, 2, progress=lines.append)
    assert threads == [{1}] and limits == [{"limits": 1, "user_api": "blas"}]
    assert lines == ["weights: 3 layers", "states with FFN: 3 prompts x 2 passes (+1s)",
                     "states without FFN: 3 prompts x 2 passes (+2s)"]
    assert run["seconds"] == 3.0 and run["context_length"] == adapter.context_length  # 3: the third reading
    expected_weights = audit_weights(adapter)
    expected_weights["embedding_scale"] = embedding_scale(adapter, ids)
    assert run["weights"] == expected_weights
    assert list(run["variants"]) == ["ffn", "no-ffn"]
    for name, ffn in (("ffn", True), ("no-ffn", False)):
        variant = run["variants"][name]
        states = audit_states(adapter, ids, 2, ffn=ffn)
        assert variant["ffn"] is ffn
        for key, value in states.items():
            np.testing.assert_array_equal(variant[key], value)
        x, _ = embed(adapter, ids)
        floor = measure_floor(adapter, x, adapter.block_inputs(ids.shape[1], x.device, x.dtype), ffn=ffn)
        assert {k: v for k, v in variant["floor"].items() if k != "seconds"} == {
            k: v for k, v in floor.items() if k != "seconds"}
        rate = measure.rate_summary(states["E"], floor["E_floor"])
        np.testing.assert_array_equal(variant["rate"].pop("per_prompt"), rate.pop("per_prompt"))
        assert variant["rate"] == rate
    restored = {name: {**run["variants"][name]["rate"],
                       "per_prompt": fit_exponential(run["variants"][name]["E"],
                                                     floor=run["variants"][name]["floor"]["E_floor"]).per_prompt}
                for name in ("ffn", "no-ffn")}
    assert run["ffn_effect"] == measure.comparison(restored["ffn"], restored["no-ffn"])
    # without a progress callback nothing is said, and the audit is the same
    monkeypatch.setattr(measure, "time", _Clock())
    quiet = measure.audit_adapter(adapter, ids, 2)
    assert quiet["seconds"] == 3.0 and quiet["ffn_effect"] == run["ffn_effect"]


def test_the_floor_is_measured_with_block_inputs_in_the_runs_dtype(monkeypatch):
    """bfloat16: the rotary tables and masks are made in the run's dtype (float32 ones do not mix with bfloat16
    values); the weights and states are stand-ins, only the floor is measured here."""
    adapter = adapter_for(load_model("tiny-llama", "random", seed=4, dtype=torch.bfloat16))
    ids = torch.tensor(authors_prompts(2, 6, adapter.vocab_size))
    monkeypatch.setattr(measure, "audit_weights", lambda adapter: {})
    monkeypatch.setattr(measure, "embedding_scale", lambda adapter, ids: {})
    monkeypatch.setattr(measure, "audit_states", lambda adapter, ids, passes, ffn: {"E": _decaying([0.3, 0.2])})
    asked = []  # made for the embeddings' device and dtype (the CPU here: a spy tells)
    made = adapter.block_inputs
    adapter.block_inputs = lambda tokens, device, dtype: asked.append((tokens, device, dtype)) or made(tokens, device,
                                                                                                         dtype)
    run = measure.audit_adapter(adapter, ids, 1)
    assert asked == [(6, torch.device("cpu"), torch.bfloat16)] * 2
    del adapter.block_inputs
    x, _ = embed(adapter, ids)
    for name, ffn in (("ffn", True), ("no-ffn", False)):
        floor = measure_floor(adapter, x, adapter.block_inputs(6, x.device, torch.bfloat16), ffn=ffn)
        assert run["variants"][name]["floor"]["E_floor"] == floor["E_floor"]
    with pytest.raises(RuntimeError, match="same dtype"):  # control: float32 tables and a bfloat16 run do not mix
        measure_floor(adapter, x, adapter.block_inputs(6, x.device, torch.float32), ffn=False)


def _spied_audit(monkeypatch):
    """``audit_model`` with loads of random weights only (trained ones drawn with another seed), and its calls."""
    calls = {"memory": [], "load": [], "audit": []}
    real_load, real_audit = measure.load_model, measure.audit_adapter

    def load(model, weights, *, seed, dtype):
        calls["load"].append((model, weights, seed, dtype))
        return real_load(model, "random", seed=seed + (weights == "trained"), dtype=dtype)

    def audit(adapter, ids, passes, *, progress):
        calls["audit"].append((adapter.architecture, ids.tolist(), passes, progress))
        return real_audit(adapter, ids, passes, progress=progress)

    monkeypatch.setattr(measure, "ensure_memory", lambda model, dtype: calls["memory"].append((model, dtype)))
    monkeypatch.setattr(measure, "load_model", load)
    monkeypatch.setattr(measure, "audit_adapter", audit)
    return calls


def test_a_trained_audit_also_audits_random_weights_and_compares_them_variant_by_variant(monkeypatch):
    calls = _spied_audit(monkeypatch)
    settings = AuditSettings(prompts=2, length=5, passes=1, seed=7)
    say = [].append
    result = measure.audit_model("tiny-gpt2", "trained", settings, dtype=torch.float64, progress=say)
    assert calls["memory"] == [("tiny-gpt2", torch.float64)] * 2
    assert calls["load"] == [("tiny-gpt2", "trained", 7, torch.float64), ("tiny-gpt2", "random", 7, torch.float64)]
    ids = authors_prompts(2, 5, 97)
    assert calls["audit"] == [("gpt2", ids, 1, say)] * 2
    assert (result["model"], result["weights"], result["dtype"]) == ("tiny-gpt2", "trained", "torch.float64")
    assert result["settings"] == settings.__dict__
    assert result["description"] == describe_model("tiny-gpt2", adapter_for(load_model("tiny-gpt2", "random", seed=8,
                                                                                       dtype=torch.float64)))
    assert list(result["runs"]) == ["trained", "random"]
    for variant in ("ffn", "no-ffn"):
        trained, random = (result["runs"][name]["variants"][variant]["rate"] for name in ("trained", "random"))
        assert result["trained_vs_random"][variant] == measure.comparison(trained, random)
    assert list(result["trained_vs_random"]) == ["ffn", "no-ffn"]
    assert result["hypotheses"] == {name: hypothesis_rows(run, 5) for name, run in result["runs"].items()}
    assert result["runs"]["trained"]["weights"] != result["runs"]["random"]["weights"]  # two different models


def test_an_audit_is_of_trained_weights_unless_told_otherwise(monkeypatch):
    calls = _spied_audit(monkeypatch)
    result = measure.audit_model("tiny-gpt2", settings=AuditSettings(prompts=2, length=5, passes=1, seed=3))
    assert result["weights"] == "trained" and list(result["runs"]) == ["trained", "random"]
    assert [load[1] for load in calls["load"]] == ["trained", "random"]


@pytest.mark.parametrize("weights, compare_random", [("random", None), ("trained", False), ("random", False)])
def test_random_weights_or_no_comparison_audit_one_model(monkeypatch, weights, compare_random):
    calls = _spied_audit(monkeypatch)
    result = measure.audit_model("tiny-gpt2", weights, AuditSettings(prompts=2, length=5, passes=1, seed=3),
                                 compare_random=compare_random)
    assert calls["memory"] == [("tiny-gpt2", torch.float32)]
    assert calls["load"] == [("tiny-gpt2", weights, 3, torch.float32)]
    assert list(result["runs"]) == [weights] and "trained_vs_random" not in result
    assert list(result["hypotheses"]) == [weights] and result["dtype"] == "torch.float32"


def test_bad_weights_and_a_comparison_of_random_weights_are_refused_before_any_load(monkeypatch):
    calls = _spied_audit(monkeypatch)
    with pytest.raises(ValueError, match="must be 'trained' or 'random'"):
        measure.audit_model("tiny-gpt2", "redrawn")
    with pytest.raises(ValueError, match="needs weights='trained'"):
        measure.audit_model("tiny-gpt2", "random", compare_random=True)
    assert calls == {"memory": [], "load": [], "audit": []}


# --- memory ----------------------------------------------------------------------------------------------------------
def _meminfo(monkeypatch, text=None, error=None):
    def fake_open(path):
        assert path == "/proc/meminfo"
        if error:
            raise error
        return io.StringIO(text)

    monkeypatch.setattr(measure, "open", fake_open, raising=False)


@pytest.mark.parametrize("text, expected", [
    ("MemTotal:  8000 kB\nMemFree:  100 kB\nMemAvailable:   2048 kB\nBuffers:  7 kB\n", 2048 * 1024),
    ("MemTotal:  8000 kB\nMemAvailable: 1 kB\n", 1024),
    ("MemTotal:  8000 kB\nMemFree:  100 kB\n", None),  # an old kernel without the line
    ("", None)], ids=["middle", "last", "absent", "empty"])
def test_available_memory_is_meminfos_line_in_bytes(monkeypatch, text, expected):
    _meminfo(monkeypatch, text)
    assert measure.available_memory() == expected


def test_available_memory_is_none_where_meminfo_cannot_be_read(monkeypatch):
    _meminfo(monkeypatch, error=FileNotFoundError("no /proc"))
    assert measure.available_memory() is None


def _needed(model, dtype):
    """Bytes of a model's parameters in ``dtype`` with the overhead (counted on the model itself)."""
    parameters = sum(p.numel() for p in load_model(model, "random").parameters())
    return int(parameters * torch.finfo(dtype).bits // 8 * (1 + measure.MEMORY_OVERHEAD))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_memory_check_refuses_exactly_when_the_model_needs_more_than_is_available(monkeypatch, dtype):
    monkeypatch.setattr("empirical.models.load_config", lambda name: builtin_config(name))
    needed = _needed("tiny-gpt2", dtype)
    monkeypatch.setattr(measure, "available_memory", lambda: needed)
    measure.ensure_memory("tiny-gpt2", dtype)  # exactly enough: it fits
    monkeypatch.setattr(measure, "available_memory", lambda: needed - 1)
    with pytest.raises(MemoryError, match="needs about"):
        measure.ensure_memory("tiny-gpt2", dtype)
    monkeypatch.setattr(measure, "available_memory", lambda: None)  # unknown: not refused
    measure.ensure_memory("tiny-gpt2", dtype)
