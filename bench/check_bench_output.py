"""ctest helper: runs spyre-jit-bench --json with SPYRE_TRACE and checks the JSON report and
the Chrome/Perfetto trace.

Trace checks are the rules Perfetto's JSON importer (and chrome://tracing) relies on: the file
is one JSON object with a traceEvents array; complete events (ph "X") carry numeric ts and
dur >= 0 and integer pid/tid; every track is named (thread_name metadata); and slices on one
track nest properly (a slice starting inside another ends inside it), otherwise the importer
drops or truncates them. With --expect-overlap, some core must show a DMA transfer running
while its PT or SFP is busy (double-buffered staging made visible)."""

import json
import os
import subprocess
import sys
import tempfile


def main() -> int:
    bench, args = sys.argv[1], sys.argv[2:]
    expect_overlap = "--expect-overlap" in args
    args = [a for a in args if a != "--expect-overlap"]
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
        by_track = {}
        for e in slices:
            assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float)), e
            assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
            assert e["dur"] >= 0 and e["tid"] in tracks, e
            by_track.setdefault((e["pid"], e["tid"]), []).append(e)
        eps = 1e-6  # ts/dur are printed with 6 decimals (microseconds)
        for key, evs in by_track.items():
            evs.sort(key=lambda e: (e["ts"], -e["dur"]))
            stack = []
            for e in evs:
                while stack and e["ts"] >= stack[-1]["ts"] + stack[-1]["dur"] - eps:
                    stack.pop()
                if stack:
                    top = stack[-1]
                    assert e["ts"] + e["dur"] <= top["ts"] + top["dur"] + eps, \
                        f"track {tracks[key[1]]!r}: {e['name']!r} at {e['ts']} overlaps {top['name']!r} at {top['ts']}"
                stack.append(e)
        if expect_overlap:
            def busy(suffixes):
                out = {}
                for (pid, tid), evs in by_track.items():
                    name = tracks[tid]
                    for suf in suffixes:
                        if name.endswith(" " + suf):
                            out.setdefault(name[:len("core NN")], []).extend((e["ts"], e["ts"] + e["dur"]) for e in evs)
                return out
            dma, compute = busy(["DMA"]), busy(["PT", "SFP"])
            overlap = any(a0 < b1 - eps and b0 < a1 - eps
                          for core, ivs in dma.items() for (a0, a1) in ivs for (b0, b1) in compute.get(core, []))
            assert overlap, "no DMA transfer overlaps compute on any core"
    print(f"ok: {w['workload']}: {len(ev)} trace events on {len(tracks)} tracks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
