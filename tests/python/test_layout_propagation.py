"""Layout propagation: reductions without keepdim feeding other ops compile and run on spyre (the
frontend restickifies their keepdim layout, or reads it directly through an unsqueeze) instead
of falling back to the CPU."""

from __future__ import annotations

import warnings

import pytest
import torch

import torch_spyre
from torch_spyre._compile import compile_stats


def _run_on_spyre(fn, *xs: torch.Tensor) -> torch.Tensor:
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error", torch_spyre.FallbackWarning)
        out = torch.compile(fn, backend="spyre")(*(x.to("spyre") for x in xs))
    assert compile_stats.partitions == 1 and compile_stats.fallback_nodes == 0
    return out


@pytest.mark.parametrize("fn", [
    lambda a: a - a.sum(-1).unsqueeze(-1),
    lambda a: a - a.mean(-1).unsqueeze(-1),
    lambda a: a.amax(-1) * 2,
    lambda a: a.sum(-1) * 2,
    lambda a: torch.exp(a.mean(-1)) + a.amax(-1),
    lambda a: (a - a.amax(-1).unsqueeze(-1), a.amax(-1) * 2, a.amax(-1)),
], ids=["x_minus_sum", "x_minus_mean", "amax_times_2", "sum_times_2", "exp_mean_plus_amax", "shared_and_output"])
@pytest.mark.parametrize("shape", [(67, 129), (8, 64), (3, 5, 130)])
def test_non_keepdim_reduction_feeding_ops(fn, shape):
    torch.manual_seed(7)
    x = torch.randn(shape, dtype=torch.float16)
    out = _run_on_spyre(fn, x)
    expect = fn(x)
    if isinstance(expect, tuple):
        for o, e in zip(out, expect):
            torch.testing.assert_close(o.cpu(), e, atol=0.1, rtol=0.1)
    else:
        torch.testing.assert_close(out.cpu(), expect, atol=0.1, rtol=0.1)


def test_restickify_kernel_is_in_the_compiled_graph():
    x = torch.randn(67, 129, dtype=torch.float16)
    out = _run_on_spyre(lambda a: a.amax(-1) * 2, x)
    torch.testing.assert_close(out.cpu(), x.amax(-1) * 2, atol=0.1, rtol=0.1)
    assert any("transpose" in s for s in compile_stats.last.superdscs())


def test_reduction_over_two_dims_feeding_an_op():
    torch.manual_seed(8)
    x = torch.randn(3, 5, 130, dtype=torch.float16)
    out = _run_on_spyre(lambda a: a.sum([1, 2]) * 0.5 + 1, x)
    torch.testing.assert_close(out.cpu(), x.sum([1, 2]) * 0.5 + 1, atol=0.1, rtol=0.1)
