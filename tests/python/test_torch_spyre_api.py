"""torch-spyre's user API on our package (issue 17, item 3): device state and lazy init,
streams and events, allocator statistics, the downcast-warning switch, the spyre:: custom ops,
int8 and float8_e4m3fn tensors, and the modules torch-spyre users import names from."""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
import time
import warnings

import pytest
import torch

import torch_spyre
from torch_spyre import _C

SPYRE = "spyre"
_HOST_STREAMS = 4  # kHostComputeStreams in python/csrc/spyre_device.h


# ---- device state and lazy initialisation -----------------------------------------------------


def test_device_state_enums_have_torch_spyres_values():
    assert [int(_C.SpyreDeviceState.Ok), int(_C.SpyreDeviceState.NotInitialized),
            int(_C.SpyreDeviceState.StreamError)] == [0, 1, 2]
    assert [int(_C.SpyreStreamError.Success), int(_C.SpyreStreamError.Shutdown)] == [0, 1]
    assert _C.stream_get_error_string(_C.SpyreStreamError.Shutdown) == "Shutdown"


def test_device_state_is_ok_once_the_card_is_used():
    torch.empty(4, device=SPYRE)
    assert torch.spyre.is_initialized()
    assert _C.get_device_state() == _C.SpyreDeviceState.Ok
    assert _C.stream_get_error(torch.spyre.current_stream()) == _C.SpyreStreamError.Success
    assert not _C.has_any_stream_error()


LAZY = """
import torch
from torch_spyre import _C
assert torch.spyre.is_initialized() is False, "initialised by import"
assert _C.get_device_state() == _C.SpyreDeviceState.NotInitialized
x = torch.ones(3, device="spyre")
assert torch.spyre.is_initialized() is True
assert _C.get_device_state() == _C.SpyreDeviceState.Ok
print("lazy ok")
"""


