"""_C.run_totals(): every launch of a compiled graph or an eager kernel adds its kernels and
their simulated device time (what bench/generate.py differences per token)."""

from __future__ import annotations

import pytest
import torch

from torch_spyre import _C
from torch_spyre._compile import compile_stats


def test_run_totals_count_each_run_of_a_compiled_graph():
    torch._dynamo.reset()
    fn = torch.compile(lambda a, b: torch.relu(a @ b) + 1, backend="spyre", dynamic=False)
    a, b = torch.randn(64, 128).half().to("spyre"), torch.randn(128, 64).half().to("spyre")
    fn(a, b)  # compiles
    graph = compile_stats.last
    k0, us0 = _C.run_totals()
    for _ in range(3):
        fn(a, b)
    k1, us1 = _C.run_totals()
    assert k1 - k0 == 3 * len(graph.listings())
    assert us1 - us0 == pytest.approx(3 * graph.simulated_us)
    assert graph.simulated_us > 0


def test_run_totals_count_eager_kernels():
    x = torch.randn(8, 64).half().to("spyre")
    torch.exp(x)  # compiles the eager kernel
    k0, us0 = _C.run_totals()
    torch.exp(x)
    k1, us1 = _C.run_totals()
    assert k1 - k0 >= 1 and us1 > us0


def test_run_host_ms_counts_launch_time_within_the_call():
    # The host time inside kernel launches of a run: positive, and at most the call's wall time
    # (the rest is Python, argument binding and allocation).
    import time

    x = torch.randn(256, 512).half().to("spyre")
    torch.exp(x)  # compiles the eager kernel
    samples = []
    for _ in range(3):
        h0 = _C.run_host_ms()
        t0 = time.perf_counter()
        torch.exp(x)
        wall = (time.perf_counter() - t0) * 1e3
        samples.append((_C.run_host_ms() - h0, wall))
    for launched, wall in samples:
        assert 0 < launched <= wall
