"""Serialisation of spyre tensors: torch.save / torch.load (the bytes go to the file as CPU
storage with the location "spyre:0", the storage's layout in the tensor metadata; loading puts
them back on spyre in that layout, or on the CPU with map_location), state_dict round trips,
copy.deepcopy and pickle."""

from __future__ import annotations

import copy
import io
import pickle

import pytest
import torch

import torch_spyre  # noqa: F401

SPYRE = "spyre"


def _round_trip(obj, **load_kwargs):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, **load_kwargs)


def _values(dtype, shape=(3, 70)):
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    if dtype in (torch.int32, torch.int64):
        return torch.randint(-1000, 1000, shape, dtype=dtype)
    # fp16 values the card holds exactly (DL16 has 9 fraction bits)
    return (torch.randint(-512, 512, shape) / 64).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.int32, torch.int64,
                                   torch.bool])
def test_save_load_keeps_values_device_and_layout(dtype):
    x = _values(dtype)
    s = x.to(SPYRE)
    loaded = _round_trip(s)
    assert loaded.device.type == "spyre" and loaded.dtype == dtype and loaded.shape == x.shape
    assert torch.equal(loaded.cpu(), x)
    assert loaded.device_tensor_layout() == s.device_tensor_layout()


def test_save_load_keeps_a_non_default_layout():
    x = _values(torch.float16, (40, 60))
    layout = torch.spyre.SpyreTensorLayout([40, 60], [60, 1], torch.float16, [1, 0])  # sticks along dim 0
    s = x.to(SPYRE, device_layout=layout)
    loaded = _round_trip(s)
    assert loaded.device_tensor_layout() == layout
    assert torch.equal(loaded.cpu(), x)


def test_map_location_cpu_gives_cpu_tensors():
    x = _values(torch.float16)
    loaded = _round_trip(x.to(SPYRE), map_location="cpu")
    assert loaded.device.type == "cpu"
    assert torch.equal(loaded, x)
    loaded = _round_trip({"w": x.to(SPYRE)}, map_location=torch.device("cpu"))
    assert torch.equal(loaded["w"], x)


def test_the_file_holds_cpu_storage_and_the_device():
    # A file saved from spyre loads on the CPU without torch_spyre's help: the bytes are host order.
    x = _values(torch.float32, (2, 5))
    buf = io.BytesIO()
    torch.save(x.to(SPYRE), buf)
    raw = buf.getvalue()
    assert b"spyre:0" in raw  # the location the storage came from
    assert x.numpy().tobytes() in raw  # the values, as the CPU lays them out


def test_views_sharing_a_storage_stay_shared_and_correct():
    base = _values(torch.float16, (6, 70)).to(SPYRE)
    a, b = base[1:3], base[4:]
    la, lb = _round_trip([a, b])
    assert torch.equal(la.cpu(), a.cpu()) and torch.equal(lb.cpu(), b.cpu())
    assert la.untyped_storage().data_ptr() == lb.untyped_storage().data_ptr()


def test_state_dict_round_trip():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
    model = model.to(torch.float16)
    ref = {k: v.clone() for k, v in model.state_dict().items()}
    model.to(SPYRE)
    sd = model.state_dict()
    assert all(v.device.type == "spyre" for v in sd.values())
    loaded = _round_trip(sd)
    assert all(v.device.type == "spyre" for v in loaded.values())
    fresh = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
    fresh = fresh.to(torch.float16).to(SPYRE)
    fresh.load_state_dict(loaded)
    for k, v in fresh.state_dict().items():
        assert torch.equal(v.cpu(), sd[k].cpu()), k
        torch.testing.assert_close(v.cpu(), ref[k], atol=1e-2, rtol=1e-2)
    on_cpu = _round_trip(sd, map_location="cpu")
    cpu_model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
    cpu_model.to(torch.float16).load_state_dict(on_cpu)
    # The loaded weights compute on the card.
    x = _values(torch.float16, (4, 64))
    out = fresh(x.to(SPYRE)).cpu()
    torch.testing.assert_close(out, cpu_model(x), atol=5e-2, rtol=5e-2)


def test_weights_only_load_is_the_default_and_works():
    x = _values(torch.float16)
    loaded = _round_trip({"x": x.to(SPYRE)}, weights_only=True)
    assert torch.equal(loaded["x"].cpu(), x)


def test_deepcopy_copies_values_and_layout():
    x = _values(torch.float16)
    s = x.to(SPYRE)
    d = copy.deepcopy(s)
    assert d.device.type == "spyre" and torch.equal(d.cpu(), x)
    assert d.device_tensor_layout() == s.device_tensor_layout()
    assert d.untyped_storage().data_ptr() != s.untyped_storage().data_ptr()
    s.fill_(0)  # an independent copy
    assert torch.equal(d.cpu(), x)
    model = torch.nn.Linear(64, 8).to(SPYRE)
    clone = copy.deepcopy(model)
    assert torch.equal(clone.weight.cpu(), model.weight.cpu())


def test_pickle_round_trip():
    x = _values(torch.float32)
    p = pickle.loads(pickle.dumps(x.to(SPYRE)))
    assert p.device.type == "spyre" and torch.equal(p.cpu(), x)
    p = pickle.loads(pickle.dumps({"a": x.to(SPYRE), "b": [x[0].to(SPYRE)]}))
    assert torch.equal(p["b"][0].cpu(), x[0])


def test_storage_cpu_gives_the_host_bytes():
    x = _values(torch.float32, (2, 5))
    s = x.to(SPYRE)
    host = s.untyped_storage().cpu()
    assert bytes(host)[: x.numel() * 4] == x.numpy().tobytes()


def test_raw_storage_holds_the_bytes_it_is_given():
    x = _values(torch.float32, (16,))
    st = torch.UntypedStorage(64, device=SPYRE)
    st.copy_(x.untyped_storage())
    t = torch.empty(0, device=SPYRE).set_(st)
    assert t.shape == (16,) and torch.equal(t.cpu(), x)


def test_a_corrupt_layout_record_is_a_clear_error():
    x = _values(torch.float16, (2, 64))
    buf = io.BytesIO()
    torch.save(x.to(SPYRE), buf)
    data = buf.getvalue().replace(b"device_dtype=0", b"device_dtype=9")
    with pytest.raises(RuntimeError, match=r"spyre tensor metadata 'spyre.storage=v1;.*': device_dtype 9 does "
                                           r"not match torch.float16 \(DataFormats.SEN169_FP16\)"):
        torch.load(io.BytesIO(data))
