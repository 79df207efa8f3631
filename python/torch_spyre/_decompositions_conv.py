"""Convolution decompositions (registered into ``_decompositions.DECOMPOSITIONS`` on import;
they serve compiled graphs and eager kernels alike): the patch form (stride = kernel) and the
stride-1 sum over the kernel's taps."""

from __future__ import annotations

from typing import Any, Sequence

import torch

from ._decompositions import _register

aten = torch.ops.aten


@_register(aten.convolution.default)
def _convolution(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None, stride: Sequence[int],
                 padding: Sequence[int], dilation: Sequence[int], transposed: bool, output_padding: Sequence[int],
                 groups: int) -> Any:
    """Convolutions on the card, two forms; others (transposed, a stride other than 1 or the
    kernel, rank other than 3 or 4) keep torch's kernel (the CPU fallback).

    * A 2-d convolution whose stride is its kernel (a ViT / patch-embedding stem, and every 1x1
      convolution): non-overlapping patches, so im2col is a pair of rank-4 permutes and
      reshapes, then one matmul with the flattened weight (+ bias).
    * Stride 1, any padding, dilation and groups, 1-d or 2-d (``_conv_taps``)."""
    if transposed or x.dim() not in (3, 4) or w.dim() != x.dim():
        return NotImplemented
    if all(st == 1 for st in stride):
        if x.dim() == 4 and groups == 1 and not any(padding) and list(w.shape[2:]) == [1, 1]:
            pass  # a 1x1 convolution: the patch form below, one matmul
        else:
            return _conv_taps(x, w, bias, list(padding), list(dilation), groups)
    if (groups != 1 or x.dim() != 4 or any(padding) or any(d != 1 for d in dilation)
            or list(stride) != list(w.shape[2:])):
        return NotImplemented
    B, C, H, W = x.shape
    O, _, kh, kw = w.shape
    hp, wp = H // kh, W // kw
    if hp * kh != H or wp * kw != W:  # the rows and columns no patch covers are dropped
        x = x[:, :, :hp * kh, :wp * kw]
    patches = x.reshape(B * C * hp, kh, wp, kw).permute(0, 2, 1, 3)        # [B C hp, wp, kh, kw]
    patches = patches.reshape(B, C, hp * wp, kh * kw).permute(0, 2, 1, 3)  # [B, hp wp, C, kh kw]
    y = patches.reshape(B * hp * wp, C * kh * kw) @ w.reshape(O, C * kh * kw).t()
    if bias is not None:
        y = y + bias
    return y.reshape(B, hp * wp, O).permute(0, 2, 1).reshape(B, O, hp, wp)


def _conv_taps(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None, padding: list[int],
               dilation: list[int], groups: int) -> Any:
    """A stride-1 convolution as a sum over the kernel's taps, channels last: the input is
    permuted to [B, *spatial, C] (the channels in the sticks), zero-padded along the spatial
    dims (a cat with zero blocks: those dims are outside the sticks), and each tap (i, j) is a
    window of it (slices of whole sticks) times that tap's weights: one [B*L, C] @ [C, O]
    matmul per tap, or for a depthwise convolution (groups == C == O, mamba's conv1d) a
    multiply by the tap's per-channel weight. The taps are summed in kernel order in the
    input dtype (torch's fp16 kernels accumulate in fp32, hence the fp16 tolerance)."""
    B, C = x.shape[:2]
    O, Cg = w.shape[:2]
    k = list(w.shape[2:])
    nd = len(k)
    if C != Cg * groups or O % groups:
        return NotImplemented
    depthwise = groups == C and O == C and Cg == 1
    if groups != 1 and not depthwise:
        # Grouped: one ungrouped convolution per group, concatenated along the channels.
        og = O // groups
        parts = [_conv_taps(x[:, g * Cg:(g + 1) * Cg], w[g * og:(g + 1) * og],
                            None if bias is None else bias[g * og:(g + 1) * og], padding, dilation, 1)
                 for g in range(groups)]
        return torch.cat(parts, 1)
    xl = x.permute(0, *range(2, 2 + nd), 1)                       # [B, *spatial, C]
    for d in range(nd):
        if padding[d]:
            shape = list(xl.shape)
            shape[1 + d] = padding[d]
            zeros = torch.zeros(shape, dtype=x.dtype, device=x.device)
            xl = torch.cat([zeros, xl, zeros], 1 + d)
    out = [xl.shape[1 + d] - dilation[d] * (k[d] - 1) for d in range(nd)]
    if any(n <= 0 for n in out):
        return NotImplemented  # torch raises its own error for a kernel larger than the input
    y = None
    for tap in (tuple(t) for t in _taps(k)):
        win = xl
        for d in range(nd):
            start = tap[d] * dilation[d]
            win = win.narrow(1 + d, start, out[d])
        if depthwise:
            term = win * w[(slice(None), 0) + tap]                   # [C] broadcast over the sticks
        else:
            rows = win.reshape(-1, C) @ w[(slice(None), slice(None)) + tap].t()
            term = rows.reshape(B, *out, O)
        y = term if y is None else y + term
    if bias is not None:
        y = y + bias
    return y.permute(0, nd + 1, *range(1, nd + 1))                  # [B, O, *spatial]


def _taps(k: list[int]) -> list[list[int]]:
    """Every index of a kernel of shape k, in row-major order."""
    taps: list[list[int]] = [[]]
    for n in k:
        taps = [t + [i] for t in taps for i in range(n)]
    return taps
