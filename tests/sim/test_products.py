"""``sim.field.products``: the field's matrix products in PyTorch, and the thread settings of a solve."""

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_info

from sim.field.products import limit_threads, matmul, solver_threads, worker_pool

#: Float64 products of O(1) entries summed over k <= 500 terms: the libraries' different blocking changes the
#: summation order, so results differ by a few ulps of sqrt(k) ~ 22: 1e-12 leaves a factor of ~100.
PRODUCT_TOL = 1e-12


def _numpy_blas_threads() -> list[int]:
    return [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]


@pytest.mark.parametrize("a_shape, b_shape", [((30, 500), (500, 40)),          # one 2-d product
                                              ((4, 20, 500), (4, 500, 10)),    # a stack of products
                                              ((4, 20, 50), (50, 30)),         # a stack times one matrix
                                              ((7,), (7, 90))])                # a vector times a matrix
def test_matmul_is_numpys_product(a_shape, b_shape):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    product = matmul(a, b)
    assert isinstance(product, np.ndarray) and product.dtype == np.float64
    np.testing.assert_allclose(product, a @ b, rtol=0, atol=PRODUCT_TOL)


def test_matmul_takes_views_read_only_and_reversed_arrays():
    rng = np.random.default_rng(1)
    y = rng.standard_normal((3, 8, 6))
    transposed = np.swapaxes(y, -1, -2)  # passed to BLAS as a transposed operand
    np.testing.assert_allclose(matmul(y, transposed), y @ transposed, rtol=0, atol=PRODUCT_TOL)
    read_only = np.broadcast_to(np.eye(6), (3, 6, 6))
    np.testing.assert_allclose(matmul(y, read_only), y, rtol=0, atol=0)
    reversed_rows = y[:, ::-1, :]
    np.testing.assert_allclose(matmul(reversed_rows, transposed), reversed_rows @ transposed, rtol=0,
                               atol=PRODUCT_TOL)


@pytest.mark.parametrize("threshold", [0, np.inf], ids=["pytorch", "numpy"])
def test_matmul_writes_into_out(threshold, monkeypatch):
    import sim.field.products

    monkeypatch.setattr(sim.field.products, "TORCH_MIN_MULTIPLY_ADDS", threshold)
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((4, 20, 50)), rng.standard_normal((4, 50, 30))
    out = np.full((4, 20, 30), np.nan)
    assert matmul(a, b, out=out) is out
    np.testing.assert_allclose(out, a @ b, rtol=0, atol=PRODUCT_TOL)


def test_matmul_refuses_an_out_it_cannot_write_into():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((4, 20, 20)), rng.standard_normal((4, 20, 20))
    for out, message in [(np.empty((4, 20, 21)), "shape"), (np.empty((4, 20, 20), dtype=np.float32), "float64"),
                         (np.empty((4, 20, 20)).swapaxes(1, 2), "C-contiguous"), (a, "overlap")]:
        with pytest.raises(ValueError, match=message):
            matmul(a, b, out=out)


def test_matmul_refuses_other_dtypes():
    with pytest.raises(TypeError, match="float64"):
        matmul(np.ones((2, 2), dtype=np.float32), np.ones((2, 2)))


def test_limit_threads_sets_both_libraries_and_restores_them():
    torch_before, numpy_before = torch.get_num_threads(), _numpy_blas_threads()
    with limit_threads(1):
        assert torch.get_num_threads() == 1
        assert set(_numpy_blas_threads()) == {1}
    assert (torch.get_num_threads(), _numpy_blas_threads()) == (torch_before, numpy_before)
    with limit_threads(None):
        assert torch.get_num_threads() == torch_before
    with pytest.raises(ValueError, match="positive integer"):
        with limit_threads(0):
            pass


def test_solver_threads_keep_numpy_on_one_thread_and_torch_on_one_per_worker():
    torch_before = torch.get_num_threads()
    with solver_threads(1):
        assert set(_numpy_blas_threads()) == {1} and torch.get_num_threads() == torch_before
    with solver_threads(2):
        assert set(_numpy_blas_threads()) == {1} and torch.get_num_threads() == 1
    assert torch.get_num_threads() == torch_before


def _threads_started_by_products(pool) -> set[str]:
    """OS threads that appear while the pool's two workers each run a float64 product in PyTorch (called directly:
    ``matmul`` runs in numpy in ``worker_pool``'s threads, but a field may call PyTorch itself) and ``matmul``."""
    a = np.random.default_rng(2).standard_normal((400, 400))
    both = threading.Barrier(2)
    list(pool.map(lambda _: both.wait(timeout=10), range(2)))  # both workers exist before counting
    before = set(os.listdir("/proc/self/task"))
    list(pool.map(lambda _: (torch.from_numpy(a) @ torch.from_numpy(a), matmul(a, a)), range(2)))
    return set(os.listdir("/proc/self/task")) - before


def _libraries_multiplying(run) -> list[str]:
    """Which library multiplied in each ``matmul`` made by ``run()`` (a spy on ``torch.matmul``: "torch", else
    "numpy"), for a product past ``TORCH_MIN_MULTIPLY_ADDS``."""
    a = np.random.default_rng(4).standard_normal((200, 200))
    calls, original = [], torch.matmul

    def spy(*args, **kwargs):
        calls.append("torch")
        return original(*args, **kwargs)

    def multiply() -> str:
        before = len(calls)
        np.testing.assert_allclose(matmul(a, a), a @ a, rtol=0, atol=PRODUCT_TOL)
        return "torch" if len(calls) > before else "numpy"

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(torch, "matmul", spy)
        return run(multiply)


def test_worker_threads_multiply_in_numpy_and_other_threads_in_pytorch():
    """One BLAS thread in a solve's workers: numpy's OpenBLAS was faster there (the module's measurements); the
    calling thread, on all threads, keeps PyTorch's MKL for products past the threshold."""
    assert _libraries_multiplying(lambda multiply: [multiply()]) == ["torch"]
    with solver_threads(2), worker_pool(2) as pool:
        assert _libraries_multiplying(lambda multiply: list(pool.map(lambda _: multiply(), range(4)))) == \
            ["numpy"] * 4
    with ThreadPoolExecutor(2) as plain:  # control: a thread of a plain pool is not a solve's worker
        assert _libraries_multiplying(lambda multiply: list(plain.map(lambda _: multiply(), range(2)))) == \
            ["torch"] * 2


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads through Linux's /proc")
def test_worker_pool_threads_start_no_helper_threads():
    """PyTorch's thread count is per calling thread: a worker of a plain pool starts helpers (MKL's OpenMP team)
    that spin between products and take the cores from the other workers; ``worker_pool``'s workers do not."""
    with solver_threads(2):
        with worker_pool(2) as pool:
            assert _threads_started_by_products(pool) == set()


@pytest.mark.skipif(not (os.path.isdir("/proc/self/task") and torch.backends.mkl.is_available()),
                    reason="the control needs Linux's /proc and PyTorch's MKL (whose OpenMP team is counted)")
def test_control_a_plain_pool_starts_helper_threads():
    with solver_threads(2):
        with ThreadPoolExecutor(2) as pool:
            assert len(_threads_started_by_products(pool)) >= 1
