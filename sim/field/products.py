"""The vector field's matrix products: float64 BLAS on the numpy arrays' own memory, numpy's or PyTorch's.

Which library multiplies depends on the threads. In a solve's worker threads (``worker_pool``: one BLAS thread
each) every product runs in numpy's OpenBLAS. On more threads (the calling thread of ``solve(..., workers=1)``,
a field called outside a solve) products from ``TORCH_MIN_MULTIPLY_ADDS`` multiply-adds run in PyTorch's
(``torch.from_numpy`` shares memory, so nothing is copied), whose x86 wheels carry Intel MKL; smaller ones stay
in numpy, whose per-call cost is lower.

Measured on this 2-core AMD EPYC machine (2026-11-27; numpy 2.4.6 with OpenBLAS 0.3.31's SkylakeX kernels, torch
2.13.0's MKL), float64 GFLOP/s of Fig. 4's products, numpy against PyTorch: on one thread, the dominant
``[5000, 500] x [500, 1000]`` 53 against 47, the scores (100 x ``[100, 500] x [500, 50]``) 30 against 30, the
attention times y (100 x ``[50, 50] x [50, 500]``) 34 against 26; on two threads 103 / 93, 55 / 58, 50 / 43.
On the solve of ``python -m sim bench``'s problem (b) with two workers, numpy's products in the workers took
7% less wall time than PyTorch's (3.85 against 4.14 s, median of 4 interleaved rounds); with one worker the
two libraries took the same time (5.33 against 5.37 s), so that path keeps PyTorch. When PyTorch was brought in,
numpy ran the stacked products at 25-29 GFLOP/s on one core here against MKL's 42; they measure as above now.

Both libraries keep their own thread pools, and they get in each other's way: after a call, numpy's OpenBLAS
helper threads keep spinning for about 0.1 s (a 2000^2 matmul in PyTorch right after one in numpy ran at 75-83
instead of 100-117 GFLOP/s here), and PyTorch's thread count is per calling thread (a new thread starts a team of
helpers of its own). ``limit_threads`` sets both libraries' pools; ``solver_threads`` and ``worker_pool`` set
them up for a solve.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Iterator

import numpy as np
from threadpoolctl import ThreadpoolController

if TYPE_CHECKING:
    import torch

#: Products with fewer multiply-adds per matrix (m k n) stay in numpy (on every thread count; in a solve's workers
#: every product does): below this PyTorch's per-call and per-matrix cost outweighs MKL's kernels. Measured on
#: stacks of 100 matrices on 2 threads (2026-11-27): numpy 1.5-2.9x faster at 100 x 100 x 20 (200,000), 0.9-1.7x at
#: 50 x 50 x 50 and 2x on the Fig. 2 system's 20 x 3 x 10; from 500,000 no clear winner: PyTorch 1.1-1.4x faster at
#: 100 x 100 x 50, 100 x 100 x 100 and 50 x 500 x 50, numpy 1.0-1.2x at 50 x 200 x 50 and 1.1x at 100 x 500 x 50.
#: (It was 200,000, from an earlier measurement with PyTorch 16% faster at 100 x 100 x 20 and 1.67x at 50 x 500 x 50.)
TORCH_MIN_MULTIPLY_ADDS = 500_000

_numpy_blas = None

#: ``one_thread`` is set in ``worker_pool``'s threads: their products run in numpy's BLAS, on one thread there.
_worker = threading.local()


def _torch():
    """PyTorch, imported on first use: it takes 1.5 s, which small systems (numpy products, the compiled
    integrations) never need to pay."""
    import torch

    return torch


def _numpy_blas_controller() -> ThreadpoolController:
    """threadpoolctl's view of the loaded libraries, made once (a fresh look costs 0.4 ms, a solve's worth of
    small steps; the reused controller 0.01 ms)."""
    global _numpy_blas
    if _numpy_blas is None:
        _numpy_blas = ThreadpoolController().select(user_api="blas")
    return _numpy_blas


def _shared_tensor(array: np.ndarray) -> torch.Tensor:
    """A tensor on ``array``'s memory; a copy only when torch cannot view it (read-only or negative strides,
    e.g. a broadcast or a reversed view)."""
    if not array.flags.writeable or any(stride < 0 for stride in array.strides):
        array = array.copy()
    return _torch().from_numpy(array)


def matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``a @ b`` with numpy's rules for stacks (``[..., m, k] @ [..., k, n] -> [..., m, n]``), float64: by numpy in
    a ``worker_pool`` thread and below ``TORCH_MIN_MULTIPLY_ADDS`` per matrix, else by ``torch.matmul`` (MKL's
    gemm / batched gemm; transposed views are passed as such, not copied).

    ``out``: a C-contiguous float64 array of the product's shape, not overlapping ``a`` or ``b``, to write the
    product into (returned)."""
    for operand in (a, b):
        if operand.dtype != np.float64:
            raise TypeError(f"products are float64; got an array of dtype {operand.dtype}.")
    if out is not None:
        check_out(out, _product_shape(a.shape, b.shape), a, b)
    rows = a.shape[-2] if a.ndim > 1 else 1
    columns = b.shape[-1] if b.ndim > 1 else 1
    if rows * a.shape[-1] * columns < TORCH_MIN_MULTIPLY_ADDS or getattr(_worker, "one_thread", False):
        return np.matmul(a, b, out=out)
    torch = _torch()
    if out is None:
        return torch.matmul(_shared_tensor(a), _shared_tensor(b)).numpy()
    torch.matmul(_shared_tensor(a), _shared_tensor(b), out=torch.from_numpy(out))
    return out


