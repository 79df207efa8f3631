"""Convolutions whose stride is their kernel (ViT patch embeddings, 1x1 convolutions) run on
the card as im2col (rank-4 permutes and reshapes) + one matmul; other convolutions fall back."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from torch_spyre import FallbackWarning
from torch_spyre.testing import cached_randn, compare_with_cpu


def _dl16(x: torch.Tensor) -> torch.Tensor:
    return x.to("spyre").cpu()


@pytest.mark.parametrize("shape,kernel,bias", [
    ((2, 3, 64, 64), 16, True),   # a ViT stem: 16x16 patches of a 64x64 image
    ((1, 3, 70, 50), 8, False),   # rows and columns no patch covers are dropped, as torch does
    ((1, 64, 8, 8), 1, False),    # 1x1: a matmul over the channels
])
def test_patch_convolution_runs_on_the_card(shape, kernel, bias):
    c = shape[1]
    x = _dl16(cached_randn(shape, key="conv-x"))
    w = _dl16(cached_randn((96, c, kernel, kernel), key="conv-w", scale=(c * kernel * kernel) ** -0.5))
    b = _dl16(cached_randn((96,), key="conv-b")) if bias else None
    compare_with_cpu(lambda x, w, b: F.conv2d(x, w, b, stride=kernel), x, w, b, on_spyre=True)


def test_nn_conv2d_module_as_vit_uses_it():
    conv = torch.nn.Conv2d(3, 128, kernel_size=16, stride=16, dtype=torch.float16)
    with torch.no_grad():
        for p in conv.parameters():
            p.copy_(_dl16(p))
    x = _dl16(cached_randn((1, 3, 32, 48), key="vit"))
    with torch.no_grad():
        expected = conv(x).flatten(2).transpose(1, 2)
        conv_s = conv.to("spyre")
        torch._dynamo.reset()
        got = torch.compile(lambda t: conv_s(t).flatten(2).transpose(1, 2), dynamic=False)(x.to("spyre")).cpu()
    torch.testing.assert_close(got, expected, atol=0.1, rtol=0.1)


def test_other_convolutions_fall_back_and_stay_correct():
    x = _dl16(cached_randn((1, 4, 9, 9), key="pad"))
    w = _dl16(cached_randn((8, 4, 3, 3), key="pad-w", scale=0.2))
    with pytest.warns(FallbackWarning, match="convolution"):
        got = F.conv2d(x.to("spyre"), w.to("spyre"), padding=1).cpu()
    torch.testing.assert_close(got, F.conv2d(x, w, padding=1), atol=0.1, rtol=0.1)
