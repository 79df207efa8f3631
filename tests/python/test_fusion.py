"""Fusion (SPYRE_FUSION, default on): chains of elementwise ops, and row reductions with their
pointwise prologue and epilogue (softmax, RMSNorm, layer norm), compile to one kernel whose
results match torch on the CPU and equal the unfused compile (SPYRE_FUSION=0) bit for bit."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import torch_spyre  # noqa: F401
from torch_spyre._compile import compile_stats


def _compiled(fn, args, monkeypatch, fusion: bool):
    monkeypatch.setenv("SPYRE_FUSION", "1" if fusion else "0")
    torch._dynamo.reset()
    out = torch.compile(fn, backend="spyre", dynamic=False)(*[a.to("spyre") for a in args])
    outs = out if isinstance(out, tuple) else (out,)
    plan = compile_stats.last.plan()
    launches = sum(1 for line in plan.splitlines() if line.startswith("launch"))
    fused = sum(1 for line in plan.splitlines() if line.startswith("launch") and "fused" in line)
    passes = dict(compile_stats.last.passes())
    return [o.cpu() for o in outs], launches, fused, passes


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.int16) if t.element_size() == 2 else t.view(torch.int32)


def _silu_mul(g, u):
    return F.silu(g) * u


def _bias_gelu_scale(x, b):
    return F.gelu(x + b) * 0.5


def _masked(x, y):
    s = x + y
    return torch.where(s > 0, s.exp(), s * 0.25), s


def _rope(x, cos, sin):
    x1, x2 = x[..., :64], x[..., 64:]
    rot = torch.cat((-x2, x1), dim=-1)
    return x * cos + rot * sin


def _rmsnorm(x, w):
    return F.rms_norm(x, (x.shape[-1],), w, 1e-5)


def _layernorm_primitives(x, w, b):
    # The primitive chain (F.layer_norm takes the card's exx2 / layernorm ops instead).
    d = x - x.mean(-1, keepdim=True)
    return d * torch.rsqrt((d * d).mean(-1, keepdim=True) + 1e-5) * w + b


CASES = {
    # name: (fn, a factory of its CPU inputs)
    "swiglu": (_silu_mul, lambda: (torch.randn(4, 64, 512).half(), torch.randn(4, 64, 512).half())),
    "bias_gelu_scale": (_bias_gelu_scale, lambda: (torch.randn(96, 300).half(), torch.randn(300).half())),
    "masked_two_outputs_f32": (_masked, lambda: (torch.randn(16, 96) * 4, torch.randn(96))),
    "softmax": (lambda x: torch.softmax(x, -1), lambda: (torch.randn(64, 1000).half() * 3,)),
    "softmax_odd_67x129": (lambda x: torch.softmax(x, -1), lambda: (torch.randn(67, 129).half() * 3,)),
    "softmax_3d_bf16": (lambda x: torch.softmax(x, -1), lambda: (torch.randn(3, 50, 200).bfloat16(),)),
    "rmsnorm_weight": (_rmsnorm, lambda: (torch.randn(256, 4096).half(), torch.randn(4096).half())),
    "rmsnorm_odd_f32": (_rmsnorm, lambda: (torch.randn(45, 77), torch.randn(77))),
    "layernorm_primitives_1151x8192": (
        _layernorm_primitives,
        lambda: (torch.randn(1151, 8192).half(), torch.randn(8192).half(), torch.randn(8192).half())),
    # F.layer_norm: torch-spyre's exx2 / layernormscale / layernormnorm (fp32 statistics) as one
    # row-fused kernel. Rows whose mean is large next to their spread: E[x^2] - E[x]^2 cancels.
    "layer_norm_affine_4x67x256": (
        lambda x, w, b: F.layer_norm(x, (256,), w, b),
        lambda: (torch.randn(4, 67, 256).half() * 2 + 3, torch.randn(256).half(), torch.randn(256).half())),
    "layer_norm_odd_67x129_no_affine": (lambda x: F.layer_norm(x, (129,)), lambda: (torch.randn(67, 129).half(),)),
    "layer_norm_1151x8192": (
        lambda x, w, b: F.layer_norm(x, (8192,), w, b),
        lambda: (torch.randn(1151, 8192).half(), torch.randn(8192).half(), torch.randn(8192).half())),
    "layer_norm_bf16_weight_only": (
        lambda x, w: F.layer_norm(x, (300,), w, None, 1e-6),
        lambda: (torch.randn(3, 40, 300).bfloat16() + 0.5, torch.randn(300).bfloat16())),
    "layer_norm_f32_45x77": (
        lambda x, w, b: F.layer_norm(x, (77,), w, b),
        lambda: (torch.randn(45, 77) * 5, torch.randn(77), torch.randn(77))),
    "rope": (_rope, lambda: (torch.randn(256, 128).half(), torch.randn(256, 128).half(), torch.randn(256, 128).half())),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_fused_matches_cpu_and_unfused_bit_for_bit(name, monkeypatch):
    fn, make = CASES[name]
    torch.manual_seed(19)
    args = make()
    fused, n_on, k_on, passes = _compiled(fn, args, monkeypatch, True)
    unfused, n_off, k_off, passes_off = _compiled(fn, args, monkeypatch, False)
    assert "fusion" in passes and "fusion" not in passes_off
    assert k_on >= 1 and k_off == 0, (k_on, k_off)
    assert n_on < n_off, (n_on, n_off)
    expected = fn(*[a.float() for a in args])
    expected = expected if isinstance(expected, tuple) else (expected,)
    for got, ref, off in zip(fused, expected, unfused):
        torch.testing.assert_close(got.float(), ref.float(), atol=0.1, rtol=0.1)
        assert torch.equal(_bits(got), _bits(off)), f"{name}: fused and unfused results differ"


def test_swiglu_is_one_kernel(monkeypatch):
    torch.manual_seed(0)
    args = (torch.randn(4, 32, 256).half(), torch.randn(4, 32, 256).half())
    _, n, k, passes = _compiled(_silu_mul, args, monkeypatch, True)
    assert (n, k) == (1, 1), compile_stats.last.plan()
    assert "{fused=0}" in passes["fusion"], passes["fusion"]



@pytest.mark.parametrize("name", ["softmax", "softmax_odd_67x129", "rmsnorm_weight", "layernorm_primitives_1151x8192",
                                  "layer_norm_affine_4x67x256", "layer_norm_odd_67x129_no_affine",
                                  "layer_norm_bf16_weight_only", "layer_norm_f32_45x77"])
def test_row_chains_are_one_kernel(name, monkeypatch):
    fn, make = CASES[name]
    torch.manual_seed(5)
    _, n, k, passes = _compiled(fn, make(), monkeypatch, True)
    plan = compile_stats.last.plan()
    # rms_norm computes in fp32 (torch's decomposition upcasts): the dtype conversions around
    # it are their own kernels; everything else is the one row-fused kernel.
    converts = sum(1 for line in plan.splitlines()
                   if line.startswith("launch") and ("dl16tofp32" in line or "fp32todl16" in line))
    assert (n - converts, k) == (1, 1), plan
    assert "row-fusion" in passes and "{fused=0}" in passes["row-fusion"], passes["row-fusion"]


def _linear_gelu(x, w, b):
    return F.gelu(F.linear(x, w, b))


def _linear_relu(x, w, b):
    return F.relu(F.linear(x, w, b))


def _residual(x, w, h):
    return h + x @ w


def _swiglu_mlp(x, w1, w3):
    return F.silu(x @ w1) * (x @ w3)


MATMUL_CASES = {
    # name: (fn, CPU inputs, kernels with fusion on, kernels with SPYRE_FUSION=0)
    "linear_bias_gelu_67x200x130": (
        _linear_gelu, lambda: (torch.randn(67, 200).half(), (torch.randn(130, 200) * 0.1).half(),
                               torch.randn(130).half())),
    "linear_bias_relu_256x256x192": (
        _linear_relu, lambda: (torch.randn(256, 256).half(), (torch.randn(192, 256) * 0.1).half(),
                               torch.randn(192).half())),
    "residual_add_67x128x256": (
        _residual, lambda: (torch.randn(67, 128).half(), (torch.randn(128, 256) * 0.1).half(),
                            torch.randn(67, 256).half())),
    "swiglu_mlp_64x256x192": (
        _swiglu_mlp, lambda: (torch.randn(64, 256).half(), (torch.randn(256, 192) * 0.1).half(),
                              (torch.randn(256, 192) * 0.1).half())),
}


@pytest.mark.parametrize("name", sorted(MATMUL_CASES))
def test_matmul_epilogue_matches_cpu_and_unfused_bit_for_bit(name, monkeypatch):
    fn, make = MATMUL_CASES[name]
    if name.split("_")[-1].startswith("67x"):
        # 67 rows on 32 cores split K (partials on the ring: no fused kernel); fewer cores there.
        monkeypatch.setenv("SENCORES", "4")
    torch.manual_seed(7)
    args = make()
    fused, n_on, k_on, passes = _compiled(fn, args, monkeypatch, True)
    plan = compile_stats.last.plan()
    unfused, n_off, k_off, _ = _compiled(fn, args, monkeypatch, False)
    mm_lines = [line for line in passes["matmul-fusion"].splitlines() if "= mm(" in line or "matmul(" in line]
    assert any("fused=" in line for line in mm_lines), passes["matmul-fusion"]
    assert k_off == 0 and n_on < n_off, (n_on, n_off, plan)
    expected = fn(*[a.float() for a in args])
    for got, off in zip(fused, unfused):
        torch.testing.assert_close(got.float(), expected, atol=0.1, rtol=0.1)
        assert torch.equal(_bits(got), _bits(off)), f"{name}: fused and unfused results differ"


def test_layer_norm_with_a_stick_split_exx2_keeps_three_kernels(monkeypatch):
    # Two rows on 32 cores with SPYRE_SPLIT_REDUCTIONS=1: exx2's own kernel splits the stick dim
    # (partials on the ring), an order the row-fused kernel would change: not fused then.
    torch.manual_seed(3)
    x = torch.randn(2, 65536).half()
    fn = lambda t: F.layer_norm(t, (65536,))  # noqa: E731
    monkeypatch.setenv("SPYRE_SPLIT_REDUCTIONS", "1")
    (split,), n_split, k_split, _ = _compiled(fn, (x,), monkeypatch, True)
    assert (n_split, k_split) == (3, 0), compile_stats.last.plan()
    monkeypatch.setenv("SPYRE_SPLIT_REDUCTIONS", "0")
    (fused,), n, k, _ = _compiled(fn, (x,), monkeypatch, True)
    assert (n, k) == (1, 1), compile_stats.last.plan()
    for got in (split, fused):
        torch.testing.assert_close(got.float(), fn(x.float()), atol=0.1, rtol=0.1)


def _non_finite_rows(shape, dtype):
    torch.manual_seed(23)
    x = torch.randn(*shape) * 2
    x[0, 3] = float("inf")         # inf - mean: ±inf, (x - mean)^2 sums to inf
    x[1, :] = float("inf")         # inf - inf: the x86 NaN (0xFFC00000) in every fp32 chain
    x[2, 5] = float("-inf")
    x[3, 7] = float("nan")
    x[4, :] = 6e4                  # a row of the same large value: zero variance
    return x.to(dtype)


# (fn, input shape, dtype, its other inputs): one stick (64), a stick and a lane (65), odd rows.
NON_FINITE = {
    "layer_norm_one_stick_9x64": (lambda x: F.layer_norm(x, (64,)), (9, 64), torch.float16, ()),
    "layer_norm_65": (lambda x: F.layer_norm(x, (65,)), (7, 65), torch.float16, ()),
    "layer_norm_affine_11x300": (lambda x, w, b: F.layer_norm(x, (300,), w, b), (11, 300), torch.float16,
                                 (torch.linspace(-2, 2, 300).half(), torch.linspace(1, -1, 300).half())),
    "layer_norm_f32_6x77": (lambda x: F.layer_norm(x, (77,)), (6, 77), torch.float32, ()),
    "layernorm_primitives_8x129": (_layernorm_primitives, (8, 129), torch.float16,
                                   (torch.ones(129).half(), torch.zeros(129).half())),
    "softmax_9x129": (lambda x: torch.softmax(x, -1), (9, 129), torch.float16, ()),
    "rmsnorm_f32_6x200": (_rmsnorm, (6, 200), torch.float32, (torch.linspace(0.5, 1.5, 200),)),
}


@pytest.mark.parametrize("name", sorted(NON_FINITE))
def test_row_fused_jit_equals_interpreter_on_non_finite_rows(name, monkeypatch):
    """The JIT drops fp32 NaN canonicalisations whose bits no instruction sees (NaN-blind register
    reads, jit/lib/lowering.cpp): rows with inf, -inf, NaN and zero variance through the row-fused
    kernels must still equal the reference interpreter bit for bit (finite rows near torch)."""
    fn, shape, dtype, others = NON_FINITE[name]
    args = (_non_finite_rows(shape, dtype), *others)
    monkeypatch.setenv("SPYRE_ENGINE", "interp")
    ref, _, k_ref, _ = _compiled(fn, args, monkeypatch, True)
    monkeypatch.setenv("SPYRE_ENGINE", "jit")
    got, _, k_got, _ = _compiled(fn, args, monkeypatch, True)
    assert k_ref >= 1 and k_got >= 1
    assert torch.equal(_bits(got[0]), _bits(ref[0])), f"{name}: JIT and interpreter differ"
    assert not got[0][:4].isfinite().all()
    expected = fn(*[a.float() for a in args])
    torch.testing.assert_close(got[0][5:].float(), expected[5:].float(), atol=0.1, rtol=0.1)


def test_int_floor_divide_fuses_its_conversions(monkeypatch):
    # x // 3 on int32 (_decompositions_intdiv: fp32 estimates refined in int32) converts between
    # int32 and fp32 six times; the fp32 <-> int32 conversions join the pointwise groups, so the
    # chain is a few fused kernels instead of a kernel per conversion. Exact, fused or not.
    monkeypatch.setenv("SPYRE_STRICT", "1")
    x = torch.randint(-100000, 100000, (8, 96), generator=torch.Generator().manual_seed(3), dtype=torch.int32)
    fused, n_on, _, passes = _compiled(lambda t: t // 3, (x,), monkeypatch, True)
    unfused, n_off, _, _ = _compiled(lambda t: t // 3, (x,), monkeypatch, False)
    assert torch.equal(fused[0], x // 3) and torch.equal(unfused[0], x // 3)
    conversions = [line for line in passes["fusion"].splitlines() if "= to_dtype(" in line]
    assert len(conversions) == 6 and all("fused=" in line for line in conversions), passes["fusion"]
    assert n_on == 3 and n_off > 10, (n_on, n_off, compile_stats.last.plan())
