"""E of eq. 9: zero at consensus, the mean of 1 - cos over the tokens otherwise, float32 from half inputs."""

import math

import pytest
import torch

from empirical import misalignment


def test_zero_when_all_tokens_point_the_same_way():
    direction = torch.randn(5)
    x = direction * torch.tensor([1.0, 2.0, 0.5, 7.0])[:, None]
    torch.testing.assert_close(misalignment(x[None]), torch.zeros(1), atol=1e-6, rtol=0)


def test_matches_the_definition_per_prompt():
    x = torch.randn(3, 7, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    expected = [1 - sum(float(torch.nn.functional.cosine_similarity(p[0], t, dim=0)) for t in p) / 7 for p in x]
    torch.testing.assert_close(misalignment(x), torch.tensor(expected, dtype=torch.float64), atol=1e-12, rtol=0)


def test_opposite_tokens_give_the_maximum():
    x = torch.tensor([[[1.0, 0.0], [-1.0, 0.0]]])
    assert math.isclose(float(misalignment(x)), 1.0)


def test_half_precision_input_is_measured_in_float32():
    x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(1))
    E = misalignment(x.half())
    assert E.dtype == torch.float32
    torch.testing.assert_close(E, misalignment(x.half().float()), atol=0, rtol=0)


def test_shape_is_checked():
    with pytest.raises(ValueError, match="batch, tokens, width"):
        misalignment(torch.zeros(3, 4))
