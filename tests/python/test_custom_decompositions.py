"""The caller's ATen decompositions apply to graphs compiled for spyre: ``compile_fx(gm,
inputs, decompositions=table)`` (torch-spyre's test_custom_decomposition_kwarg) and the spyre
backend's ``decompositions=`` keyword, over the spyre decompositions. Strict mode."""

from __future__ import annotations

import functools

import pytest
import torch


@pytest.fixture(autouse=True)
def _strict(monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    torch._dynamo.reset()


def _add_as_mul() -> dict:
    table: dict = {}

    @torch._decomp.register_decomposition([torch.ops.aten.add.Tensor], table)
    def add_as_mul(x, y, *, alpha=1):
        return torch.mul(x, y)

    return table


def test_compile_fx_decompositions_apply_on_spyre():
    from torch._inductor.compile_fx import compile_fx

    table = _add_as_mul()
    backend = lambda gm, ex: compile_fx(gm, ex, decompositions=table)  # noqa: E731
    x, y = torch.randn(10), torch.randn(10)
    f = torch.compile(torch.add, backend=backend)
    got = f(x.to("spyre"), y.to("spyre"))
    assert got.device.type == "spyre"
    torch.testing.assert_close(got.cpu(), x * y, atol=0.1, rtol=0.1)


def test_spyre_backend_decompositions_keyword():
    from torch_spyre._compile import spyre_backend

    x, y = torch.randn(4, 64), torch.randn(4, 64)
    f = torch.compile(lambda a, b: a + b, backend=functools.partial(spyre_backend, decompositions=_add_as_mul()))
    torch.testing.assert_close(f(x.to("spyre"), y.to("spyre")).cpu(), x * y, atol=0.1, rtol=0.1)
    torch._dynamo.reset()
    plain = torch.compile(lambda a, b: a + b, backend=spyre_backend)
    torch.testing.assert_close(plain(x.to("spyre"), y.to("spyre")).cpu(), x + y, atol=0.1, rtol=0.1)


def test_spyre_backend_rejects_a_non_dict_table():
    from torch_spyre._compile import spyre_backend

    f = torch.compile(lambda a: a + 1, backend=functools.partial(spyre_backend, decompositions=[1]))
    with pytest.raises(Exception, match="decompositions must be a dict"):
        f(torch.randn(4).to("spyre"))
