"""torch.spyre.SpyreTensorLayout against torch-spyre's golden values (SPYRE.md §3)."""

from __future__ import annotations

import pickle

import pytest
import torch

FP16 = torch.float16

# (host size, host strides or None, dim_order or None, device_size, stride_map)
GOLDEN = [
    ([5, 100, 150], None, None, [100, 3, 5, 64], [150, 64, 15000, 1]),
    ([], None, None, [1, 64], [-1, -1]),
    ([120], None, None, [2, 64], [64, 1]),
    ([128], None, None, [2, 64], [64, 1]),
    ([512, 240], None, None, [4, 512, 64], [64, 240, 1]),
    ([512, 256], None, None, [4, 512, 64], [64, 256, 1]),
    ([512, 8, 240], None, None, [8, 4, 512, 64], [240, 64, 1920, 1]),
    ([512, 8, 256], None, None, [8, 4, 512, 64], [256, 64, 2048, 1]),
    ([512, 256], [256, 1], [1, 0], [8, 256, 64], [16384, 1, 256]),
    ([512, 8, 256], [2048, 256, 1], [0, 2, 1], [256, 1, 512, 64], [1, 16384, 2048, 256]),
    ([512, 8, 256], [2048, 256, 1], [1, 0, 2], [512, 4, 8, 64], [2048, 64, 256, 1]),
    ([512, 8, 256], [2048, 256, 1], [1, 2, 0], [256, 8, 8, 64], [1, 131072, 256, 2048]),
    ([512, 8, 256], [2048, 256, 1], [2, 0, 1], [512, 1, 256, 64], [2048, 16384, 1, 256]),
    ([512, 8, 256], [2048, 256, 1], [2, 1, 0], [8, 8, 256, 64], [256, 131072, 1, 2048]),
    ([512, 256], [256, 1], [0, 1, -1], [256, 1, 512, 64], [1, -1, 256, -1]),
    # notes §3.1 worked example with dim_order [1, 0, 2]
    ([5, 100, 150], [15000, 150, 1], [1, 0, 2], [5, 3, 100, 64], [15000, 64, 150, 1]),
]


def _make(size, stride, order, dtype=FP16):
    if order is None:
        return torch.spyre.SpyreTensorLayout(size, dtype)
    return torch.spyre.SpyreTensorLayout(size, stride, dtype, order)


@pytest.mark.parametrize("size,stride,order,device_size,stride_map", GOLDEN)
def test_golden_table(size, stride, order, device_size, stride_map):
    stl = _make(size, stride, order)
    assert stl.device_size == device_size
    assert stl.stride_map == stride_map
    assert stl.device_dtype == torch.spyre.DataFormats.SEN169_FP16
    assert stl.element_arrangement == torch.spyre.ElementArrangement.STANDARD
    # Same layout through the DataFormats spelling of the dtype.
    assert stl == _make(size, stride, order, torch.spyre.DataFormats.SEN169_FP16)


@pytest.mark.parametrize("size,stride,order,device_size,stride_map", GOLDEN)
def test_golden_table_str(size, stride, order, device_size, stride_map):
    stl = _make(size, stride, order)
    expected = (
        f"SpyreTensorLayout(device_size={device_size}, stride_map ={stride_map}, "
        "device_dtype=DataFormats.SEN169_FP16)"
    )
    assert str(stl) == expected
    assert repr(stl) == expected


def test_str_exact_text():
    stl = torch.spyre.SpyreTensorLayout([512, 256], FP16)
    assert str(stl) == (
        "SpyreTensorLayout(device_size=[4, 512, 64], stride_map =[64, 256, 1], "
        "device_dtype=DataFormats.SEN169_FP16)"
    )


def test_default_equals_explicit_contiguous():
    a = torch.spyre.SpyreTensorLayout([5, 100, 150], FP16)
    b = torch.spyre.SpyreTensorLayout([5, 100, 150], [15000, 150, 1], FP16, [0, 1, 2])
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b}) == 1


def test_inequality():
    a = torch.spyre.SpyreTensorLayout([512, 256], FP16)
    assert a != torch.spyre.SpyreTensorLayout([512, 240], FP16)
    assert a != torch.spyre.SpyreTensorLayout([512, 256], torch.float32)
    assert a != torch.spyre.SpyreTensorLayout([512, 256], [256, 1], FP16, [1, 0])
    assert a != "not a layout"
    assert a != None  # noqa: E711 - exercising __eq__ with a foreign type


