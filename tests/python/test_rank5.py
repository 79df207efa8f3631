"""Ops on more than 4 dims run on the card (issue 18: rank-5+ operands). The kernels take at
most 4 dims; the frontend merges middle dims (zero-copy reshapes), drops unit dims and, where
that is not enough, dim 0 (stick reorders) around the op: elementwise with broadcasting, cat
and stack (GPT-J's rotary ``stack((-x2, x1), -1).flatten(-2)``), reductions, scans, slices,
permutes and transposes, matmuls and reshapes from and to rank 5. Strict mode, compiled, vs
the CPU in fp32 (fp16 atol = rtol = 0.1)."""

from __future__ import annotations

import pytest
import torch

from torch_spyre.testing import cached_randn


@pytest.fixture(autouse=True)
def _strict(monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")


S5 = (2, 3, 4, 5, 64)

CASES = {
    "gptj_rotary_stack": (lambda a, b: torch.stack((-b, a), dim=-1).flatten(-2), [(1, 16, 4, 32)] * 2),
    "add": (lambda a, b: a + b, [S5, S5]),
    "mul_broadcast": (lambda a, b: a * b, [S5, (1, 3, 1, 5, 64)]),
    "add_lower_rank": (lambda a, b: a + b, [S5, (64,)]),
    "rank6_relu_add": (lambda a: torch.relu(a) + 1, [(2, 3, 2, 2, 5, 64)]),
    "where": (lambda a, b: torch.where(a > 0, a, b), [S5, S5]),
    "cat_last": (lambda a, b: torch.cat([a, b], -1), [S5, (2, 3, 4, 5, 32)]),
    "cat_mid": (lambda a, b: torch.cat([a, b], 2), [S5, (2, 3, 1, 5, 64)]),
    "stack_dim1": (lambda a, b: torch.stack([a, b], 1), [(2, 3, 4, 64)] * 2),
    "sum_last": (lambda a: a.sum(-1), [S5]),
    "sum_mid_keepdim": (lambda a: a.sum(2, keepdim=True), [S5]),
    "amax_leading": (lambda a: a.amax((0, 1)), [S5]),
    "mean_two": (lambda a: a.mean((1, 3)), [S5]),
    "softmax": (lambda a: a.softmax(-1), [S5]),
    "cumsum_mid": (lambda a: a.cumsum(2), [(2, 3, 4, 5, 16)]),
    "slice_mid": (lambda a: a[:, :, 1:3] * 2, [S5]),
    "permute": (lambda a: a.permute(0, 2, 1, 4, 3).contiguous(), [S5]),
    "transpose_last": (lambda a: a.transpose(-1, -2).contiguous(), [(2, 3, 4, 64, 64)]),
    "transpose_mid": (lambda a: a.transpose(1, 2).contiguous() * 1, [S5]),
    "reshape_to_rank5": (lambda a: a.reshape(2, 3, 4, 5, 64) * 2, [(6, 20, 64)]),
    "reshape_from_rank5": (lambda a: (a * 2).reshape(6, 4, 5, 64), [S5]),
    "matmul": (lambda a, b: a @ b, [(2, 3, 2, 64, 64), (2, 3, 2, 64, 64)]),
    "matmul_weight": (lambda a, b: a @ b, [(2, 3, 2, 16, 64), (64, 32)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_rank5_op_on_the_card(name):
    fn, shapes = CASES[name]
    xs = [cached_randn(s, key=f"r5{name}{i}") for i, s in enumerate(shapes)]
    torch._dynamo.reset()
    got = torch.compile(fn, dynamic=False)(*[x.to("spyre") for x in xs]).cpu()
    ref = fn(*[x.float() for x in xs])
    assert got.shape == ref.shape
    torch.testing.assert_close(got.float(), ref, atol=0.1, rtol=0.1)


def test_rank5_eager_add_and_cat():
    a, b = cached_randn(S5, key="r5e0"), cached_randn(S5, key="r5e1")
    got = torch.cat([a.to("spyre") + b.to("spyre"), a.to("spyre")], -2).cpu()
    torch.testing.assert_close(got.float(), torch.cat([a.float() + b.float(), a.float()], -2), atol=0.1, rtol=0.1)
