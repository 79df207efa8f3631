"""Convolutions on the card: those whose stride is their kernel (ViT patch embeddings, 1x1
convolutions) as im2col (rank-4 permutes and reshapes) + one matmul; others with any stride,
padding, dilation and groups, 1-d or 2-d, as a sum over the kernel's taps, channels last (a
matmul per tap, or a per-channel multiply for depthwise ones; strided windows for a stride);
transposed ones as the stride-1 convolution of the zero-upsampled input with flipped taps.
3-d convolutions fall back."""

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


@pytest.mark.parametrize("name,x_shape,w_shape,kw", [
    ("3x3 same", (2, 8, 12, 20), (16, 8, 3, 3), dict(padding=1)),          # a ResNet / UNet block
    ("3x3 valid", (1, 4, 9, 70), (8, 4, 3, 3), {}),
    ("dilated", (1, 4, 10, 10), (8, 4, 3, 3), dict(padding=2, dilation=2)),
    ("grouped", (1, 8, 6, 6), (8, 4, 3, 3), dict(padding=1, groups=2)),
    ("depthwise 2d", (1, 16, 7, 9), (16, 1, 3, 3), dict(padding=1, groups=16)),
    ("asymmetric", (1, 3, 8, 11), (5, 3, 2, 4), dict(padding=(1, 0))),
])
def test_stride_one_conv2d_runs_on_the_card(name, x_shape, w_shape, kw, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")  # nothing may run on the CPU
    x = _dl16(cached_randn(x_shape, key="c2-x" + name))
    w = _dl16(cached_randn(w_shape, key="c2-w" + name, scale=(w_shape[1] * w_shape[2] * w_shape[3]) ** -0.5))
    b = _dl16(cached_randn((w_shape[0],), key="c2-b" + name))
    compare_with_cpu(lambda x, w, b: F.conv2d(x, w, b, **kw), x, w, b, on_spyre=True)


@pytest.mark.parametrize("name,x_shape,w_shape,kw,keep", [
    ("whisper stem", (1, 80, 100), (64, 80, 3), dict(padding=1), None),
    ("mamba causal depthwise", (2, 64, 50), (64, 1, 4), dict(padding=3, groups=64), 50),
    ("valid", (2, 16, 33), (8, 16, 5), {}, None),
])
def test_stride_one_conv1d_runs_on_the_card(name, x_shape, w_shape, kw, keep, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    x = _dl16(cached_randn(x_shape, key="c1-x" + name))
    w = _dl16(cached_randn(w_shape, key="c1-w" + name, scale=(w_shape[1] * w_shape[2]) ** -0.5))
    b = _dl16(cached_randn((w_shape[0],), key="c1-b" + name))
    fn = (lambda x, w, b: F.conv1d(x, w, b, **kw)[..., :keep]) if keep else (lambda x, w, b: F.conv1d(x, w, b, **kw))
    compare_with_cpu(fn, x, w, b, on_spyre=True)


def test_nn_conv1d_module_compiles_to_one_partition():
    from torch_spyre._compile import compile_stats

    conv = torch.nn.Conv1d(32, 32, kernel_size=4, padding=3, groups=32, dtype=torch.float16)
    with torch.no_grad():
        for p in conv.parameters():
            p.copy_(_dl16(p))
    x = _dl16(cached_randn((1, 32, 40), key="mamba-mod"))
    with torch.no_grad():
        expected = conv(x)[..., :40]
        conv_s = conv.to("spyre")
        torch._dynamo.reset()
        got = torch.compile(lambda t: conv_s(t)[..., :40], dynamic=False)(x.to("spyre")).cpu()
    assert compile_stats.partitions == 1 and compile_stats.fallback_nodes == 0
    torch.testing.assert_close(got, expected, atol=0.1, rtol=0.1)


def _conv_case(f, name, x_shape, w_shape, kw, out_channels):
    x = _dl16(cached_randn(x_shape, key="cs-x" + name))
    fan = w_shape[1] * w_shape[2] * (w_shape[3] if len(w_shape) > 3 else 1)
    w = _dl16(cached_randn(w_shape, key="cs-w" + name, scale=fan ** -0.5))
    b = _dl16(cached_randn((out_channels,), key="cs-b" + name))
    compare_with_cpu(lambda x, w, b: f(x, w, b, **kw), x, w, b, on_spyre=True)


@pytest.mark.parametrize("name,f,x_shape,w_shape,kw", [
    ("whisper stem conv2", F.conv1d, (1, 64, 100), (64, 64, 3), dict(stride=2, padding=1)),
    ("conv1d stride 3 dilated", F.conv1d, (2, 16, 41), (8, 16, 4), dict(stride=3, padding=2, dilation=2)),
    ("resnet downsample", F.conv2d, (1, 8, 9, 9), (16, 8, 3, 3), dict(stride=2, padding=1)),
    ("strides (2, 3)", F.conv2d, (2, 4, 11, 13), (8, 4, 3, 2), dict(stride=(2, 3), padding=(1, 2), dilation=(2, 1))),
    ("depthwise stride 2", F.conv2d, (1, 16, 10, 10), (16, 1, 3, 3), dict(stride=2, padding=1, groups=16)),
    ("grouped stride 2", F.conv2d, (1, 8, 10, 10), (8, 4, 3, 3), dict(stride=2, padding=1, groups=2)),
    ("patches with padding", F.conv2d, (1, 3, 32, 32), (16, 3, 4, 4), dict(stride=4, padding=2)),
])
def test_strided_convolutions_run_on_the_card(name, f, x_shape, w_shape, kw, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    _conv_case(f, name, x_shape, w_shape, kw, w_shape[0])


@pytest.mark.parametrize("name,f,x_shape,w_shape,kw", [
    ("1d stride 2", F.conv_transpose1d, (1, 16, 20), (16, 8, 4), dict(stride=2, padding=1)),
    ("1d output_padding dilation", F.conv_transpose1d, (2, 16, 13), (16, 8, 3),
     dict(stride=3, padding=2, output_padding=1, dilation=2)),
    ("1d padding past the kernel", F.conv_transpose1d, (1, 8, 12), (8, 8, 3), dict(stride=2, padding=3)),
    ("2d stride 2", F.conv_transpose2d, (1, 8, 6, 7), (8, 4, 3, 3), dict(stride=2, padding=1, output_padding=1)),
    ("2d groups", F.conv_transpose2d, (1, 8, 6, 5), (8, 3, 2, 3), dict(stride=(2, 1), padding=(0, 1), groups=2)),
    ("2d depthwise", F.conv_transpose2d, (1, 8, 5, 5), (8, 1, 3, 3), dict(stride=2, groups=8)),
    ("2d stride 1", F.conv_transpose2d, (1, 8, 5, 5), (8, 4, 3, 3), {}),
    ("2d upsampling 2x2", F.conv_transpose2d, (2, 16, 4, 4), (16, 8, 2, 2), dict(stride=2)),
])
def test_transposed_convolutions_run_on_the_card(name, f, x_shape, w_shape, kw, monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    _conv_case(f, name, x_shape, w_shape, kw, w_shape[1] * kw.get("groups", 1))


def test_conv3d_falls_back_and_stays_correct():
    x = _dl16(cached_randn((1, 4, 5, 5, 5), key="c3"))
    w = _dl16(cached_randn((8, 4, 3, 3, 3), key="c3-w", scale=0.1))
    with pytest.warns(FallbackWarning, match="convolution"):
        got = F.conv3d(x.to("spyre"), w.to("spyre"), padding=1, stride=2).cpu()
    torch.testing.assert_close(got, F.conv3d(x, w, padding=1, stride=2), atol=0.1, rtol=0.1)
