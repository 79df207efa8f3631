"""Zero-size tensors (0 rows, 0 columns, 0 batch), eager and compiled: torch CPU's result (or
its error), never a signal. Empty results need no kernel; the C++ frontend rejects graphs with
empty values (its own test: tests/cpp/frontend/empty_tensor_test.cpp)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import torch_spyre  # noqa: F401
from torch_spyre import _C
from torch_spyre._decompositions import sdpa_math
from torch_spyre._fallback import count_fallbacks

SHAPES = [(0, 64), (5, 0), (0, 4, 64)]  # 0 rows, 0 columns, 0 batch


def _spyre(t: torch.Tensor) -> torch.Tensor:
    return t.to("spyre")


def _same(actual: torch.Tensor, expected: torch.Tensor) -> None:
    assert actual.device.type == "spyre"
    # fp16 lives on the card as DL16 (9 fraction bits): non-empty fp16 values round.
    tol = {"atol": 1e-2, "rtol": 1e-2} if expected.dtype == torch.float16 else {}
    torch.testing.assert_close(actual.cpu(), expected, equal_nan=True, **tol)


def test_compiled_transpose_of_zero_rows_is_empty():
    # Once SIGFPE in the frontend (issue 16).
    x = torch.empty((0, 64), dtype=torch.float16)
    out = torch.compile(lambda t: t.transpose(0, 1))(_spyre(x))
    assert out.shape == (64, 0) and out.device.type == "spyre"
    _same(out.contiguous(), x.transpose(0, 1).contiguous())


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("fn", [lambda a, b: a + b, lambda a, b: torch.relu(a) * b,
                                lambda a, b: torch.exp(a) - b, lambda a, b: torch.where(a > b, a, b)],
                         ids=["add", "relu_mul", "exp_sub", "where"])
def test_pointwise_eager_needs_no_kernel(shape, fn):
    a, b = torch.randn(shape, dtype=torch.float16), torch.randn(shape, dtype=torch.float16)
    with count_fallbacks() as fb:
        out = fn(_spyre(a), _spyre(b))
    assert not fb
    assert out.shape == shape
    _same(out, fn(a, b))


@pytest.mark.parametrize("shape", SHAPES)
def test_pointwise_compiled(shape):
    fn = lambda a, b: torch.relu(a + b) * 2  # noqa: E731
    a, b = torch.randn(shape), torch.randn(shape)
    _same(torch.compile(fn)(_spyre(a), _spyre(b)), fn(a, b))


def test_sum_over_an_empty_dim_is_zero_eager_and_compiled():
    x = torch.empty((0, 4, 64), dtype=torch.float16)
    for dim in (0, (0, 1)):
        _same(_spyre(x).sum(dim), x.sum(dim))
    _same(_spyre(x).sum(), x.sum())
    _same(_spyre(x).sum(-1), x.sum(-1))  # over a full dim of an empty tensor: empty
    _same(torch.compile(lambda t: (t * 3).sum(0))(_spyre(x)), (x * 3).sum(0))


def test_mean_over_an_empty_dim_is_nan_in_fp32():
    x = torch.empty((0, 64))
    out = _spyre(x).mean(0)
    assert out.shape == (64,) and torch.isnan(out.cpu()).all()


def test_amax_over_an_empty_dim_raises_torchs_error():
    x = torch.empty((0, 64))
    with pytest.raises(IndexError) as cpu:
        x.amax(0)
    with pytest.raises(IndexError) as ours:
        _spyre(x).amax(0)
    assert str(ours.value) == str(cpu.value) == "amax(): Expected reduction dim 0 to have non-zero size."
    _same(_spyre(x).amax(1), x.amax(1))  # over a non-empty dim: an empty result


def test_matmul_with_k_zero_is_zeros_and_with_m_zero_is_empty():
    a, b = torch.empty((3, 0), dtype=torch.float16), torch.empty((0, 5), dtype=torch.float16)
    _same(_spyre(a) @ _spyre(b), torch.zeros(3, 5, dtype=torch.float16))
    _same(torch.compile(lambda x, y: x @ y)(_spyre(a), _spyre(b)), a @ b)
    m0, w = torch.empty((0, 64), dtype=torch.float16), torch.randn(64, 32, dtype=torch.float16)
    out = _spyre(m0) @ _spyre(w)
    assert out.shape == (0, 32)
    bmm = torch.bmm(_spyre(torch.empty(0, 4, 8)), _spyre(torch.empty(0, 8, 3)))
    assert bmm.shape == (0, 4, 3) and bmm.device.type == "spyre"


def test_reshape_and_views_of_empty_tensors():
    x = torch.empty((0, 64), dtype=torch.float16)
    assert _spyre(x).view(0, 4, 16).cpu().shape == (0, 4, 16)
    _same(torch.compile(lambda t: t.reshape(-1, 16) * 2)(_spyre(x)), (x.reshape(-1, 16) * 2))
    y = torch.randn(4, 64)
    _same(_spyre(y)[2:2] + 1, y[2:2] + 1)  # a non-empty operand with an empty slice
    _same(torch.compile(lambda t: t[2:2] + 1)(_spyre(y)), y[2:2] + 1)


def test_cat_with_an_empty_part_runs_the_rest_on_the_card():
    e, y = torch.empty((0, 64), dtype=torch.float16), torch.randn(3, 64, dtype=torch.float16)
    with count_fallbacks() as fb:
        out = torch.cat([_spyre(e), _spyre(y), _spyre(e)])
    assert not fb
    _same(out, torch.cat([e, y, e]))
    fn = lambda a, b: torch.cat([a, b]) + 1  # noqa: E731
    _same(torch.compile(fn)(_spyre(e), _spyre(y)), fn(e, y))


def test_padding_an_empty_tensor_gives_the_fill():
    x = torch.empty((0, 64))
    _same(F.pad(_spyre(x), (0, 0, 1, 1), value=2.0), F.pad(x, (0, 0, 1, 1), value=2.0))


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.int64, torch.bool])
def test_copies_to_and_from_the_cpu(dtype):
    for shape in SHAPES + [(0,)]:
        x = torch.empty(shape, dtype=dtype)
        s = _spyre(x)
        assert s.shape == shape and s.dtype == dtype
        assert s.cpu().shape == shape and s.clone().cpu().shape == shape
        assert s.copy_(x).cpu().shape == shape
        assert torch.empty(shape, dtype=dtype, device="spyre").fill_(1).cpu().shape == shape
    assert _spyre(torch.empty(0, 64, dtype=torch.float16)).to(torch.float32).cpu().dtype == torch.float32


def test_softmax_and_layer_norm_of_empty_tensors():
    x = torch.empty((0, 64), dtype=torch.float16)
    assert torch.softmax(_spyre(x), -1).cpu().shape == (0, 64)
    assert torch.softmax(_spyre(torch.empty(4, 0)), -1).cpu().shape == (4, 0)
    assert F.layer_norm(_spyre(x), (64,)).cpu().shape == (0, 64)


def test_strict_mode_accepts_ops_on_empty_tensors(monkeypatch):
    # No CPU fallback happens: an op on empty operands is a constant of its result's shape.
    monkeypatch.setenv("SPYRE_STRICT", "1")
    x = torch.empty((0, 64), dtype=torch.float16)
    _same(_spyre(x) + 1, x + 1)
    _same(_spyre(x).sum(0), x.sum(0))


def test_the_frontend_rejects_empty_graphs_with_a_clear_reason():
    reason = _C.check_graph("graph(%x: f16[0, 64]) {\n  %t = transpose(%x) : f16[64, 0]\n  return (%t)\n}\n")
    assert reason == ("Unsupported: empty tensor %x: f16[0, 64] (<graph>:1, graph input): "
                      "zero-size dimensions are not compiled")


@pytest.mark.parametrize("ev", [0, 6], ids=["empty_v", "v_with_columns"])
def test_attention_with_head_dim_zero_is_the_mean_of_v(ev):
    # Once ZeroDivisionError in sdpa_math's default scale 1/sqrt(0) (issue 16). Every score is an
    # empty sum, 0, so each query row is the mean of v's rows, as in torch.
    q, k = torch.empty(2, 3, 4, 0, dtype=torch.float16), torch.empty(2, 3, 5, 0, dtype=torch.float16)
    v = torch.randn(2, 3, 5, ev, dtype=torch.float16)
    expected = F.scaled_dot_product_attention(q, k, v)
    assert expected.shape == (2, 3, 4, ev)
    torch.testing.assert_close(expected, v.mean(-2, keepdim=True).expand(2, 3, 4, ev))
    sdpa = lambda a, b, c: F.scaled_dot_product_attention(a, b, c)  # noqa: E731
    _same(sdpa(_spyre(q), _spyre(k), _spyre(v)), expected)
    _same(torch.compile(sdpa)(_spyre(q), _spyre(k), _spyre(v)), expected)
    _same(sdpa_math(_spyre(q), _spyre(k), _spyre(v)), expected)
