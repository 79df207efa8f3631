"""Random op chains through torch.compile against the CPU: views (transpose, permute, leading-dim
merges, unsqueeze, reshapes that move elements between lanes, row slices), pointwise ops, reductions with and without keepdim, softmax and matmuls in
random order, f16 and f32, so the layout search (relabels, reduction layouts, restickifies)
and the kernels it drafts meet shapes and orders no hand-written test picked. Seeded: each case
is reproducible by its id."""

from __future__ import annotations

import random
import warnings

import pytest
import torch

import torch_spyre  # noqa: F401

STEPS = ["t", "perm", "relu", "exp", "add_self_t", "sum", "amax", "mean", "mul", "neg", "sigmoid", "merge", "unsq",
         "softmax", "mm", "mmt", "reflow", "heads", "rows"]
SHAPES = [(64, 64), (2, 64, 64), (3, 32, 96), (67, 129), (4, 8, 64), (128, 64)]


def _chain(steps: list[str], is32: bool):
    def fn(x):
        y = x
        for i, s in enumerate(steps):
            if s == "t" and y.dim() >= 2:
                y = y.transpose(-1, -2)
            elif s == "perm" and y.dim() == 3:
                y = y.permute(2, 0, 1)
            elif s == "relu":
                y = torch.relu(y)
            elif s == "exp":
                y = torch.exp(y * 0.25)
            elif s == "add_self_t" and y.dim() >= 2 and y.shape[-1] == y.shape[-2]:
                y = y + y.transpose(-1, -2)
            elif s == "sum" and y.dim() >= 2:
                y = y.sum(-1, keepdim=bool(i % 2)) * 0.1
            elif s == "amax" and y.dim() >= 2:
                y = y.amax(0)
            elif s == "mean" and y.dim() >= 2:
                y = y.mean(-1)
            elif s == "mul":
                y = y * 1.5
            elif s == "neg":
                y = -y
            elif s == "sigmoid":
                y = torch.sigmoid(y)
            elif s == "merge" and y.dim() == 3:
                y = y.reshape(y.shape[0] * y.shape[1], y.shape[2])
            elif s == "unsq" and y.dim() <= 2:
                y = y.unsqueeze(0)
            elif s == "softmax":
                y = torch.softmax(y, -1)
            elif s == "mm" and y.dim() >= 2 and not is32:  # the PT arrays take fp16/bf16
                y = (y @ y.transpose(-1, -2)) * 0.05
            elif s == "mmt" and y.dim() == 2 and not is32:
                y = (y.transpose(0, 1) @ y) * 0.05
            elif s == "reflow" and y.numel() % 48 == 0:  # rows of 48: lanes move
                y = y.reshape(-1, 48) * 1.25
            elif s == "heads" and y.dim() >= 2 and y.shape[-1] % 2 == 0:  # split the row in two
                y = y.reshape(*y.shape[:-1], 2, y.shape[-1] // 2) + 1
            elif s == "rows" and y.dim() >= 2 and y.shape[0] >= 3:  # a row slice read in place
                y = y[1:y.shape[0] - 1] * 0.75
        return y + 0  # never a bare view of the input
    return fn


@pytest.mark.filterwarnings("ignore::torch_spyre.FallbackWarning")
@pytest.mark.parametrize("seed", range(100))
def test_random_chain_matches_cpu(seed):
    rng = random.Random(seed)
    shape = rng.choice(SHAPES)
    dtype = rng.choice([torch.float16, torch.float16, torch.float32])
    steps = [rng.choice(STEPS) for _ in range(rng.randint(2, 6))]
    fn = _chain(steps, dtype == torch.float32)
    x = (torch.randn(*shape, generator=torch.Generator().manual_seed(seed)) * 0.5).to(dtype)
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = torch.compile(fn, backend="spyre")(x.to("spyre")).cpu()
    # The reference sees the values as the card stores them (DL16 for fp16), computed in fp32.
    want = fn(x.to("spyre").cpu().float()).to(dtype)
    assert got.shape == want.shape, (steps, shape, dtype)
    torch.testing.assert_close(got.float(), want.float(), atol=0.1, rtol=0.1, equal_nan=True,
                               msg=lambda m: f"{steps} {shape} {dtype}: {m}")