def test_import_does_not_initialise_the_card():
    out = subprocess.run([sys.executable, "-c", LAZY], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "lazy ok" in out.stdout


def test_lazy_init_is_idempotent():
    torch.spyre._lazy_init()
    torch.spyre.init()
    assert torch.spyre.is_initialized()


# ---- streams and events -----------------------------------------------------------------------


def test_streams_are_torch_streams_of_the_spyre_device():
    s = torch.spyre.Stream(priority=-1)
    assert isinstance(s, torch.Stream) and s.device == torch.device("spyre", 0)
    assert s.priority == -1 and torch.spyre.Stream().priority == 0
    assert s.id != torch.spyre.Stream().id != 0
    assert torch.spyre.default_stream().id == 0
    assert s.query() and torch.Stream(SPYRE).query()
    s.synchronize()
    torch.spyre.synchronize()
    torch.accelerator.synchronize()


def test_stream_context_sets_and_restores_the_current_stream():
    outer = torch.spyre.current_stream()
    s, t = torch.spyre.Stream(), torch.Stream(SPYRE)
    with s:
        assert torch.spyre.current_stream() == s
        assert torch.accelerator.current_stream() == s
        with s:  # re-entering the same stream restores each level
            with t:
                assert torch.spyre.current_stream() == t
            assert torch.spyre.current_stream() == s
        assert torch.spyre.current_stream() == s
    assert torch.spyre.current_stream() == outer
    with pytest.raises(ValueError):
        with s:
            raise ValueError("boom")
    assert torch.spyre.current_stream() == outer
    with torch.spyre.stream(t):
        assert torch.spyre.current_stream() == t
    assert torch.spyre.current_stream() == outer


def test_current_stream_is_per_thread():
    s = torch.spyre.Stream()
    seen = []
    with s:
        th = threading.Thread(target=lambda: seen.append(torch.spyre.current_stream().id))
        th.start()
        th.join()
    assert seen == [0]


def test_work_on_streams_is_complete_and_in_order():
    x = torch.randn(64, 128, dtype=torch.float16)
    a = x.to(SPYRE)
    s1, s2 = torch.spyre.Stream(), torch.spyre.Stream()
    with s1:
        b = a * 2
    with s2:
        c = b + 1  # reads s1's result: ordered execution
    assert s1.query() and s2.query()
    torch.testing.assert_close(c.cpu(), x * 2 + 1, atol=0.1, rtol=0.1)


def test_events_record_and_time_host_work():
    start, end = torch.spyre.Event(enable_timing=True), torch.Event(SPYRE, enable_timing=True)
    start.record()
    time.sleep(0.02)
    end.record(torch.spyre.Stream())
    assert end.query()
    end.synchronize()
    torch.spyre.current_stream().wait_event(end)
    assert 15.0 <= start.elapsed_time(end) < 5000.0
    with pytest.raises(ValueError, match="Both events must be recorded"):  # torch's own check
        torch.spyre.Event(enable_timing=True).elapsed_time(end)


def test_unknown_stream_ids_are_rejected():
    # constructing a handle checks nothing; using it must
    s = torch.spyre.Stream(stream_id=987654, device_index=0,
                           device_type=torch.spyre.Stream().device_type)
    with pytest.raises(RuntimeError, match="unknown spyre stream id 987654"):
        s.query()
    with pytest.raises(RuntimeError, match="unknown spyre stream id"):
        torch.spyre.set_stream(s)


def test_host_compute_streams_round_robin_over_a_fixed_set():
    dev = torch.device(SPYRE)
    first = _C.host_compute_stream(dev)
    ids = [first.id()] + [_C.host_compute_stream(dev).id() for _ in range(2 * _HOST_STREAMS - 1)]
    assert len(set(ids)) == _HOST_STREAMS and ids[:_HOST_STREAMS] == ids[_HOST_STREAMS:]
    assert 0 not in ids  # none is the default stream
    again = _C.host_compute_stream_by_id(ids[1], dev)
    assert again.id() == ids[1] and again == _C.host_compute_stream_by_id(ids[1], 0)
    assert again.priority() == 0 and again.device() == torch.device(SPYRE, 0)
    assert again.query() and again.synchronize() is None
    assert repr(again) == f"<torch_spyre.Stream device=0 id={ids[1]}>"
    x = torch.randn(8, 64, dtype=torch.float16)
    with torch.spyre.stream(again.stream):  # a real stream: it can be made current
        assert torch.spyre.current_stream().id == ids[1]
        y = x.to(SPYRE) * 3
    torch.testing.assert_close(y.cpu(), x * 3, atol=0.1, rtol=0.1)
    with pytest.raises(RuntimeError, match="stream id 0 is not a host compute stream"):
        _C.host_compute_stream_by_id(0, dev)
    with pytest.raises(RuntimeError, match="expected a spyre device"):
        _C.host_compute_stream(torch.device("cpu"))



# ---- allocator statistics ---------------------------------------------------------------------


def test_allocator_stats_track_live_blocks():
    gc.collect()
    torch.spyre._spyre_reset_accumulated_stats(0)
    torch.spyre._spyre_reset_peak_stats(0)
    before = torch.spyre._spyre_get_allocator_stats(0)
    assert before["allocation.all.allocated"] == 0 and before["allocation.all.freed"] == 0
    t = torch.empty(1024, device=SPYRE)
    mid = torch.spyre._spyre_get_allocator_stats(0)
    assert mid["allocation.all.current"] == before["allocation.all.current"] + 1
    grown = mid["allocated_bytes.all.current"] - before["allocated_bytes.all.current"]
    assert grown >= 4096 and grown % 128 == 0
    assert mid["allocated_bytes.all.peak"] >= mid["allocated_bytes.all.current"]
    del t
    gc.collect()
    after = torch.spyre.memory_stats()
    assert after["allocation.all.current"] == before["allocation.all.current"]
    assert after["allocated_bytes.all.current"] == before["allocated_bytes.all.current"]
    assert (after["allocation.all.allocated"], after["allocation.all.freed"]) == (1, 1)
    torch.spyre.reset_accumulated_memory_stats()
    assert torch.spyre.memory_stats()["allocation.all.allocated"] == 0


# ---- the downcast warning ---------------------------------------------------------------------


def test_downcast_warning_switch(warn_always, monkeypatch):
    monkeypatch.delenv("TORCH_SPYRE_DOWNCAST_WARN", raising=False)
    try:
        assert torch.spyre.get_downcast_warning() is True
        torch.spyre.set_downcast_warning(False)
        assert torch.spyre.get_downcast_warning() is False
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            torch.arange(5).to(SPYRE)
        assert not [w for w in rec if "int64" in str(w.message)]
        torch.spyre.set_downcast_warning(True)
        with pytest.warns(UserWarning, match="does not support int64"):
            torch.arange(5).to(SPYRE)
    finally:
        _C._clear_downcast_warning()


# ---- int8 and float8_e4m3fn tensors ------------------------------------------------------------


def test_int8_tensors_round_trip_exactly():
    x = torch.randint(-128, 128, (67, 200), dtype=torch.int8)
    y = x.to(SPYRE)
    assert y.dtype == torch.int8
    assert y.device_tensor_layout().device_dtype == torch.spyre.DataFormats.SENINT8
    assert y.device_tensor_layout().elems_per_stick() == 128
    assert torch.equal(y.cpu(), x)
    assert torch.equal(y[3:9, 1:7].cpu(), x[3:9, 1:7])


def test_int8_compute_matches_cpu():
    x = torch.randint(-60, 60, (8, 128), dtype=torch.int8)
    y = torch.randint(-60, 60, (8, 128), dtype=torch.int8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch_spyre.FallbackWarning)
        out = x.to(SPYRE) + y.to(SPYRE)
    assert out.device.type == SPYRE and out.dtype == torch.int8
    assert torch.equal(out.cpu(), x + y)


def test_float8_tensors_round_trip_bit_exactly():
    x = (torch.randn(33, 300) * 50).to(torch.float8_e4m3fn)
    y = x.to(SPYRE)
    assert y.dtype == torch.float8_e4m3fn
    assert y.device_tensor_layout().device_dtype == torch.spyre.DataFormats.SEN143_FP8
    assert torch.equal(y.cpu().view(torch.uint8), x.view(torch.uint8))


# ---- spyre:: custom ops -----------------------------------------------------------------------


def test_overwrite_writes_the_slot_in_place():
    out = torch.randn(8, 256, dtype=torch.float16)
    src = torch.randn(3, 64, dtype=torch.float16)
    expect = out.clone()
    expect[2:5, 64:128] = src
    dev = out.to(SPYRE)
    torch.ops.spyre.overwrite(src.to(SPYRE), dev, [0, 1], [2, 64])
    torch.testing.assert_close(dev.cpu(), expect, atol=0.1, rtol=0.1)
    torch.ops.spyre.overwrite(src, out, [0, 1], [2, 64])  # the CPU kernel is the same op
    assert torch.equal(out, expect)


def test_overwrite_f_returns_a_new_tensor():
    out = torch.zeros(4, 128, dtype=torch.float16)
    src = torch.ones(4, 64, dtype=torch.float16)
    dev = out.to(SPYRE)
    res = torch.ops.spyre.overwrite_f(src.to(SPYRE), dev, [1], [64])
    assert res.device.type == SPYRE
    assert torch.equal(dev.cpu(), out)  # untouched
    assert torch.equal(res.cpu(), torch.cat([out[:, :64], src], dim=1))
    f = torch.compile(lambda a, b: torch.ops.spyre.overwrite_f(a, b, [1], [0]), backend="spyre")
    torch.testing.assert_close(f(src.to(SPYRE), dev).cpu(), torch.cat([src, out[:, 64:]], 1))


def test_overwrite_rejects_out_of_range_slots():
    with pytest.raises(IndexError, match="out of range for dim 1"):
        torch.ops.spyre.overwrite(torch.ones(2, 64), torch.zeros(2, 100), [1], [64])
    with pytest.raises(ValueError, match="1 dims but 2 offsets"):
        torch.ops.spyre.overwrite(torch.ones(2, 64), torch.zeros(2, 100), [1], [0, 0])


def _ref_quantize(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    inv = 1.0 / scale.to(torch.float16)
    return (x.to(torch.float16) * inv).clamp(-448.0, 448.0).to(torch.float8_e4m3fn)


@pytest.mark.parametrize("op", ["quantize_fp8_with_scale", "quantize_weight_fp8_with_scale"])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_fp8_quantize_matches_cpu(op, compiled):
    x = torch.randn(4, 128, dtype=torch.float16) * 300
    scale = torch.tensor([[0.5], [1.0], [2.0], [4.0]], dtype=torch.float16)
    fn = getattr(torch.ops.spyre, op)
    if compiled:
        fn = torch.compile(fn, backend="spyre")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch_spyre.FallbackWarning)
        out = fn(x.to(SPYRE), scale.to(SPYRE))
    assert out.dtype == torch.float8_e4m3fn and out.device.type == SPYRE
    ref = _ref_quantize(x, scale)
    # the card computes x * (1/scale) in DL16 (9 fraction bits), fp8 keeps 3: one fp8 step apart
    torch.testing.assert_close(out.cpu().float(), ref.float(), atol=0.1, rtol=0.13)
    assert out.cpu().float().abs().max() <= 448.0


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_fp8_dequantize_matches_cpu(compiled):
    x = ((torch.arange(2 * 64, dtype=torch.float32) % 16) + 1).reshape(2, 64).to(torch.float8_e4m3fn)
    scale = torch.tensor(2.0, dtype=torch.float16)
    fn = torch.ops.spyre.dequantize_fp8_with_scale
    if compiled:  # an fp8 graph input: the conversion node falls back, the multiply runs on the card
        fn = torch.compile(fn, backend="spyre")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch_spyre.FallbackWarning)
        out = fn(x.to(SPYRE), scale.to(SPYRE))
    assert out.dtype == torch.float16 and out.device.type == SPYRE
    assert torch.equal(out.cpu(), x.to(torch.float16) * scale)


