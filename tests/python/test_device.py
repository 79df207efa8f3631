"""The "spyre" device: allocation, host<->device transfers, views, memory stats and errors."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import pytest
import torch

import torch_spyre._C as _C

SPYRE = "spyre"
INT64_WARNING = "Backend Spyre does not support int64; downcasting to int32"
SHAPES = [(67, 256), (5, 100, 150), (), (120,), (3, 1, 7), (2, 3, 65), (1, 2, 1, 3, 2, 70)]


def random_tensor(shape, dtype):
    """Inputs that exercise the conversions: all finite fp16 bit patterns (ties, subnormals,
    65504), full-range int32, int32-range int64."""
    if dtype == torch.float16:
        bits = torch.randint(0, 0x7C00, shape, dtype=torch.int32)
        bits |= torch.randint(0, 2, shape, dtype=torch.int32) << 15
        return bits.to(torch.int16).view(torch.float16)
    if dtype in (torch.bfloat16, torch.float32):
        return (torch.randn(shape) * 100).to(dtype)
    if dtype == torch.int32:
        return torch.randint(-(2**31), 2**31 - 1, shape, dtype=torch.int32)
    if dtype == torch.int64:
        return torch.randint(-(2**31), 2**31 - 1, shape, dtype=torch.int64)
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    raise AssertionError(dtype)


def expected_round_trip(x, dl16_round):
    return dl16_round(x) if x.dtype == torch.float16 else x


def to_spyre(x):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=INT64_WARNING)
        return x.to(SPYRE)


# ---- device module -----------------------------------------------------------------------


def test_device_module():
    assert torch._C._get_privateuse1_backend_name() == "spyre"
    assert torch.spyre.is_available()
    assert torch.spyre.device_count() == 1
    assert torch.spyre.current_device() == 0
    torch.spyre.set_device(0)
    torch.spyre.set_device("spyre:0")
    torch.spyre.synchronize()
    assert torch.device("spyre").type == "spyre"


@pytest.mark.parametrize("bad", [3, 1, -2, "spyre:3"])
def test_bad_set_device(bad):
    with pytest.raises(RuntimeError, match="Invalid spyre device index .*valid index: 0"):
        torch.spyre.set_device(bad)


def test_bad_device_index_in_factory():
    with pytest.raises(RuntimeError, match="Invalid spyre device index 2"):
        torch.empty(3, device="spyre:2")


def test_autoload_is_idempotent():
    import torch_spyre

    torch_spyre._autoload()
    torch_spyre._autoload()
    assert torch.ones(3).to(SPYRE).cpu().tolist() == [1.0, 1.0, 1.0]


def test_generated_tensor_methods():
    x = torch.ones(2, 3)
    y = x.spyre()
    assert y.is_spyre and not x.is_spyre
    assert y.device == torch.device("spyre", 0)


def test_manual_seed_reaches_spyre_generator():
    torch.manual_seed(1234)
    assert torch.spyre.initial_seed() == 1234
    torch.spyre.manual_seed(77)
    assert torch.spyre.initial_seed() == 77
    assert torch.initial_seed() == 77
    g = torch.Generator(device="spyre")
    assert g.device.type == "spyre"


# ---- round trips -------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize(
    "dtype", [torch.float16, torch.bfloat16, torch.float32, torch.int32, torch.int64, torch.bool]
)
def test_round_trip(shape, dtype, dl16_round, assert_bits):
    x = random_tensor(shape, dtype)
    y = to_spyre(x)
    assert y.device.type == "spyre"
    assert y.shape == x.shape and y.dtype == x.dtype
    assert_bits(y.cpu(), expected_round_trip(x, dl16_round))


def test_fp16_round_trip_loses_exactly_the_last_mantissa_bit(assert_bits):
    # 1 + 2^-10 is a tie at DL16 precision and rounds away from zero; 65504 rounds to 2^16 = inf.
    x = torch.tensor([1 + 2**-10, -(1 + 2**-10), 1 + 2**-9, 65504.0, -65504.0, 2**-24, -0.0,
                      float("inf"), float("-inf"), 0.0], dtype=torch.float16)  # fmt: skip
    expected = torch.tensor([1 + 2**-9, -(1 + 2**-9), 1 + 2**-9, float("inf"), float("-inf"),
                             2**-24, -0.0, float("inf"), float("-inf"), 0.0], dtype=torch.float16)  # fmt: skip
    assert_bits(x.to(SPYRE).cpu(), expected)


def test_fp32_round_trip_is_exact_on_special_values(assert_bits):
    x = torch.tensor([float("nan"), float("inf"), -0.0, 1e-45, 3.4e38, -1.5], dtype=torch.float32)
    assert_bits(x.to(SPYRE).cpu(), x)


def test_bf16_out_of_dl16_range_flushes_and_overflows():
    x = torch.tensor([1e-20, -1e-20, 1e20, -1e20, 3.0], dtype=torch.bfloat16)
    y = x.to(SPYRE).cpu().float()
    assert y.tolist() == [0.0, 0.0, float("inf"), float("-inf"), 3.0]


SOURCES = {
    "transposed": lambda x: x.t(),
    "sliced": lambda x: x[3:50:2, 7:250:3],
    "row_offset": lambda x: x[5:],
    "column": lambda x: x[:, 17],
    "expanded_row": lambda x: x[2].expand(9, -1),
    "expanded_col": lambda x: x[:, :1].expand(-1, 70),
    "unsqueezed_expand": lambda x: x[:4, :8].unsqueeze(1).expand(4, 3, 8),
    "permuted_3d": lambda x: x.reshape(67, 4, 64).permute(2, 0, 1),
    "scalar_view": lambda x: x[4, 4],
}


@pytest.mark.parametrize("name", list(SOURCES))
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.int32])
def test_non_contiguous_cpu_sources(name, dtype, dl16_round, assert_bits):
    base = random_tensor((67, 256), dtype)
    src = SOURCES[name](base)
    y = src.to(SPYRE)
    assert y.shape == src.shape
    assert_bits(y.cpu(), expected_round_trip(src.contiguous(), dl16_round))


def test_copy_into_existing_spyre_tensor_with_broadcast_and_dtype_change():
    y = torch.empty(4, 6, device=SPYRE, dtype=torch.float32)
    src = torch.arange(6, dtype=torch.float64)
    y.copy_(src)
    assert torch.equal(y.cpu(), src.float().expand(4, 6))


def test_strided_source_keeps_strides_and_layout():
    x = torch.randn(40, 60, dtype=torch.float16).t()  # (60, 40) with strides (1, 60)
    y = x.to(SPYRE)
    assert y.stride() == x.stride()
    stl = y.device_tensor_layout()
    # empty_strided orders dims by decreasing stride: the stick runs along host dim 0.
    assert stl == torch.spyre.SpyreTensorLayout([60, 40], [1, 60], torch.float16, [1, 0])


def test_d2h_into_non_contiguous_destination():
    x = torch.randn(3, 4)
    dst = torch.zeros(4, 3).t()
    dst.copy_(x.to(SPYRE))
    assert torch.equal(dst, x)


def test_d2d_copies(dl16_round):
    x = torch.randn(5, 100, 150)
    y = x.to(SPYRE)
    z = y.clone()
    assert z.device.type == "spyre" and _C._device_address(z) != _C._device_address(y)
    assert torch.equal(z.cpu(), x)
    w = torch.empty(100, 5, 150, device=SPYRE)
    w.copy_(y.transpose(0, 1))
    assert torch.equal(w.cpu(), x.transpose(0, 1))
    h = y.to(torch.float16)  # D2D with a dtype change
    assert h.dtype == torch.float16 and torch.equal(h.cpu(), dl16_round(x.half()))


def test_local_scalar_dense():
    assert torch.tensor(1.5, dtype=torch.float16).to(SPYRE).item() == 1.5
    y = torch.arange(10, dtype=torch.int32).to(SPYRE)
    assert y[7].item() == 7
    assert torch.tensor(True).to(SPYRE).item() is True


def test_empty_and_zero_sized():
    y = torch.empty(0, 5, device=SPYRE, dtype=torch.float16)
    assert y.cpu().shape == (0, 5)
    assert torch.zeros(0).to(SPYRE).cpu().shape == (0,)
    z = torch.empty(3, 4, device=SPYRE)
    assert z.device_tensor_layout() == torch.spyre.SpyreTensorLayout([3, 4], torch.float32)


def test_fill_and_zero():
    y = torch.randn(6, 70, dtype=torch.float16).to(SPYRE)
    y.fill_(2.5)
    assert torch.equal(y.cpu(), torch.full((6, 70), 2.5, dtype=torch.float16))
    y[1:3, 5:9].zero_()
    expected = torch.full((6, 70), 2.5, dtype=torch.float16)
    expected[1:3, 5:9] = 0
    assert torch.equal(y.cpu(), expected)
    y[:, 0].fill_(-1)
    expected[:, 0] = -1
    assert torch.equal(y.cpu(), expected)
    assert torch.equal(torch.zeros(3, 5, device=SPYRE).cpu(), torch.zeros(3, 5))
    assert torch.equal(torch.ones(2, 2, device=SPYRE, dtype=torch.int32).cpu(),
                       torch.ones(2, 2, dtype=torch.int32))  # fmt: skip


# ---- views -------------------------------------------------------------------------------


def test_views_read_back():
    x = torch.randn(6, 8, 70)
    y = x.to(SPYRE)
    cases = {
        "view": (y.view(48, 70), x.view(48, 70)),
        "reshape": (y.reshape(-1), x.reshape(-1)),
        "t": (y[0].t(), x[0].t()),
        "transpose": (y.transpose(0, 2), x.transpose(0, 2)),
        "permute": (y.permute(1, 2, 0), x.permute(1, 2, 0)),
        "slice": (y[1:5:2, :, 3:], x[1:5:2, :, 3:]),
        "select": (y[:, 3], x[:, 3]),
        "unsqueeze": (y.unsqueeze(1), x.unsqueeze(1)),
        "squeeze": (y[:1].squeeze(0), x[:1].squeeze(0)),
        "expand": (y[:, :1].expand(6, 5, 70), x[:, :1].expand(6, 5, 70)),
        "narrow": (y.narrow(2, 60, 10), x.narrow(2, 60, 10)),
        "as_strided": (y.as_strided((4, 4), (70, 1), 140), x.as_strided((4, 4), (70, 1), 140)),
        "unfold": (y.unfold(2, 4, 3), x.unfold(2, 4, 3)),
        "detach": (y.detach(), x),
    }
    for name, (view, ref) in cases.items():
        assert view.device.type == "spyre", name
        assert _C._device_address(view) == _C._device_address(y), name
        assert view.device_tensor_layout() == y.device_tensor_layout(), name
        assert torch.equal(view.cpu(), ref), name


def test_reshape_that_needs_a_copy():
    x = torch.randn(8, 70)
    y = x.to(SPYRE).t().reshape(-1)  # not viewable: clone + view
    assert torch.equal(y.cpu(), x.t().reshape(-1))


def test_view_incompatible_strides_error():
    y = torch.randn(8, 70).to(SPYRE).t()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        y.view(-1)


def test_writes_through_views():
    x = torch.randn(10, 70)
    y = x.to(SPYRE)
    patch = torch.randn(3, 70)
    y[2:5] = patch
    y.t()[5].copy_(torch.arange(10.0))  # column 5
    x[2:5] = patch
    x[:, 5] = torch.arange(10.0)
    assert torch.equal(y.cpu(), x)


def test_set_shares_storage_and_layout():
    x = torch.randn(4, 70)
    y = x.to(SPYRE)
    z = torch.empty(0, device=SPYRE).set_(y.untyped_storage(), 70, (2, 70), (70, 1))
    assert torch.equal(z.cpu(), x[1:3])
    assert z.device_tensor_layout() == y.device_tensor_layout()
    w = torch.empty(0, device=SPYRE).set_(y)
    assert torch.equal(w.cpu(), x)


def test_raw_storage_takes_the_layout_of_the_tensor_set_on_it():
    # A raw storage holds host bytes verbatim; a tensor set on it gives it a flat layout.
    s = torch.UntypedStorage(64, device=SPYRE)
    s.copy_(torch.arange(16.0).untyped_storage())
    t = torch.empty(0, device=SPYRE).set_(s)
    assert t.shape == (16,)
    assert torch.equal(t.cpu(), torch.arange(16.0))
    assert t.device_tensor_layout() == torch.spyre.SpyreTensorLayout([16], torch.float32)


def test_as_strided_out_of_bounds_error():
    y = torch.empty(4, device=SPYRE)
    with pytest.raises(RuntimeError, match="out of bounds for storage"):
        y.as_strided((100, 100), (100, 1))


# ---- resize_ -----------------------------------------------------------------------------


def test_resize_in_place_and_growing():
    y = torch.arange(6, dtype=torch.float32).to(SPYRE)
    addr = _C._device_address(y)
    y.resize_(2, 3)
    assert _C._device_address(y) == addr  # fits: same DDR block
    assert torch.equal(y.cpu(), torch.arange(6.0).view(2, 3))
    assert y.device_tensor_layout() == torch.spyre.SpyreTensorLayout([2, 3], torch.float32)
    y.resize_(40, 100)  # 16 000 bytes of sticks do not fit the 4 KiB block: moves
    assert y.shape == (40, 100)
    assert torch.equal(y.cpu().flatten()[:6], torch.arange(6.0))
    y.resize_(4)
    assert torch.equal(y.cpu(), torch.arange(4.0))


def test_copy_from_and_resize():
    dst = torch.empty(0, device=SPYRE)
    src = torch.randn(3, 70)
    torch.ops.aten._copy_from_and_resize(src, dst)
    assert dst.shape == (3, 70) and torch.equal(dst.cpu(), src)


# ---- explicit layouts --------------------------------------------------------------------


def test_to_with_device_layout_stick_on_dim0(dl16_round, assert_bits):
    x = torch.randn(40, 60, dtype=torch.float16)
    stl = torch.spyre.SpyreTensorLayout([40, 60], [60, 1], torch.float16, [1, 0])
    assert stl.device_size == [1, 60, 64] and stl.stride_map == [3840, 1, 60]
    y = x.to("spyre", device_layout=stl)
    assert y.device.type == "spyre"
    assert y.device_tensor_layout() == stl
    assert_bits(y.cpu(), dl16_round(x))
    z = x.to(device_layout=stl)  # the target device is implied
    assert z.device_tensor_layout() == stl


def test_to_with_padded_expert_layout():
    DF, EA = torch.spyre.DataFormats, torch.spyre.ElementArrangement
    stl = torch.spyre.SpyreTensorLayout([1, 512, 64], [-1, 60, 1], DF.SEN169_FP16, EA.STANDARD)
    x = torch.randn(40, 60, dtype=torch.float16)
    y = x.to("spyre", device_layout=stl)
    assert y.device_tensor_layout() == stl
    assert torch.equal(y.cpu(), x.to(SPYRE).cpu())


def test_to_with_layout_for_the_tensors_own_strides():
    x = torch.randn(60, 40).t()  # (40, 60), strides (1, 40)
    stl = torch.spyre.SpyreTensorLayout([40, 60], [1, 40], torch.float32, [1, 0])
    y = x.to("spyre", device_layout=stl)
    assert y.device_tensor_layout() == stl
    assert torch.equal(y.cpu(), x)


def test_to_with_layout_and_dtype_change():
    x = torch.randn(3, 70)
    stl = torch.spyre.SpyreTensorLayout([3, 70], torch.float16)
    y = x.to("spyre", torch.float16, device_layout=stl)
    assert y.dtype == torch.float16 and y.device_tensor_layout() == stl


def test_device_layout_errors():
    x = torch.randn(40, 60, dtype=torch.float16)
    with pytest.raises(NotImplementedError, match="does not"):
        x.to("spyre", device_layout=torch.spyre.SpyreTensorLayout([512, 256], torch.float16))
    with pytest.raises(RuntimeError, match="does not match torch.float16"):
        x.to("spyre", device_layout=torch.spyre.SpyreTensorLayout([40, 60], torch.float32))
    with pytest.raises(ValueError, match="device=cpu"):
        x.to("cpu", device_layout=torch.spyre.SpyreTensorLayout([40, 60], torch.float16))
    with pytest.raises(TypeError, match="SpyreTensorLayout"):
        x.to("spyre", device_layout="row-major")


def test_device_tensor_layout_of_cpu_tensor_is_none():
    assert torch.ones(3).device_tensor_layout() is None


def test_empty_with_layout_binding():
    stl = torch.spyre.SpyreTensorLayout([5, 100, 150], torch.float16)
    t = _C.empty_with_layout([5, 100, 150], [15000, 150, 1], torch.float16, stl)
    assert _C.get_spyre_tensor_layout(t) == stl
    assert t.untyped_storage().nbytes() == max(100 * 3 * 5 * 128, 5 * 100 * 150 * 2)


# ---- memory ------------------------------------------------------------------------------


def test_memory_stats_follow_allocations():
    torch.spyre.synchronize()
    base = torch.spyre.memory_allocated()
    torch.spyre.reset_peak_memory_stats()
    assert torch.spyre.max_memory_allocated() == base
    x = torch.empty(1024, 1024, dtype=torch.float16, device=SPYRE)
    assert torch.spyre.memory_allocated() == base + 2 * 2**20
    stats = torch.spyre.memory_stats()
    assert stats["allocated_bytes.all.current"] == base + 2 * 2**20
    assert stats["capacity_bytes"] == 128 * 2**30
    del x
    assert torch.spyre.memory_allocated() == base
    assert torch.spyre.max_memory_allocated() == base + 2 * 2**20
    torch.spyre.reset_peak_memory_stats()
    assert torch.spyre.max_memory_allocated() == base


def test_views_do_not_allocate():
    x = torch.empty(64, 64, device=SPYRE)
    before = torch.spyre.memory_allocated()
    v = x[3:].view(-1)
    assert torch.spyre.memory_allocated() == before
    del v


def test_out_of_memory_error():
    before = torch.spyre.memory_allocated()
    with pytest.raises(torch.OutOfMemoryError, match="Spyre device out of memory: tried to allocate"):
        torch.empty(100 * 2**30, dtype=torch.float16, device=SPYRE)  # 200 GiB > 128 GiB of DDR
    assert torch.spyre.memory_allocated() == before
    assert torch.ones(2, device=SPYRE).cpu().tolist() == [1.0, 1.0]


def test_memory_functions_reject_other_devices():
    with pytest.raises(RuntimeError, match="expected a spyre device, got cpu"):
        torch.spyre.memory_allocated("cpu")


# ---- dtypes ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float64, torch.int16, torch.uint8, torch.complex64])
def test_unsupported_dtype(dtype):
    name = str(dtype)
    with pytest.raises(NotImplementedError, match=f"Unsupported: dtype {name} on spyre"):
        torch.empty(3, dtype=dtype, device=SPYRE)
    with pytest.raises(NotImplementedError, match=f"Unsupported: dtype {name} on spyre"):
        torch.zeros(3, dtype=dtype).to(SPYRE)


def test_int64_downcast_warning(warn_always, monkeypatch):
    monkeypatch.delenv("TORCH_SPYRE_DOWNCAST_WARN", raising=False)
    with pytest.warns(UserWarning, match=INT64_WARNING):
        y = torch.arange(5).to(SPYRE)
    assert y.dtype == torch.int64
    assert y.device_tensor_layout().device_dtype == torch.spyre.DataFormats.IEEE_INT32
    assert y.cpu().tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("value", ["0", "false", "off", "OFF"])
def test_int64_downcast_warning_silenced(warn_always, monkeypatch, value):
    monkeypatch.setenv("TORCH_SPYRE_DOWNCAST_WARN", value)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.arange(5).to(SPYRE)


def test_int64_values_are_truncated_to_int32():
    x = torch.tensor([2**31 + 5, -(2**40) - 1], dtype=torch.int64)
    assert to_spyre(x).cpu().tolist() == [-(2**31) + 5, -1]


# ---- printing and debugging --------------------------------------------------------------


def test_repr_shows_values_and_device():
    y = torch.tensor([1.5, -2.0], dtype=torch.float16).to(SPYRE)
    assert repr(y) == "tensor([ 1.5000, -2.0000], dtype=torch.float16, device='spyre:0')"


def test_plain_import_torch_registers_spyre_and_debug_log():
    """A fresh interpreter: the entry point registers spyre on plain `import torch`, and
    TORCH_SPYRE_DEBUG=1 logs each transfer to stderr (one subprocess for both: imports are slow).
    """
    code = (
        "import torch\n"
        "print(torch._C._get_privateuse1_backend_name(), hasattr(torch, 'spyre'))\n"
        "torch.ones(3, 4).to('spyre').cpu()\n"
    )
    env = dict(os.environ, TORCH_SPYRE_DEBUG="1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True)  # fmt: skip
    assert out.stdout.split() == ["spyre", "True"]
    lines = [ln for ln in out.stderr.splitlines() if ln.startswith("[spyre]")]
    assert len(lines) == 2
    assert lines[0].startswith("[spyre] H2D torch.float32 size=[3, 4] stride=[4, 1]")
    assert lines[1].startswith("[spyre] D2H torch.float32 size=[3, 4]")
    assert "SpyreTensorLayout(device_size=[1, 3, 32]" in lines[0]
