"""torch.distributed on spyre tensors: the c10d backend "spyre" with 2 ranks on loopback.

Each test starts its ranks as processes (tests/python/dist_worker.py) over a FileStore in the
test's tmp dir, with bounded timeouts; the worker asserts the numerics (every collective on
every dtype, bit-exact against the same collective on CPU tensors over gloo) and this side
checks each rank's exit status and last line.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
import torch
import torch.distributed as dist

import torch_spyre  # noqa: F401

WORKER = os.path.join(os.path.dirname(__file__), "dist_worker.py")
WALL_LIMIT = 120  # seconds for a whole scenario (the processes are killed after it)


def run_ranks(scenario: str, tmp_path, world: int = 2, backend: str = "spyre") -> list[str]:
    init = f"file://{tmp_path}/store"
    env = dict(os.environ, SPYRE_TEST_BACKEND=backend, TORCH_DEVICE_BACKEND_AUTOLOAD="1")
    if os.path.exists("/sys/class/net/lo"):
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")  # loopback, whatever the hostname resolves to
    procs = [subprocess.Popen([sys.executable, WORKER, scenario, str(r), str(world), init], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in range(world)]
    outs = []
    deadline = time.monotonic() + WALL_LIMIT
    try:
        for p in procs:
            out, _ = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            outs.append(out)
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
        pytest.fail(f"scenario {scenario} hung for {WALL_LIMIT} s")
    return outs


def _ok(out: str, rank: int) -> None:
    assert f"RANK{rank} OK" in out, out[-3000:]


def test_backend_registered():
    assert dist.is_backend_available("spyre")
    assert dist.is_backend_available("spyreccl")  # torch-spyre's name
    assert dist.get_default_backend_for_device("spyre") == "spyreccl"  # torch-spyre's default
    assert dist.Backend.backend_capability["spyre"] == ["cpu", "spyre"]


def test_collectives_two_ranks(tmp_path):
    """Eager collectives on every dtype, then functional collectives in compiled graphs: one
    process start per rank (the CI's 2-rank loopback test)."""
    outs = run_ranks("all", tmp_path)
    for r, out in enumerate(outs):
        _ok(out, r)
        assert "fallback_nodes=0" in out


@pytest.mark.parametrize("scenario", ["dead", "timeout"])
def test_missing_peer_raises(tmp_path, scenario):
    """The device->backend map form of init_process_group; a dead or absent peer is gloo's
    error in the other rank after the group's 4 s timeout, not a hang."""
    t0 = time.monotonic()
    outs = run_ranks(scenario, tmp_path, backend="cpu:gloo,spyre:spyre")
    _ok(outs[0], 0)
    assert "RANK0 FAULT" in outs[0], outs[0][-3000:]
    assert time.monotonic() - t0 < 60


def test_single_rank_group(tmp_path):
    """world_size 1 in this process: every collective is the identity, results in place."""
    dist.init_process_group("spyre", init_method=f"file://{tmp_path}/s1", rank=0, world_size=1)
    try:
        x = torch.arange(8, dtype=torch.float16).to("spyre")
        dist.all_reduce(x)
        assert torch.equal(x.cpu(), torch.arange(8, dtype=torch.float16))
        out = torch.empty(8, dtype=torch.float16).to("spyre")
        dist.all_gather_into_tensor(out, x)
        assert torch.equal(out.cpu(), torch.arange(8, dtype=torch.float16))
        with pytest.raises(NotImplementedError, match="Unsupported: all_reduce with ReduceOp.AVG on integer"):
            dist.all_reduce(torch.ones(4, dtype=torch.int32).to("spyre"), op=dist.ReduceOp.AVG)
        with pytest.raises(ValueError, match="all_gather_into_tensor output has 4 elements"):
            dist.all_gather_into_tensor(torch.empty(4).to("spyre"), torch.ones(8).to("spyre"))
    finally:
        dist.destroy_process_group()


def test_link_model():
    """The card-to-card link figures come from HardwareConfig; ring formulas per collective."""
    from torch_spyre import _C
    from torch_spyre._distributed import collective_stats, link_figures, link_time_us

    hw = _C.hardware_config()
    assert hw["linkBytesPerSecond"] == 50.4e9 and hw["linkLatencyNs"] == 2000
    assert hw["numCores"] == torch_spyre._C.sencores()
    bw, lat = link_figures()
    per_us = bw / 1e6
    nbytes = 1 << 20
    assert link_time_us("all_reduce", nbytes, 1) == 0.0
    assert link_time_us("all_reduce", nbytes, 4) == pytest.approx(6 * (lat + nbytes / 4 / per_us))
    assert link_time_us("reduce_scatter", nbytes, 4) == pytest.approx(3 * (lat + nbytes / 4 / per_us))
    assert link_time_us("all_gather", nbytes, 2) == pytest.approx(lat + nbytes / per_us)
    assert link_time_us("send", nbytes, 2) == pytest.approx(lat + nbytes / per_us)
    # 1 MiB all_reduce over 2 cards: 2 steps of (2 us + 512 KiB at 50.4 GB/s = 10.40 us).
    assert link_time_us("all_reduce", nbytes, 2) == pytest.approx(24.80, abs=0.01)
    collective_stats.reset()
    collective_stats.add("all_reduce", [torch.ones(4, 64, dtype=torch.int64).to("spyre")], 2)
    snap = collective_stats.snapshot()
    assert snap["calls"] == 1 and snap["bytes"] == 4 * 64 * 4  # int64 is int32 on the card
    assert snap["simulated_us"] == pytest.approx(link_time_us("all_reduce", 1024, 2))
    collective_stats.reset()
