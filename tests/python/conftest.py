"""Shared fixtures for the torch_spyre pytest suite."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torch_spyre  # noqa: F401 - registers the "spyre" device


@pytest.fixture(autouse=True)
def _seed() -> None:
    """Every test starts from the same RNG state, so inputs are reproducible."""
    torch.manual_seed(0)
    np.random.seed(0)


@pytest.fixture
def warn_always():
    """TORCH_WARN_ONCE warnings fire on every occurrence while this fixture is active."""
    prev = torch.is_warn_always_enabled()
    torch.set_warn_always(True)
    yield
    torch.set_warn_always(prev)


@pytest.fixture
def dl16_round():
    return dl16_round_fp16


@pytest.fixture
def assert_bits():
    return assert_bitwise_equal


def dl16_round_fp16(x: torch.Tensor) -> torch.Tensor:
    """Reference DL16 rounding of float16 values, independent of the C++ code.

    DL16 has 1 sign, 6 exponent bits (bias 31) and 9 fraction bits; every fp16 exponent fits,
    so an fp16 normal keeps its exponent and its 10-bit mantissa is rounded to 9 bits, ties away
    from zero (the carry may bump the exponent; 65504 rounds up to 2^16, which is inf again in
    fp16). fp16 subnormals have at most 10 significant bits and are exact; zeros and infs stay.
    """
    bits = x.contiguous().view(torch.int16).numpy().astype(np.int32) & 0xFFFF
    sign = bits & 0x8000
    mag = bits & 0x7FFF
    exp = mag >> 10
    normal = (exp > 0) & (exp < 31)
    rounded = (mag + 1) & ~1  # add half an ulp of the 9-bit fraction, drop the last bit
    out = np.asarray(sign | np.where(normal, rounded, mag)).astype(np.uint16)
    return torch.from_numpy(out.view(np.int16)).view(torch.float16).reshape(x.shape)


def assert_bitwise_equal(actual: torch.Tensor, expected: torch.Tensor) -> None:
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    assert actual.device.type == "cpu"
    if actual.dtype in (torch.float16, torch.bfloat16):
        a, e = actual.contiguous().view(torch.int16), expected.contiguous().view(torch.int16)
    elif actual.dtype == torch.float32:
        a, e = actual.contiguous().view(torch.int32), expected.contiguous().view(torch.int32)
    else:
        a, e = actual, expected
    mismatch = (a != e).nonzero()
    assert mismatch.numel() == 0, (
        f"{mismatch.shape[0]} elements differ; first at {mismatch[0].tolist()}: "
        f"{actual[tuple(mismatch[0])]!r} != {expected[tuple(mismatch[0])]!r}"
    )
