"""The GEMM bound of a looped run: the time its matrix products alone take at the rate the device's BLAS (cuBLAS on a
GPU) reaches on those very products, against which the loop's time is judged (issue 39: the float32 loop within
1.3 x of it).

The products of one block are read off the model itself: the block runs once on the meta device (shapes only, no
arithmetic, nothing allocated) at the run's batch (prompts x length), and every matrix product it dispatches is
recorded as ``(batch, m, k, n)``, ``batch`` independent ``[m, k] @ [k, n]`` products: ``mm``/``addmm``, ``bmm``/
``baddbmm``, ``linear`` and ``matmul`` as they reach the dispatcher, and scaled dot-product attention as its two
products (scores ``Q K^T`` and the weighted values ``A V``, as the eager attention computes them). Each distinct
product is then timed on the device in the run's dtype on random operands (the same library call, the same
defaults: TF32 off for float32 unless the process turned it on), and

    bound = passes x layers x sum over the block's products of (count x measured seconds).

What the bound leaves out, which the loop also does: normalisations, activations, softmax, residual sums, E after
every block (eq. 9), the final normalisation; redrawn runs add the draw of every weight before each pass (timed
apart by the run, ``draws[k]["seconds"]``). Architectures whose block cannot run on the meta device (rotary
position tables computed from buffers: Llama, Gemma) are refused with a ``ValueError``; the GPU script's runs are
GPT-2 and GPT-Neo.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .adapters import adapter_for
from .models import load_model
from .run import synchronise

#: Each product is timed over at least this many seconds of repeated calls (after one warm-up call), in
#: MIN_ROUNDS rounds, the fastest round counting: long enough that a timer's resolution (microseconds) and one
#: launch's latency are below 1%, short enough for a whole block's products to take about a second.
MIN_SECONDS = 0.05
MIN_ROUNDS = 3


@dataclass(frozen=True)
class Product:
    """``batch`` independent products ``[m, k] @ [k, n]``; its floating-point operations ``2 batch m k n``."""

    batch: int
    m: int
    k: int
    n: int

    @property
    def flops(self) -> int:
        return 2 * self.batch * self.m * self.k * self.n


def _numel(shape) -> int:
    return math.prod(int(size) for size in shape)


def _matmul(a: torch.Tensor, b: torch.Tensor) -> Product:
    """``a @ b`` with torch.matmul's broadcasting (1-d operands as a row or a column)."""
    a_shape = tuple(a.shape) if a.ndim > 1 else (1, *a.shape)
    b_shape = tuple(b.shape) if b.ndim > 1 else (*b.shape, 1)
    if len(b_shape) == 2:  # a stack of rows times one matrix: one product of all the rows
        return Product(1, _numel(a_shape[:-1]), a_shape[-1], b_shape[-1])
    batch = torch.broadcast_shapes(a_shape[:-2], b_shape[:-2])
    return Product(_numel(batch), a_shape[-2], a_shape[-1], b_shape[-1])


def _products(name: str, args: tuple) -> list[Product]:
    """The matrix products of one dispatched call (none for any other operation)."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if name in ("mm", "bmm", "matmul"):
        return [_matmul(tensors[0], tensors[1])]
    if name in ("addmm", "baddbmm"):
        return [_matmul(tensors[1], tensors[2])]
    if name == "linear":  # x [..., k], weight [n, k]
        x, weight = tensors[0], tensors[1]
        return [Product(1, _numel(x.shape[:-1]), int(x.shape[-1]), int(weight.shape[0]))]
    if name.startswith("scaled_dot_product") or name.startswith("_scaled_dot_product"):
        q, k, v = tensors[:3]  # [..., L, dh], [..., S, dh], [..., S, dv]
        batch = _numel(torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]))
        length, keys = int(q.shape[-2]), int(k.shape[-2])
        return [Product(batch, length, int(q.shape[-1]), keys), Product(batch, length, keys, int(v.shape[-1]))]
    return []


class _RecordProducts(TorchDispatchMode):
    """Counts the matrix products dispatched while active (:func:`_products`)."""

    def __init__(self) -> None:
        super().__init__()
        self.products: Counter[Product] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.products.update(_products(func.overloadpacket.__name__, args))
        return func(*args, **(kwargs or {}))


def block_products(model_name: str, *, prompts: int, length: int, ffn: bool,
                   dtype: torch.dtype = torch.float32) -> Counter[Product]:
    """The matrix products of one block of ``model_name`` on ``prompts x length`` tokens (``ffn=False``: the
    attention sublayer alone, as the run's loop), read off the block run on the meta device."""
    model = load_model(model_name, "random", dtype=dtype, device="meta")
    adapter = adapter_for(model)
    ids = torch.zeros(prompts, length, dtype=torch.long, device="meta")
    try:
        with torch.inference_mode():
            x = adapter.embed(ids)
            inputs = adapter.block_inputs(length, torch.device("cpu"), dtype)  # masks: small, made for real
            with _RecordProducts() as recorder:
                adapter.block(0, x, inputs, ffn=ffn)
    except (NotImplementedError, RuntimeError) as error:
        raise ValueError(f"{model_name}: its block does not run on the meta device ({type(error).__name__}: "
                         f"{str(error).splitlines()[0]}), so its products cannot be read off it.") from error
    return recorder.products


def product_seconds(product: Product, device: torch.device, dtype: torch.dtype) -> float:
    """Seconds of one ``product`` on ``device`` in ``dtype`` (random operands; the fastest of MIN_ROUNDS rounds of
    at least MIN_SECONDS each, per call)."""
    generator = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(product.batch, product.m, product.k, device=device, dtype=dtype, generator=generator)
    b = torch.randn(product.batch, product.k, product.n, device=device, dtype=dtype, generator=generator)
    call = (lambda: torch.mm(a[0], b[0])) if product.batch == 1 else (lambda: torch.bmm(a, b))
    call()
    synchronise(device)
    started = time.perf_counter()
    call()
    synchronise(device)
    repeats = max(1, math.ceil(MIN_SECONDS / max(time.perf_counter() - started, 1e-9)))
    best = math.inf
    for _ in range(MIN_ROUNDS):
        started = time.perf_counter()
        for _ in range(repeats):
            call()
        synchronise(device)
        best = min(best, (time.perf_counter() - started) / repeats)
    return best


def gemm_bound(model_name: str, *, prompts: int, length: int, ffn: bool, layers: int, passes: int,
               device: str | torch.device, dtype: torch.dtype) -> dict[str, Any]:
    """The bound of a run (module docstring): its products per block, each one's measured time and rate, and
    ``bound_s`` for ``passes`` passes of ``layers`` blocks. JSON-ready."""
    device = torch.device(device)
    products = block_products(model_name, prompts=prompts, length=length, ffn=ffn, dtype=dtype)
    rows, block_s = [], 0.0
    for product, count in sorted(products.items(), key=lambda item: -item[0].flops):
        seconds = product_seconds(product, device, dtype)
        block_s += count * seconds
        rows.append({"batch": product.batch, "m": product.m, "k": product.k, "n": product.n, "count": count,
                     "seconds": seconds, "tflops": product.flops / seconds / 1e12})
    flops = sum(count * product.flops for product, count in products.items())
    return {"device": str(device), "dtype": str(dtype).replace("torch.", ""),
            "tf32": bool(torch.backends.cuda.matmul.allow_tf32), "products_per_block": rows,
            "flops_per_block": flops, "block_s": block_s, "layers": layers, "passes": passes,
            "bound_s": passes * layers * block_s, "rate_tflops": flops / block_s / 1e12 if block_s else None}
