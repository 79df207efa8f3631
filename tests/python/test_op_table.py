"""The graph-IR op table (frontend ops.def) is the one list of plain unary ops: each of its
elementwise one-operand rows without attributes runs through the ATen overload of the same name,
compiled and eager, with torch CPU's results (atol = rtol = 0.1 for fp16, as torch-spyre)."""

import warnings

import pytest
import torch

import torch_spyre._C as C
from torch_spyre._errors import FallbackWarning
from torch_spyre._lowering import is_lowerable

aten = torch.ops.aten
# Registered by modules of their own (memory_format / view semantics), not as plain unaries.
_OWN_LOWERING = {"clone", "expand"}
_PLAIN = [n for n in C.plain_unary_ops() if n not in _OWN_LOWERING]


def test_table_lists_the_plain_unaries():
    assert {"neg", "exp", "relu", "silu"} <= set(_PLAIN)
    for name in _PLAIN:
        assert is_lowerable(getattr(aten, name).default), name


def _input(name: str) -> torch.Tensor:
    x = torch.randn(8, 128, dtype=torch.float16)
    if name in ("sqrt", "rsqrt", "log", "reciprocal"):
        x = x.abs() + 0.5  # inside the domain, away from the poles
    if name == "tan":
        x = x.clamp(-1.2, 1.2)  # away from the poles at +-pi/2, where DL16 rounding of x dominates
    return x


@pytest.mark.parametrize("name", _PLAIN)
def test_plain_unary_matches_cpu(name: str):
    x = _input(name)
    op = getattr(torch, name, None) or getattr(torch.nn.functional, name)
    ref = op(x.float()).half()
    with warnings.catch_warnings():
        warnings.simplefilter("error", FallbackWarning)  # on the card, not the CPU fallback
        eager = op(x.to("spyre")).cpu()
        compiled = torch.compile(lambda t: op(t), backend="spyre")(x.to("spyre")).cpu()
    torch.testing.assert_close(eager, ref, atol=0.1, rtol=0.1)
    torch.testing.assert_close(compiled, ref, atol=0.1, rtol=0.1)