@pytest.mark.parametrize(
    "dtype,fmt,eps",
    [
        (torch.float16, "SEN169_FP16", 64),
        (torch.bfloat16, "SEN169_FP16", 64),
        (torch.bool, "SEN169_FP16", 64),
        (torch.float32, "IEEE_FP32", 32),
        (torch.int32, "IEEE_INT32", 32),
        (torch.int64, "IEEE_INT32", 32),
    ],
)
def test_torch_dtype_maps_to_device_dtype(dtype, fmt, eps):
    fmt = getattr(torch.spyre.DataFormats, fmt)
    assert torch.spyre.get_device_dtype(dtype) == fmt
    assert fmt.elems_per_stick() == eps
    stl = torch.spyre.SpyreTensorLayout([67, 256], dtype)
    assert stl.device_dtype == fmt
    assert stl.device_size == [256 // eps, 67, eps]
    assert stl.stride_map == [eps, 256, 1]


def test_fp32_uses_32_element_sticks():
    stl = torch.spyre.SpyreTensorLayout([5, 100, 150], torch.float32)
    assert stl.device_size == [100, 5, 5, 32]
    assert stl.stride_map == [150, 32, 15000, 1]


def test_data_formats_enum_complete():
    names = [
        "SEN169_FP16", "IEEE_FP32", "SEN143_FP8", "SEN152_FP8", "SEN153_FP9", "SENINT2",
        "SENINT4", "SENINT8", "SENINT16", "SENINT24", "IEEE_INT64", "IEEE_INT32", "SENUINT32",
        "SENUINT2", "IEEE_FP16", "BOOL", "BFLOAT16", "SEN18F_FP24", "INVALID",
    ]  # fmt: skip
    assert list(torch.spyre.DataFormats.__members__) == names
    assert str(torch.spyre.DataFormats.IEEE_FP32) == "DataFormats.IEEE_FP32"
    assert torch.spyre.DataFormats.SENINT8.elems_per_stick() == 128
    assert list(torch.spyre.ElementArrangement.__members__) == [
        "STANDARD", "DL16_TO_FP32", "QFP8CH", "EXX2",
    ]  # fmt: skip


def test_pickle_round_trip_version_3():
    stl = torch.spyre.SpyreTensorLayout([512, 8, 256], [2048, 256, 1], FP16, [2, 0, 1])
    state = stl.__getstate__()
    assert state[0] == 3 and list(state[1]) == stl.device_size and list(state[2]) == stl.stride_map
    back = pickle.loads(pickle.dumps(stl))
    assert back == stl and str(back) == str(stl)


def test_expert_constructor_takes_device_values():
    DF, EA = torch.spyre.DataFormats, torch.spyre.ElementArrangement
    stl = torch.spyre.SpyreTensorLayout([1, 512, 64], [64, 0, 1], DF.SEN169_FP16, EA.STANDARD)
    assert stl.device_size == [1, 512, 64] and stl.stride_map == [64, 0, 1]


def test_encode_constant():
    DF = torch.spyre.DataFormats
    assert torch_spyre_encode(2.0**-8, DF.SEN169_FP16) == 11776
    assert torch_spyre_encode(1e-5, DF.SEN169_FP16) == 7327
    assert torch_spyre_encode(-1.0, DF.SEN169_FP16) == 0x8000 | (31 << 9)
    assert torch_spyre_encode(1.0, DF.IEEE_FP32) == 0x3F800000
    with pytest.raises(NotImplementedError, match="encode_constant for DataFormats.SENINT8"):
        torch_spyre_encode(1.0, DF.SENINT8)


def torch_spyre_encode(value, fmt):
    return torch.spyre.encode_constant(value, fmt)


# ---- errors ------------------------------------------------------------------------------


def test_rank_above_six_is_unsupported():
    with pytest.raises(NotImplementedError, match="rank 7 \\(max 6\\)"):
        torch.spyre.SpyreTensorLayout([2] * 7, FP16)


def test_dim_order_must_be_a_permutation():
    with pytest.raises(RuntimeError, match="dim_order \\[0, 0\\] is not a permutation"):
        torch.spyre.SpyreTensorLayout([4, 4], [4, 1], FP16, [0, 0])
    with pytest.raises(RuntimeError, match="does not match rank 2"):
        torch.spyre.SpyreTensorLayout([4, 4], [4, 1], FP16, [0])


def test_size_and_stride_rank_must_agree():
    with pytest.raises(RuntimeError, match="size has 2 dims but stride has 1"):
        torch.spyre.SpyreTensorLayout([4, 4], [1], FP16, [0, 1])


def test_negative_size_rejected():
    with pytest.raises(RuntimeError, match="negative size"):
        torch.spyre.SpyreTensorLayout([4, -1], FP16)


def test_unsupported_torch_dtype():
    with pytest.raises(NotImplementedError, match="Unsupported: dtype torch.float64 on spyre"):
        torch.spyre.SpyreTensorLayout([4], torch.float64)
    with pytest.raises(NotImplementedError, match="Unsupported: dtype torch.complex64 on spyre"):
        torch.spyre.get_device_dtype(torch.complex64)


def test_invalid_data_format_rejected():
    with pytest.raises(NotImplementedError, match="device dtype INVALID"):
        torch.spyre.SpyreTensorLayout([4], torch.spyre.DataFormats.INVALID)


def test_bad_pickle_state():
    cls = torch.spyre.SpyreTensorLayout
    stl = cls.__new__(cls)  # what pickle does before __setstate__
    with pytest.raises(RuntimeError, match="expected version 3"):
        stl.__setstate__((2, [1, 64], [-1, -1], torch.spyre.DataFormats.SEN169_FP16))
