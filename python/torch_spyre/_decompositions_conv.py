"""Convolution and max-pooling decompositions (registered into ``_decompositions.DECOMPOSITIONS``
on import; they serve compiled graphs and eager kernels alike): the patch form (stride =
kernel), the sum over the kernel's taps (any stride, padding, dilation, groups), transposed
convolutions, and max_pool2d as a running maximum over the same strided tap windows."""

from __future__ import annotations

from typing import Any, Sequence

import torch

from ._decompositions import _register

aten = torch.ops.aten


@_register(aten.convolution.default)
def _convolution(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None, stride: Sequence[int],
                 padding: Sequence[int], dilation: Sequence[int], transposed: bool, output_padding: Sequence[int],
                 groups: int) -> Any:
    """Convolutions on the card, 1-d or 2-d (rank 3 or 4; others keep torch's kernel):

    * A 2-d convolution whose stride is its kernel, without padding, dilation or groups (a ViT /
      patch-embedding stem, and every 1x1 convolution): non-overlapping patches, so im2col is a
      pair of rank-4 permutes and reshapes, then one matmul with the flattened weight (+ bias).
    * Any other stride, padding, dilation and groups (``_conv_taps``).
    * Transposed (``_conv_transposed``): stride, padding, output_padding, dilation, groups."""
    if x.dim() not in (3, 4) or w.dim() != x.dim():
        return NotImplemented
    if transposed:
        return _conv_transposed(x, w, bias, list(stride), list(padding), list(dilation), list(output_padding), groups)
    if (x.dim() == 4 and groups == 1 and not any(padding) and all(d == 1 for d in dilation)
            and list(stride) == list(w.shape[2:])):
        return _conv_patches(x, w, bias, list(stride))
    pads = [(p, p) for p in padding]
    return _conv_taps(_channels_last(x), w, bias, list(stride), pads, list(dilation), groups, transposed=False)


def _conv_patches(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None, stride: list[int]) -> Any:
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


def _channels_last(x: torch.Tensor) -> torch.Tensor:
    """[B, C, *spatial] -> [B, *spatial, C]: the channels in the sticks, the spatial dims outside
    them (slices and pads of whole sticks)."""
    return x.permute(0, *range(2, x.dim()), 1)


def _pad_or_crop(xl: torch.Tensor, d: int, lo: int, hi: int) -> torch.Tensor:
    """Spatial dim d of a channels-last tensor with lo / hi zero rows added (a cat with zero
    blocks), or removed where negative (a slice)."""
    n = xl.shape[1 + d]
    if lo < 0 or hi < 0:
        xl = xl.narrow(1 + d, max(-lo, 0), n - max(-lo, 0) - max(-hi, 0))
        lo, hi = max(lo, 0), max(hi, 0)
    return _pad_with(xl, d, lo, hi, 0.0)