# ---- torch-spyre's module names ---------------------------------------------------------------


def test_torch_spyre_module_names():
    from torch_spyre._inductor.errors import Unsupported
    from torch_spyre.constants import DEVICE_NAME
    from torch_spyre.fallbacks import FallbackWarning as TopLevelFallbackWarning
    from torch_spyre.ops.fallbacks import FallbackWarning

    assert DEVICE_NAME == SPYRE
    assert FallbackWarning is torch_spyre.FallbackWarning is TopLevelFallbackWarning
    assert Unsupported is torch_spyre.Unsupported and issubclass(Unsupported, RuntimeError)
    assert issubclass(FallbackWarning, UserWarning)


def test_layout_expert_constructor_defaults_to_standard():
    stl = torch.spyre.SpyreTensorLayout([4, 512, 64], [64, 256, 1], torch.spyre.DataFormats.SEN169_FP16)
    assert stl == torch.spyre.SpyreTensorLayout([512, 256], torch.float16)
    assert stl.element_arrangement == torch.spyre.ElementArrangement.STANDARD
    ea = stl.with_element_arrangement(torch.spyre.ElementArrangement.EXX2)
    assert ea.element_arrangement == torch.spyre.ElementArrangement.EXX2 and ea != stl
    assert _C.get_elem_in_stick(torch.float16) == 64 and _C.get_elem_in_stick(torch.int8) == 128


