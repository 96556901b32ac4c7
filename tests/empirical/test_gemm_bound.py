"""The GEMM bound of a looped run (empirical.gemm_bound): the products read off a block equal the closed form of the
architecture's shapes, and the bound is the products' measured time times the blocks run."""

import pytest
import torch

from empirical import gemm_bound as bound_module
from empirical.gemm_bound import Product, block_products, gemm_bound
from empirical.models import load_config


def _closed_form(name: str, prompts: int, length: int, ffn: bool) -> int:
    """Floating-point operations of one GPT-2 / GPT-Neo block's products on ``prompts x length`` tokens: the
    projections q, k, v and out (4 d^2 a token), the FFN's two (2 d x inner), the scores and weighted values
    (2 L^2 d a prompt each)."""
    config = load_config(name)
    width, tokens = config.hidden_size, prompts * length
    inner = getattr(config, "n_inner", None) or getattr(config, "intermediate_size", None) or 4 * width
    per_token = 4 * width * width + (2 * width * inner if ffn else 0)
    return 2 * tokens * per_token + 2 * 2 * prompts * length * length * width


@pytest.mark.parametrize("name", ["tiny-gpt2", "tiny-gpt-neo"])
@pytest.mark.parametrize("ffn", [True, False])
def test_a_blocks_products_are_those_of_its_shapes(name, ffn):
    products = block_products(name, prompts=3, length=16, ffn=ffn)
    assert sum(count * product.flops for product, count in products.items()) == _closed_form(name, 3, 16, ffn)
    heads = load_config(name).num_attention_heads
    attention = [product for product in products if product.batch > 1]
    assert {product.batch for product in attention} == {3 * heads}  # scores and values: one product per head


def test_a_recorder_blind_to_attention_misses_its_products(monkeypatch):
    """Control: with scaled dot-product attention not recognised (GPT-2 runs it), the count falls short of the
    closed form, so the test above would fail."""
    real = bound_module._products
    monkeypatch.setattr(bound_module, "_products",
                        lambda name, args: [] if "scaled_dot_product" in name else real(name, args))
    products = block_products("tiny-gpt2", prompts=3, length=16, ffn=True)
    assert sum(count * p.flops for p, count in products.items()) < _closed_form("tiny-gpt2", 3, 16, True)


def test_products_follow_matmul_broadcasting():
    a, b = torch.empty(2, 3, 5, 7, device="meta"), torch.empty(7, 11, device="meta")
    assert bound_module._products("matmul", (a, b)) == [Product(1, 30, 7, 11)]
    assert bound_module._products("matmul", (a, torch.empty(2, 3, 7, 11, device="meta"))) == [Product(6, 5, 7, 11)]
    assert bound_module._products("linear", (a, torch.empty(11, 7, device="meta"))) == [Product(1, 30, 7, 11)]
    assert bound_module._products("add", (a, a)) == []


def test_the_bound_is_the_measured_products_times_the_blocks(monkeypatch):
    monkeypatch.setattr(bound_module, "product_seconds", lambda product, device, dtype: product.flops * 1e-12)
    result = gemm_bound("tiny-gpt2", prompts=2, length=8, ffn=True, layers=3, passes=5, device="cpu",
                        dtype=torch.float32)
    assert result["bound_s"] == pytest.approx(15 * result["flops_per_block"] * 1e-12)
    assert result["rate_tflops"] == pytest.approx(1.0)  # every product at 1 TFLOP/s
    assert sum(row["count"] for row in result["products_per_block"]) == 6 and result["dtype"] == "float32"


def test_a_product_is_timed_on_the_device():
    seconds = bound_module.product_seconds(Product(2, 8, 8, 8), torch.device("cpu"), torch.float32)
    assert 0 < seconds < 1


def test_a_block_that_cannot_run_on_the_meta_device_is_refused():
    with pytest.raises(ValueError, match="does not run on the meta device"):
        block_products("tiny-llama", prompts=2, length=8, ffn=True)
