"""Device rules: an op mixing spyre and CPU tensors raises torch's TensorIterator error (as CUDA
does), 0-d CPU tensors are allowed, and data movement between the devices still works."""

from __future__ import annotations

import pytest
import torch

import torch_spyre  # noqa: F401
from torch_spyre._fallback import count_fallbacks

MIXED = "Expected all tensors to be on the same device, but found at least two devices, spyre:0 and cpu!"


def _pair():
    a = torch.randn(4, 64, dtype=torch.float16)
    return a, a.to("spyre")


@pytest.mark.parametrize("fn", [lambda s, c: s + c, lambda s, c: c * s, lambda s, c: torch.maximum(c, s),
                                lambda s, c: torch.where(s > 0, s, c), lambda s, c: torch.cat([s, c]),
                                lambda s, c: s.t() @ c, lambda s, c: s.add_(c)],
                         ids=["add", "cpu_first", "maximum", "where", "cat", "mm", "add_"])
def test_mixing_spyre_and_cpu_tensors_raises_in_eager(fn):
    c, s = _pair()
    with count_fallbacks() as fb, pytest.raises(RuntimeError) as e:
        fn(s, c)
    assert str(e.value) == MIXED
    assert not fb  # nothing ran on the CPU instead


def test_an_op_without_a_spyre_kernel_also_checks_devices():
    c, s = _pair()
    with pytest.raises(RuntimeError) as e:
        torch.atan2(s, c)  # runs through the boxed CPU fallback when the devices agree
    assert str(e.value) == MIXED


def test_zero_dim_cpu_tensors_are_allowed():
    c, s = _pair()
    out = s * torch.tensor(2.0) + torch.tensor(1, dtype=torch.int32)
    torch.testing.assert_close(out.cpu(), c * 2 + 1, atol=1e-2, rtol=1e-2)


def test_compiled_graphs_reject_mixed_devices():
    c, s = _pair()
    with pytest.raises(Exception) as e:
        torch.compile(lambda a, b: a + b)(s, c)
    assert "spyre:0" in str(e.value) and "cpu" in str(e.value)


def test_data_movement_between_devices_is_not_mixing():
    c, s = _pair()
    d = torch.empty(4, 64, dtype=torch.float16, device="spyre")
    d.copy_(c)  # cpu -> spyre copy
    torch.testing.assert_close(d.cpu(), s.cpu())
    c.copy_(s)  # spyre -> cpu copy
    idx = torch.tensor([2, 0])
    torch.testing.assert_close(s[idx].cpu(), s.cpu()[idx])  # CPU index tensors, as CUDA allows
