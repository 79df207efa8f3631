"""End-to-end benchmark: one transformer block (RMSNorm, multi-head attention, SwiGLU MLP) in
fp16 with torch.compile(backend="spyre") on the simulated card, against torch CPU eager and
torch.compile (inductor) on the CPU of the same host.

    .venv/bin/python bench/transformer_block.py [--seq 64] [--hidden 256] [--heads 4] [--ffn 1024]
                                                [--reps 20] [--json out.json]

Reports, per backend: cold compile (first call: dynamo trace + backend compile + run), warm host
wall time (median / min of --reps calls), the simulated device time of one call (sum over the
spyre partitions of compile_stats' simulated_us) and, for spyre, the CPU fallbacks (ops that
FallbackWarning reported, and nodes the partitioner left on the CPU). SPYRE_TRACE=file.json
records the simulated-time timeline of every spyre run (see docs/performance.md).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import time
import warnings

os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "1")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import torch_spyre  # noqa: E402,F401
from torch_spyre import FallbackWarning  # noqa: E402
from torch_spyre._compile import compile_stats  # noqa: E402
from torch_spyre._fallback import count_fallbacks  # noqa: E402


class RMSNorm(torch.nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + self.eps) * self.weight


class Block(torch.nn.Module):
    """Pre-norm block: x + attn(rmsnorm(x)); x + swiglu(rmsnorm(x)). No mask, no rotary."""

    def __init__(self, hidden: int, heads: int, ffn: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = RMSNorm(hidden), RMSNorm(hidden)
        self.wq = torch.nn.Linear(hidden, hidden, bias=False)
        self.wk = torch.nn.Linear(hidden, hidden, bias=False)
        self.wv = torch.nn.Linear(hidden, hidden, bias=False)
        self.wo = torch.nn.Linear(hidden, hidden, bias=False)
        self.gate = torch.nn.Linear(hidden, ffn, bias=False)
        self.up = torch.nn.Linear(hidden, ffn, bias=False)
        self.down = torch.nn.Linear(ffn, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: [seq, hidden]
        s, d = x.shape
        h = self.norm1(x)
        dh = d // self.heads
        q = self.wq(h).view(s, self.heads, dh).transpose(0, 1)  # [H, s, dh]
        k = self.wk(h).view(s, self.heads, dh).transpose(0, 1)
        v = self.wv(h).view(s, self.heads, dh).transpose(0, 1)
        att = torch.softmax((q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(dh)), dim=-1)
        o = (att @ v).transpose(0, 1).reshape(s, d)
        x = x + self.wo(o)
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


def flops(seq: int, hidden: int, heads: int, ffn: int) -> float:
    proj = 4 * 2 * seq * hidden * hidden
    attn = 2 * 2 * seq * seq * hidden
    mlp = 3 * 2 * seq * hidden * ffn
    return float(proj + attn + mlp)


def time_calls(fn, x, reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        y = fn(x)
        if y.device.type != "cpu":
            pass  # spyre runs synchronously; results stay on the device like a real card's
        out.append((time.perf_counter() - t0) * 1e3)
    return sorted(out)


def run_backend(name: str, model: torch.nn.Module, x: torch.Tensor, reps: int) -> dict:
    torch._dynamo.reset()
    r: dict = {"backend": name}
    try:
        if name == "cpu eager":
            fn = model
        elif name == "cpu inductor":
            fn = torch.compile(model, backend="inductor", dynamic=False)
        else:
            fn = torch.compile(model, backend="spyre", dynamic=False)
        hist0 = len(compile_stats.history)
        with warnings.catch_warnings(record=True) as caught, count_fallbacks() as fb:
            warnings.simplefilter("always", FallbackWarning)
            t0 = time.perf_counter()
            y = fn(x)
            r["cold_ms"] = (time.perf_counter() - t0) * 1e3
            graphs = compile_stats.history[hist0:]
            runs = time_calls(fn, x, reps)
        r["warm_median_ms"] = statistics.median(runs)
        r["warm_min_ms"] = runs[0]
        r["out"] = y.float().cpu()
        if name == "spyre":
            r["graphs"] = len(graphs)
            r["kernels"] = sum(len(g.listings()) for g in graphs)
            r["simulated_us"] = sum(g.simulated_us for g in graphs)
            r["frontend_ms"] = sum(g.frontend_ms for g in graphs)
            r["backend_ms"] = sum(g.backend_ms for g in graphs)
            r["jit_ms"] = sum(g.jit_ms for g in graphs)
            r["fallback_warnings"] = sorted({str(w.message).split("\n")[0] for w in caught
                                             if issubclass(w.category, FallbackWarning)})
            r["fallback_calls"] = dict(fb)
            r["partitions"] = compile_stats.partitions
            r["fallback_nodes"] = compile_stats.fallback_nodes
    except Exception as e:  # e.g. inductor without a working C++ toolchain
        r["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return r


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (default: torch's)")
    ap.add_argument("--json", help="also write the results here")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)

    torch.manual_seed(0)
    model = Block(a.hidden, a.heads, a.ffn).half().eval()
    x = torch.randn(a.seq, a.hidden, dtype=torch.float16)
    fl = flops(a.seq, a.hidden, a.heads, a.ffn)
    print(f"transformer block: seq {a.seq}, hidden {a.hidden}, heads {a.heads}, ffn {a.ffn}, fp16; "
          f"{fl / 1e6:.1f} MFLOP per call")
    print(f"host: {os.cpu_count()} CPU(s), {cpu_model()}; torch {torch.__version__}, "
          f"{torch.get_num_threads()} CPU thread(s); SENCORES={torch_spyre._C.sencores()}")

    results = []
    with torch.no_grad():
        for name in ("cpu eager", "cpu inductor", "spyre"):
            print(f"[bench] {name} ...", flush=True)
            if name == "spyre":
                import copy
                dev = copy.deepcopy(model).to("spyre")
                results.append(run_backend(name, dev, x.to("spyre"), a.reps))
            else:
                results.append(run_backend(name, model, x, a.reps))

    ref = results[0].get("out")
    print()
    print(f"{'backend':<14} {'cold ms':>10} {'warm ms (min)':>18} {'GFLOP/s':>9} {'vs eager':>9} "
          f"{'sim us':>9} {'max|err|':>9}")
    eager_ms = results[0].get("warm_median_ms")
    for r in results:
        if "error" in r:
            print(f"{r['backend']:<14} n/a ({r['error']})")
            continue
        err = (r["out"] - ref).abs().max().item() if ref is not None else float("nan")
        sim = f"{r['simulated_us']:.2f}" if "simulated_us" in r else "-"
        warm = f"{r['warm_median_ms']:.3f} ({r['warm_min_ms']:.3f})"
        print(f"{r['backend']:<14} {r['cold_ms']:>10.1f} {warm:>18} {fl / r['warm_median_ms'] / 1e6:>9.2f} "
              f"{r['warm_median_ms'] / eager_ms:>8.2f}x {sim:>9} {err:>9.4f}")
    sp = results[-1]
    if "error" not in sp:
        print(f"\nspyre: {sp['graphs']} compiled graph(s), {sp['kernels']} kernel(s); cold compile split "
              f"frontend {sp['frontend_ms']:.1f} / backend {sp['backend_ms']:.1f} / JIT {sp['jit_ms']:.1f} ms; "
              f"simulated device time {sp['simulated_us']:.2f} us = {fl / sp['simulated_us'] / 1e6:.3f} "
              f"TFLOP/s on the modelled card")
        print(f"spyre: partitions {sp['partitions']}, nodes left on the CPU by the partitioner "
              f"{sp['fallback_nodes']}; FallbackWarning(s) {len(sp['fallback_warnings'])}; "
              f"eager CPU fallback calls {sum(sp['fallback_calls'].values())} {sp['fallback_calls'] or ''}")
        for w in sp["fallback_warnings"]:
            print(f"  FallbackWarning: {w}")
    if a.json:
        for r in results:
            r.pop("out", None)
        with open(a.json, "w") as f:
            json.dump({"seq": a.seq, "hidden": a.hidden, "heads": a.heads, "ffn": a.ffn, "flops": fl,
                       "cpu": cpu_model(), "nproc": os.cpu_count(), "torch": torch.__version__,
                       "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
