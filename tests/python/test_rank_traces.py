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