# ---- torch.empty / empty_strided with device_layout= ------------------------------------------


def test_empty_with_device_layout():
    stl = torch.spyre.SpyreTensorLayout([512, 8, 256], [2048, 256, 1], torch.float16, [2, 1, 0])
    x = torch.empty((512, 8, 256), device_layout=stl, dtype=torch.float16)
    assert x.device.type == SPYRE and x.shape == (512, 8, 256)
    assert x.device_tensor_layout() == stl
    src = torch.randn(512, 8, 256, dtype=torch.float16)
    x.copy_(src)
    torch.testing.assert_close(x.cpu(), src, atol=0.1, rtol=0.1)
    y = torch.empty(512, 8, 256, device_layout=stl, dtype=torch.float16, device="spyre:0")
    assert y.device_tensor_layout() == stl


def test_empty_strided_with_device_layout():
    stl = torch.spyre.SpyreTensorLayout([40, 60], [1, 40], torch.float16, [1, 0])
    x = torch.empty_strided((40, 60), (1, 40), device_layout=stl, dtype=torch.float16)
    assert x.stride() == (1, 40) and x.device_tensor_layout() == stl
    src = torch.randn(60, 40, dtype=torch.float16).t()
    x.copy_(src)
    torch.testing.assert_close(x.cpu(), src, atol=0.1, rtol=0.1)


