"""Parameter fingerprints: each parameter's sample, mean and std, gathered per device; on CUDA, replayed from a graph."""

import pytest
import torch

from empirical.fingerprints import FINGERPRINT_SAMPLE, fingerprint
from empirical.models import build_random


def _by_hand(parameter: torch.Tensor) -> tuple[torch.Tensor, float, float]:
    """The sample and moments one parameter's fingerprint should hold, computed alone in float64."""
    flat = parameter.detach().reshape(-1).double()
    step = max(1, flat.numel() // FINGERPRINT_SAMPLE)
    std = float(flat.std()) if flat.numel() > 1 else 0.0
    return flat[::step][:FINGERPRINT_SAMPLE].float(), float(flat.mean()), std


@pytest.mark.parametrize("name", ["tiny-gpt2", "tiny-gpt-neo", "tiny-llama"])
def test_every_parameter_gets_its_own_sample_and_moments(name):
    """Gathered into one vector and split again, each parameter's sample and moments are its own (a shifted split
    would give one parameter its neighbour's)."""
    model = build_random(name, 0, device="cpu")
    prints = fingerprint(model)
    assert list(prints) == [n for n, _ in model.named_parameters()]
    for n, parameter in model.named_parameters():
        sample, mean, std = _by_hand(parameter)
        assert prints[n].size == parameter.numel() and torch.equal(prints[n].sample, sample), n
        assert prints[n].mean == pytest.approx(mean, rel=1e-4, abs=1e-6), n  # float32 sums of <= 1e5 entries
        assert prints[n].std == pytest.approx(std, rel=1e-4, abs=1e-6), n
    samples_only = fingerprint(model, statistics=False)
    assert all(torch.equal(samples_only[n].sample, prints[n].sample) for n in prints)
    assert all(samples_only[n].mean != samples_only[n].mean for n in prints)  # NaN: not taken


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="the CUDA graph path needs a CUDA device (the GPU script)")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_replayed_graph_reads_the_parameters_as_they_are_now(dtype):
    """On CUDA the second fingerprint replays the graph captured by the first: after the weights are drawn again
    in place it gives what the reductions as written give; a parameter moved to new memory makes a new capture."""
    from empirical import fingerprints

    model = build_random("tiny-gpt-neo", 0, device="cuda", dtype=dtype)
    fingerprint(model)  # captures
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.normal_(0.0, 0.5)
    replayed = fingerprint(model)
    (addresses, _, _), = [v for k, v in fingerprints._GRAPHS[model].items() if k[1]]
    flats = [p.detach().reshape(-1) for p in model.parameters()]
    eager = fingerprints._gather(flats, True).cpu()
    gathered = torch.cat([*(replayed[n].sample for n in replayed),
                          *(torch.tensor([replayed[n].mean, replayed[n].std]) for n in replayed)])
    assert torch.equal(gathered, eager)
    first = next(model.parameters())
    first.data = first.data.clone() + 1.0  # new memory: the captured graph would read the old one
    moved = fingerprint(model)
    assert moved[next(iter(moved))].mean == pytest.approx(float(first.detach().double().mean()), rel=1e-4)
    (new_addresses, _, _), = [v for k, v in fingerprints._GRAPHS[model].items() if k[1]]
    assert new_addresses != addresses