def _product_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """The shape of ``a @ b`` for operands of shapes ``a`` and ``b`` (numpy's rules, 1-d operands included)."""
    if len(a) == 1 or len(b) == 1:
        return a[:-1] if len(b) == 1 else b[:-2] + b[-1:]
    leading = a[:-2] if a[:-2] == b[:-2] else np.broadcast_shapes(a[:-2], b[:-2])  # (broadcasting costs ~10 us)
    return leading + (a[-2], b[-1])


def check_out(out: np.ndarray, shape: tuple[int, ...], *inputs: np.ndarray) -> None:
    """``out`` must be a writeable C-contiguous float64 array of ``shape`` that shares no memory with ``inputs``."""
    if not isinstance(out, np.ndarray) or out.dtype != np.float64 or out.shape != shape:
        raise ValueError(f"out must be a float64 array of shape {shape}; got "
                         f"{getattr(out, 'dtype', type(out).__name__)} of shape {getattr(out, 'shape', None)}.")
    if not (out.flags.c_contiguous and out.flags.writeable):
        raise ValueError("out must be a writeable C-contiguous array.")
    if any(np.may_share_memory(out, operand) for operand in inputs):
        raise ValueError("out must not overlap the inputs.")


@contextmanager
def _torch_threads(count: int) -> Iterator[None]:
    """PyTorch's intra-op pool (of the calling thread) on ``count`` threads within the block, restored after."""
    torch = _torch()
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextmanager
def limit_threads(count: int | None) -> Iterator[None]:
    """Within the block, numpy's BLAS (threadpoolctl) and PyTorch's intra-op pool use at most ``count``
    threads (None: leave both alone); both are restored afterwards."""
    if count is None:
        yield
        return
    if int(count) != count or count < 1:
        raise ValueError(f"thread count {count!r} must be a positive integer.")
    with _torch_threads(int(count)), _numpy_blas_controller().limit(limits=int(count)):
        yield


@contextmanager
def solver_threads(workers: int) -> Iterator[None]:
    """Thread settings for a solve with ``workers`` threads: numpy's BLAS on one thread (in a solve it only forms
    the Runge-Kutta stage combinations, which are memory-bound, and its spinning helpers would take the cores from
    PyTorch's); PyTorch's products on all its threads with one worker, on one thread per worker with several.
    Restored afterwards."""
    with _numpy_blas_controller().limit(limits=1), (_torch_threads(1) if workers > 1 else nullcontext()):
        yield


def worker_pool(workers: int) -> ThreadPoolExecutor:
    """A pool of ``workers`` threads whose products (``matmul``) run in numpy's BLAS, and whose PyTorch runs on
    one thread each (set in every worker: a limit set in the main thread does not reach new threads; a field
    may call PyTorch itself). Use it inside ``solver_threads(workers)``, which puts numpy's BLAS on one thread."""
    return ThreadPoolExecutor(workers, initializer=_one_thread_worker)


def _one_thread_worker() -> None:
    _torch().set_num_threads(1)
    _worker.one_thread = True
