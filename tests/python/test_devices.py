"""Several simulated cards in one process: spyre:0 .. spyre:N-1 (SPYRE_DEVICE_COUNT, or
torchrun's LOCAL_WORLD_SIZE), each with its own DDR. The count is read once per process, so
each scenario runs in a fresh interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
import torch

import torch_spyre  # noqa: F401


def _run(script: str, **env: str) -> str:
    full = dict(os.environ, **env)
    if "LOCAL_WORLD_SIZE" not in env:
        full.pop("LOCAL_WORLD_SIZE", None)  # a test run under torchrun
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=full, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    return out.stdout


def test_two_cards_in_one_process(tmp_path):
    out = _run("""
        import torch, torch_spyre
        assert torch.spyre.device_count() == 2
        x = torch.randn(64, 128, dtype=torch.float16)
        a0 = x.to("spyre:0")
        base1 = torch.spyre.memory_allocated(1)
        base0 = torch.spyre.memory_allocated(0)
        a1 = x.to("spyre:1")
        assert a1.device == torch.device("spyre:1"), a1.device
        assert torch.spyre.memory_allocated(1) > base1          # the block is in card 1's DDR
        assert torch.spyre.memory_allocated(0) == base0
        x_dev = a0.cpu()                                          # x as the card stores it (DL16)
        assert torch.equal(a1.cpu(), x_dev)
        # eager and compiled ops run on the card of their inputs, results stay there
        r = torch.relu(a1)
        assert r.device == torch.device("spyre:1") and torch.equal(r.cpu(), torch.relu(x_dev))
        f = torch.compile(lambda t: torch.softmax(t * 2, dim=-1), backend="spyre")
        y1, y0 = f(a1), f(a0)
        assert y1.device == torch.device("spyre:1") and y0.device == torch.device("spyre:0")
        ref = torch.softmax(x.float() * 2, dim=-1)
        torch.testing.assert_close(y1.cpu().float(), ref, atol=0.1, rtol=0.1)
        assert torch.equal(y1.cpu(), y0.cpu())                  # same kernels on both cards
        # a CPU fallback's result comes back to the input's card
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            z = torch.atan(a1)
        assert z.device == torch.device("spyre:1")
        torch.testing.assert_close(z.cpu().float(), torch.atan(x.float()), atol=0.1, rtol=0.1)
        # card to card
        c = a1.to("spyre:0")
        assert c.device == torch.device("spyre:0") and torch.equal(c.cpu(), x_dev)
        # mixing cards is torch's "same device" error
        try:
            torch.add(a0, a1)
        except RuntimeError as e:
            assert "Expected all tensors to be on the same device, but found at least two devices, spyre:0 and spyre:1" in str(e), e
        else:
            raise AssertionError("spyre:0 + spyre:1 was accepted")
        # the current card: torch.spyre.device() enters and restores
        assert torch.spyre.current_device() == 0
        with torch.spyre.device(1):
            e = torch.empty(3, device="spyre")
            assert torch.spyre.current_device() == 1
        assert e.device == torch.device("spyre:1") and torch.spyre.current_device() == 0
        try:
            torch.spyre.set_device(2)
        except RuntimeError as err:
            assert "Invalid spyre device index 2" in str(err) and "2 device" in str(err), err
        else:
            raise AssertionError("set_device(2) accepted")
        print("OK")
    """, SPYRE_DEVICE_COUNT="2", SPYRE_CACHE_DIR=str(tmp_path / "cache"))
    assert "OK" in out


def test_torchrun_local_world_size_gives_a_card_per_local_rank():
    out = _run("""
        import torch, torch_spyre
        print(torch.spyre.device_count(), torch.ones(2).to("spyre:3").device)
    """, LOCAL_WORLD_SIZE="4")
    assert out.split() == ["4", "spyre:3"]


def test_a_card_that_does_not_exist_is_a_clear_error():
    if torch.spyre.device_count() != 1:
        pytest.skip("this process simulates several cards")
    with pytest.raises(RuntimeError, match=r"Invalid spyre device index 1: the simulator has 1 device "
                                           r"\(valid index: 0; SPYRE_DEVICE_COUNT sets the number\)"):
        torch.ones(2).to("spyre:1")


def test_an_invalid_device_count_names_the_variable():
    out = subprocess.run([sys.executable, "-c", "import torch, torch_spyre; torch.ones(2).to('spyre')"],
                         env=dict(os.environ, SPYRE_DEVICE_COUNT="17"), capture_output=True, text=True, timeout=300)
    assert out.returncode != 0
    assert "invalid SPYRE_DEVICE_COUNT value '17' (expected an integer in 1..16)" in out.stderr
