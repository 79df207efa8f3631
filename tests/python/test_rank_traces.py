"""SPYRE_TRACE under torchrun: each rank writes t.rank<R>.json, and
`python -m torch_spyre.merge_traces` joins them into one Perfetto view, a process per rank."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from torch_spyre import _trace

_SCRIPT = textwrap.dedent("""
    import torch
    x = torch.randn(64, 128, dtype=torch.float16)
    y = torch.compile(lambda a: torch.relu(a) * 2, backend="spyre")(x.to("spyre")).cpu()
    assert torch.allclose(y, torch.relu(x) * 2, atol=0.1, rtol=0.1)
""")


def _run_rank(tmp_path, rank: int) -> None:
    env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", SPYRE_TRACE=str(tmp_path / "t.json"),
               SPYRE_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]


def test_each_rank_writes_its_own_trace_and_they_merge(tmp_path):
    for r in (0, 1):
        _run_rank(tmp_path, r)
    files = sorted(p.name for p in tmp_path.glob("t*.json"))
    assert files == ["t.rank0.json", "t.rank1.json"]
    merged = tmp_path / "all.json"
    out = subprocess.run([sys.executable, "-m", "torch_spyre.merge_traces", str(merged),
                          str(tmp_path / "t.rank0.json"), str(tmp_path / "t.rank1.json")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    events = json.loads(merged.read_text())["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert names == {1: "Spyre card, rank 0 (simulated time)", 2: "Spyre card, rank 1 (simulated time)"}
    # every rank's kernel slices survive, on its own process
    for pid in (1, 2):
        assert any(e.get("ph") == "X" and e["pid"] == pid for e in events)


def test_rank_path_rules():
    env = {"SPYRE_TRACE": "/x/t.json", "RANK": "3", "WORLD_SIZE": "4"}
    _trace.per_rank_trace(env)
    assert env["SPYRE_TRACE"] == "/x/t.rank3.json"
    _trace.per_rank_trace(env)  # idempotent: already this rank's path
    assert env["SPYRE_TRACE"] == "/x/t.rank3.json"
    single = {"SPYRE_TRACE": "/x/t.json", "RANK": "0", "WORLD_SIZE": "1"}
    _trace.per_rank_trace(single)
    assert single["SPYRE_TRACE"] == "/x/t.json"
    assert _trace.rank_trace_path("trace", 1) == "trace.rank1.json"


def test_merge_rejects_a_file_that_is_not_a_trace(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{\"nope\": 1}")
    with pytest.raises(ValueError, match="bad.json: not a SPYRE_TRACE file"):
        _trace.merge_traces([str(bad)], str(tmp_path / "out.json"))


_COLLECTIVE_SCRIPT = textwrap.dedent("""
    import os, sys
    import torch
    import torch.distributed as dist
    rank = int(os.environ["RANK"])
    dist.init_process_group("spyre", init_method=sys.argv[1], rank=rank, world_size=2)
    x = torch.full((64, 128), float(rank + 1), dtype=torch.float16)
    y = torch.compile(lambda a: torch.relu(a) * 2, backend="spyre")(x.to("spyre"))
    dist.all_reduce(y)
    assert torch.equal(y.cpu(), torch.full((64, 128), 6.0, dtype=torch.float16))
    dist.destroy_process_group()
""")


def test_collectives_are_slices_of_each_ranks_trace(tmp_path):
    """A collective takes its modelled link time on a "collectives" track of the rank's trace,
    after the kernel that produced its input, on the same simulated clock."""
    from torch_spyre._distributed import link_time_us

    env = dict(os.environ, WORLD_SIZE="2", SPYRE_TRACE=str(tmp_path / "t.json"),
               SPYRE_CACHE_DIR=str(tmp_path / "cache"), TORCH_DEVICE_BACKEND_AUTOLOAD="1")
    if os.path.exists("/sys/class/net/lo"):
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")
    procs = [subprocess.Popen([sys.executable, "-c", _COLLECTIVE_SCRIPT, f"file://{tmp_path}/store"],
                              env=dict(env, RANK=str(r)), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True) for r in (0, 1)]
    try:
        outs = [p.communicate(timeout=240)[0] for p in procs]
    finally:
        for p in procs:
            p.kill()
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out[-3000:]
    for r in (0, 1):
        events = json.loads((tmp_path / f"t.rank{r}.json").read_text())["traceEvents"]
        tracks = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
        [tid] = [t for t, name in tracks.items() if name.startswith("collectives")]
        [coll] = [e for e in events if e.get("ph") == "X" and e["tid"] == tid]
        assert coll["name"] == "all_reduce"
        assert coll["args"] == {"bytes": 64 * 128 * 2, "world": 2}
        assert coll["dur"] == pytest.approx(link_time_us("all_reduce", 64 * 128 * 2, 2), abs=1e-5)
        kernel_end = max(e["ts"] + e["dur"] for e in events if e.get("ph") == "X" and e["tid"] == 0)
        assert coll["ts"] == pytest.approx(kernel_end, abs=1e-5)
