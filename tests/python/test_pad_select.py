"""select and constant_pad_nd: lowered to the graph IR, decomposed by the frontend (select ->
slice + squeeze, constant_pad_nd -> fill + copy into a view / cat with filled blocks), checked
against torch on the CPU (fp16, atol = rtol = 0.1)."""

import pytest
import torch
import torch.nn.functional as F

from torch_spyre._compile import compile_stats
from torch_spyre.testing import compare_with_cpu


def _x(*shape, seed=0, dtype=torch.float16):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype)


@pytest.mark.parametrize("shape,dim,index", [
    ((67, 129), 0, 5), ((67, 129), 1, 70), ((67, 129), -1, -1), ((3, 67, 129), 0, 2), ((3, 67, 129), 1, 66),
    ((3, 67, 129), 2, 0), ((2, 3, 5, 71), 1, 1), ((2, 3, 5, 71), 3, 64), ((255,), 0, 100),
])
def test_select_compiles_on_spyre(shape, dim, index):
    fb = compare_with_cpu(lambda x: x.select(dim, index) * 2, _x(*shape), run_eager=False)
    assert not fb["compile"], fb
    assert compile_stats.partitions == 1


def test_select_rows_keep_one_kernel_and_a_zero_copy_squeeze():
    compare_with_cpu(lambda x: x.select(1, 3).neg(), _x(4, 8, 256), run_eager=False, on_spyre=True)
    ops = [p[0] for p in compile_stats.last.passes()]
    assert ops[:2] == ["dead-code", "decompose"]
    decomposed = dict(compile_stats.last.passes())["decompose"]
    assert "slice(" in decomposed and "reshape(" in decomposed and "permute(" not in decomposed
    after = dict(compile_stats.last.passes())["work-division"]
    assert "alias=1" in after  # the squeeze is zero-copy


@pytest.mark.parametrize("shape,pad,value", [
    ((67, 129), (3, 5), 0.0),        # last dim, inside sticks on both sides
    ((67, 129), (64, 0), 1.5),       # last dim, a whole stick in front
    ((67, 129), (0, 0, 2, 7), -2.0),  # rows only
    ((5, 67, 100), (1, 2, 3, 4, 5, 6), 0.25),  # every dim
    ((129,), (0, 63), 3.0),
])
def test_constant_pad_nd_matches_cpu(shape, pad, value):
    fb = compare_with_cpu(lambda x: F.pad(x, pad, value=value) + 0, _x(*shape))
    assert not fb["compile"] and not fb["eager"], fb


@pytest.mark.parametrize("value", [float("-inf"), float("inf")])
def test_constant_pad_nd_with_an_infinite_fill_runs_on_spyre(value):
    # SuperDSC constants that JSON cannot hold travel as the strings "inf" / "-inf" / "nan".
    compare_with_cpu(lambda x: F.pad(x, (0, 0, 1, 1), value=value) + 0, _x(8, 256), on_spyre=True)


def test_infinite_and_nan_scalars_run_on_spyre():
    compare_with_cpu(lambda x: x.clamp(min=float("-inf"), max=0.5), _x(8, 256), on_spyre=True)
    compare_with_cpu(lambda x: torch.where(x > 0, x, float("-inf")), _x(8, 256), on_spyre=True)
    # fp32 keeps NaN (DL16 has one code for NaN and inf, read back as +inf: docs/isa.md §5).
    compare_with_cpu(lambda x: torch.maximum(x, torch.full_like(x, float("nan"))), _x(8, 64, dtype=torch.float32),
                     on_spyre=True)


def test_constant_pad_nd_bf16():
    compare_with_cpu(lambda x: F.pad(x, (1, 2, 0, 3), value=4.0), _x(33, 70, dtype=torch.bfloat16), on_spyre=True)


def test_constant_pad_nd_f32_rows_runs_on_spyre():
    compare_with_cpu(lambda x: F.pad(x, (0, 0, 2, 1)), _x(6, 40, dtype=torch.float32), on_spyre=True)


def test_constant_pad_nd_negative_pad_is_unsupported():
    from torch_spyre._lowering import Unsupported
    from torch_spyre._compile import graph_to_text
    from torch.fx.experimental.proxy_tensor import make_fx

    gm = make_fx(lambda x: torch.constant_pad_nd(x, [-1, 2]))(torch.zeros(4, 8, dtype=torch.float16))
    with pytest.raises(Unsupported, match="negative pad"):
        graph_to_text(gm)