def test_empty_with_device_layout_rejects_bad_arguments():
    stl = torch.spyre.SpyreTensorLayout([4, 64], torch.float16)
    with pytest.raises(ValueError, match="allocates on spyre, but device=cpu"):
        torch.empty(4, 64, device_layout=stl, device="cpu")
    with pytest.raises(TypeError, match="expects a torch.spyre.SpyreTensorLayout"):
        torch.empty(4, 64, device_layout="bad")
    with pytest.raises(NotImplementedError):  # the layout does not describe this shape
        torch.empty(8, 64, device_layout=stl, dtype=torch.float16)
    assert torch.empty(3, 4).device.type == "cpu"  # without device_layout: torch.empty itself


# ---- dynamo guards on the device layout -------------------------------------------------------


def test_a_new_layout_recompiles_and_the_same_layout_does_not():
    import torch._dynamo
    from torch._dynamo.testing import CompileCounterWithBackend

    x = torch.randn(128, 256, dtype=torch.float16)
    stl_custom = torch.spyre.SpyreTensorLayout([128, 256], [256, 1], torch.float16, [1, 0])
    default = x.to(SPYRE)
    custom = x.to(device_layout=stl_custom)
    torch._dynamo.reset()
    cnt = CompileCounterWithBackend("spyre")
    f = torch.compile(lambda a: a + a, backend=cnt)
    for t in (default, custom, custom, default):
        torch.testing.assert_close(f(t).cpu(), x + x, atol=0.1, rtol=0.1)
    assert cnt.frame_count == 2  # one graph per layout, each reused


def test_repr_prints_the_device_last():
    y = torch.tensor([1.0, 2.0], dtype=torch.float16).to(SPYRE)
    assert repr(y) == "tensor([1., 2.], dtype=torch.float16, device='spyre:0')"
    assert repr(torch.tensor([1.0, 2.0]).to(SPYRE)) == "tensor([1., 2.], device='spyre:0')"


def test_to_a_layout_of_the_flattened_tensor():
    x = torch.randn(40, 60, dtype=torch.float16)
    stl = torch.spyre.SpyreTensorLayout([38, 64], [64, 1], torch.spyre.DataFormats.SEN169_FP16)
    y = x.to(device_layout=stl)
    assert y.shape == (40, 60) and y.device_tensor_layout() == stl
    torch.testing.assert_close(y.cpu(), x, atol=0.1, rtol=0.1)
    torch.testing.assert_close((y * 2).cpu(), x * 2, atol=0.1, rtol=0.1)


def test_viewing_layout_round_trips():
    x = torch.randn(60, dtype=torch.float16)
    stl = torch.spyre.SpyreTensorLayout([2, 1, 2, 64], [15, 64, 30, 1], torch.spyre.DataFormats.SEN169_FP16)
    y = x.to(device_layout=stl)
    assert y.device_tensor_layout() == stl
    torch.testing.assert_close(y.cpu(), x, atol=0.1, rtol=0.1)