def _conv_taps(xl: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None, stride: list[int],
               pads: list[tuple[int, int]], dilation: list[int], groups: int, transposed: bool) -> Any:
    """A convolution of the channels-last xl ([B, *spatial, C]) as a sum over the kernel's taps:
    xl padded (or cropped) along the spatial dims, and each tap (i, j) is a window of it (a
    slice of whole sticks, strided by the stride) times that tap's weights: one [B*L, C] @ [C, O]
    matmul per tap, or for a depthwise convolution (groups == C == O, mamba's conv1d) a multiply
    by the tap's per-channel weight. ``transposed``: w is a transposed convolution's
    [Cin, Cout/g, *k] (each tap's [Cin/g, Cout/g] block is the matmul's right operand as it is),
    and tap i takes the weights of k - 1 - i (flipped). The taps are summed in kernel order in the input dtype (torch's fp16 kernels
    accumulate in fp32, hence the fp16 tolerance). The result is [B, O, *spatial]."""
    B, C = xl.shape[0], xl.shape[-1]
    if transposed:
        Cg, O = w.shape[0] // groups, w.shape[1] * groups
    else:
        O, Cg = w.shape[:2]
    k = list(w.shape[2:])
    nd = len(k)
    if C != Cg * groups or O % groups or (transposed and w.shape[0] != C):
        return NotImplemented
    depthwise = groups == C and O == C and Cg == 1
    if groups != 1 and not depthwise:
        # Grouped: one ungrouped convolution per group, concatenated along the channels.
        og = O // groups
        wrows = Cg if transposed else og  # w's dim 0: input channels (transposed) or output ones
        parts = [_conv_taps(xl[..., g * Cg:(g + 1) * Cg], w[g * wrows:(g + 1) * wrows],
                            None if bias is None else bias[g * og:(g + 1) * og], stride, pads, dilation, 1, transposed)
                 for g in range(groups)]
        return NotImplemented if any(p is NotImplemented for p in parts) else torch.cat(parts, 1)
    for d in range(nd):
        xl = _pad_or_crop(xl, d, *pads[d])
    span = [xl.shape[1 + d] - dilation[d] * (k[d] - 1) for d in range(nd)]
    if any(n <= 0 for n in span):
        return NotImplemented  # torch raises its own error for a kernel larger than the input
    out = [(n - 1) // s + 1 for n, s in zip(span, stride)]
    y = None
    for tap in (tuple(t) for t in _taps(k)):
        win = xl
        for d in range(nd):
            start = tap[d] * dilation[d]
            if stride[d] == 1:
                win = win.narrow(1 + d, start, out[d])
            else:
                win = win[(slice(None),) * (1 + d) + (slice(start, start + (out[d] - 1) * stride[d] + 1, stride[d]),)]
        wt = tuple(k[d] - 1 - tap[d] for d in range(nd)) if transposed else tap
        if depthwise:
            term = win * w[(slice(None), 0) + wt]                    # [C] broadcast over the sticks
        else:
            wk = w[(slice(None), slice(None)) + wt]
            rows = win.reshape(-1, C) @ (wk if transposed else wk.t())
            term = rows.reshape(B, *out, O)
        y = term if y is None else y + term
    if bias is not None:
        y = y + bias
    return y.permute(0, nd + 1, *range(1, nd + 1))                  # [B, O, *spatial]


def _conv_transposed(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None, stride: list[int],
                     padding: list[int], dilation: list[int], output_padding: list[int], groups: int) -> Any:
    """conv_transpose1d/2d as the stride-1 convolution it is the adjoint of: x upsampled by the
    stride (s - 1 zero rows after each row but the last: a cat with a zero block on a new dim
    and a reshape, channels last, at most rank 4), padded by dilation (k - 1) - padding on both
    sides plus output_padding at the end (cropped where negative), then convolved with the
    weights [Cin, Cout/g, *k] as they are, taps flipped (``_conv_taps(transposed=True)``)."""
    k = list(w.shape[2:])
    nd = len(k)
    xl = _channels_last(x)
    for d in range(nd):
        s = stride[d]
        if s > 1:
            shape = list(xl.shape)                       # [B, *spatial, C]
            n, lead = shape[1 + d], shape[:1 + d]
            tail = shape[2 + d:]                         # the spatial dims after d, and C
            rows = xl.reshape(-1, 1, *tail)              # [B .. n, 1, *tail]
            zeros = torch.zeros([rows.shape[0], s - 1, *tail], dtype=x.dtype, device=x.device)
            up = torch.cat([rows, zeros], 1)             # [B .. n, s, *tail]
            xl = up.reshape(*lead, n * s, *tail).narrow(1 + d, 0, (n - 1) * s + 1)
    pads = [(dilation[d] * (k[d] - 1) - padding[d], dilation[d] * (k[d] - 1) - padding[d] + output_padding[d])
            for d in range(nd)]
    return _conv_taps(xl, w, bias, [1] * nd, pads, dilation, groups, transposed=True)


def _taps(k: list[int]) -> list[list[int]]:
    """Every index of a kernel of shape k, in row-major order."""
    taps: list[list[int]] = [[]]
    for n in k:
        taps = [t + [i] for t in taps for i in range(n)]
    return taps


def _pad_with(xl: torch.Tensor, d: int, lo: int, hi: int, value: float) -> torch.Tensor:
    """Spatial dim d of a channels-last tensor with lo / hi rows of `value` added."""
    parts = []
    for k in (lo, None, hi):
        if k is None:
            parts.append(xl)
        elif k:
            shape = list(xl.shape)
            shape[1 + d] = k
            parts.append(torch.full(shape, value, dtype=xl.dtype, device=xl.device))
    return torch.cat(parts, 1 + d) if len(parts) > 1 else xl


def _pool_out(n: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """torch's pooling output size (ceil_mode: the last window must start inside the input or
    its left padding)."""
    span = n + 2 * p - d * (k - 1) - 1
    o = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (o - 1) * s >= n + p:
        o -= 1
    return o


@_register(aten.max_pool2d_with_indices.default)
def _max_pool2d_with_indices(x: torch.Tensor, kernel_size: Sequence[int], stride: Sequence[int] = (),
                             padding: Sequence[int] = (0,), dilation: Sequence[int] = (1,),
                             ceil_mode: bool = False) -> Any:
    """max_pool2d as a running maximum over the kernel's taps (ResNet's stem): x channels last,
    padded with -inf, each tap a strided window as in _conv_taps; a tap replaces the maximum
    where it is larger or NaN (torch's rule: the first maximum wins, NaN propagates), and its
    flat input index (row * W + col) replaces the index there. Returns (values, int64 indices)."""
    if x.dim() not in (3, 4) or x.dtype not in (torch.float16, torch.bfloat16, torch.float32) or x.numel() == 0:
        return NotImplemented
    two = lambda v, dflt: [int(v[0]), int(v[-1])] if len(v) else dflt  # noqa: E731
    k = two(kernel_size, None)
    s, p, dl = two(stride, k), two(padding, [0, 0]), two(dilation, [1, 1])
    batched = x if x.dim() == 4 else x.unsqueeze(0)
    H, W = batched.shape[2], batched.shape[3]
    out = [_pool_out(n, k[i], s[i], p[i], dl[i], ceil_mode) for i, n in enumerate((H, W))]
    if any(o <= 0 for o in out) or any(pp > kk // 2 for pp, kk in zip(p, k)):
        return NotImplemented  # torch raises its own error
    xl = _channels_last(batched)
    for d in range(2):
        need = (out[d] - 1) * s[d] + dl[d] * (k[d] - 1) + 1  # padded extent the windows reach
        n = xl.shape[1 + d]
        xl = _pad_with(xl, d, p[d], max(0, need - n - p[d]), float("-inf"))
    best = idx = None
    for i, j in ((i, j) for i in range(k[0]) for j in range(k[1])):
        win = xl
        for d, t in enumerate((i, j)):
            start = t * dl[d]
            win = win[(slice(None),) * (1 + d) + (slice(start, start + (out[d] - 1) * s[d] + 1, s[d]),)]
        rows = torch.arange(out[0], dtype=torch.int32, device=x.device) * s[0] + (i * dl[0] - p[0])
        cols = torch.arange(out[1], dtype=torch.int32, device=x.device) * s[1] + (j * dl[1] - p[1])
        flat = (rows.view(-1, 1) * W + cols.view(1, -1)).view(1, out[0], out[1], 1)
        if best is None:
            best, idx = win, flat.expand(win.shape)
            continue
        take = (win > best) | (win != win)
        best = torch.where(take, win, best)
        idx = torch.where(take, flat, idx)
    values = best.permute(0, 3, 1, 2)
    indices = idx.permute(0, 3, 1, 2).to(torch.int64)
    if x.dim() == 3:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return values, indices
