"""ctest helper: runs spyre-jit-bench --json with SPYRE_TRACE and checks the JSON report and
the Chrome/Perfetto trace (it parses; kernel track, per-core unit tracks, slices in order)."""

import json
import os
import subprocess
import sys
import tempfile


def main() -> int:
    bench, args = sys.argv[1], sys.argv[2:]
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "trace.json")
        env = dict(os.environ, SPYRE_TRACE=trace)
        out = subprocess.run([bench, *args, "--json"], env=env, check=True, capture_output=True, text=True).stdout
        report = json.loads(out)
        w = report[0]
        for key in ("workload", "kernels", "sticks", "jit", "interp", "native", "sim"):
            assert key in w, f"missing {key!r} in {w}"
        for key in ("median_ms", "min_ms", "max_ms", "sticks_per_s", "compile_cold_ms", "compile_hit_ms"):
            assert w["jit"][key] >= 0, key
        assert w["jit"]["min_ms"] <= w["jit"]["median_ms"] <= w["jit"]["max_ms"]
        assert w["sim"]["us"] > 0 and w["sim"]["ddr_bytes"] > 0
        with open(trace) as f:
            t = json.load(f)
        ev = t["traceEvents"]
        tracks = {e["tid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "thread_name"}
        assert tracks.get(0) == "kernels", tracks
        assert any(n.endswith(" DMA") for n in tracks.values()), tracks
        slices = [e for e in ev if e.get("ph") == "X"]
        kernels = [e for e in slices if e["tid"] == 0 and e["name"] not in ("launch",) and
                   not e["name"].startswith("phase ")]
        assert len(kernels) == w["kernels"], (len(kernels), w["kernels"])  # one traced run
        assert abs(sum(k["dur"] for k in kernels) - w["sim"]["us"]) < 1e-3 * max(1, w["sim"]["us"])
        for e in slices:
            assert e["dur"] >= 0 and e["tid"] in tracks, e
    print(f"ok: {w['workload']}: {len(ev)} trace events on {len(tracks)} tracks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
