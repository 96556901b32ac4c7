"""The vector field's matrix products: large ones by PyTorch's float64 BLAS on the numpy arrays' own memory.

PyTorch's x86 wheels carry Intel MKL, whose batched kernels run the field's per-instance products
(e.g. ``[100, 500] x [500, 50]`` per trajectory of Fig. 4) at 1.5-1.7x the speed of numpy's OpenBLAS on this
machine (42 against 25-29 GFLOP/s on one core) and its large products at the same speed or a little faster
(``python -m sim bench`` shows both libraries' square matmul). ``torch.from_numpy`` shares memory, so
nothing is copied; the products are float64 throughout. Small products stay in numpy, whose per-call cost is
lower (``TORCH_MIN_MULTIPLY_ADDS``).

Both libraries keep their own thread pools, and they get in each other's way: after a call, numpy's OpenBLAS
helper threads keep spinning for about 0.1 s (a 2000^2 matmul in PyTorch right after one in numpy ran at 75-83
instead of 100-117 GFLOP/s here), and PyTorch's thread count is per calling thread (a new thread starts a team of
helpers of its own). ``limit_threads`` sets both libraries' pools; ``solver_threads`` and ``worker_pool`` set
them up for a solve.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Iterator

import numpy as np
from threadpoolctl import ThreadpoolController

if TYPE_CHECKING:
    import torch

#: Products with fewer multiply-adds per matrix (m k n) stay in numpy: below this PyTorch's per-call and
#: per-matrix cost outweighs MKL's faster kernels. Measured here on stacks of 100 matrices: numpy 10% faster at
#: 50 x 50 x 50 (125,000), PyTorch 16% faster at 100 x 100 x 20 (200,000) and 1.67x at 50 x 500 x 50; numpy
#: 1.5x faster on the Fig. 2 system's 20 x 3 x 10.
TORCH_MIN_MULTIPLY_ADDS = 200_000

_numpy_blas = None


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
    """``a @ b`` with numpy's rules for stacks (``[..., m, k] @ [..., k, n] -> [..., m, n]``), float64; by
    ``torch.matmul`` (MKL's gemm / batched gemm; transposed views are passed as such, not copied) from
    ``TORCH_MIN_MULTIPLY_ADDS`` per matrix, by numpy below.

    ``out``: a C-contiguous float64 array of the product's shape, not overlapping ``a`` or ``b``, to write the
    product into (returned)."""
    for operand in (a, b):
        if operand.dtype != np.float64:
            raise TypeError(f"products are float64; got an array of dtype {operand.dtype}.")
    if out is not None:
        check_out(out, _product_shape(a.shape, b.shape), a, b)
    rows = a.shape[-2] if a.ndim > 1 else 1
    columns = b.shape[-1] if b.ndim > 1 else 1
    if rows * a.shape[-1] * columns < TORCH_MIN_MULTIPLY_ADDS:
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
    """A pool of ``workers`` threads whose PyTorch products run on one thread each (set in every worker: a limit
    set in the main thread does not reach new threads). Use it inside ``solver_threads(workers)``."""
    return ThreadPoolExecutor(workers, initializer=_one_torch_thread)


def _one_torch_thread() -> None:
    _torch().set_num_threads(1)
