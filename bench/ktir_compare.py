"""ktir-cpu against torch_spyre on ktir-cpu's own example kernels, one host thread each side.

ktir-cpu (torch-spyre/ktir-cpu) is a Python interpreter for KTIR MLIR kernels. For each of its
example kernels this script runs the kernel through ktir-cpu's public API
(``KTIRInterpreter().load(path)`` then ``execute_function(name, **arrays)``) and the same
computation on the same shapes and data through torch_spyre (``torch.compile`` of the torch
expression on ``spyre`` tensors, SPYRE_STRICT=1 so every op runs on the simulated card), checks
both outputs against torch on the CPU in fp32, and prints the wall time of each side and the
ratio ktir-cpu / ours per kernel and as a geometric mean.

    .venv/bin/python bench/ktir_compare.py KTIR_CPU_DIR [--kernels vector_add,matmul,...]
        [--reps 5] [--budget 60] [--ktir-commit SHA] [--bench PATH] [--json out.json]

KTIR_CPU_DIR is a ktir-cpu checkout (its ``ktir_cpu/`` package and ``examples/``); without one
the script says so and exits with status 2. Times are per kernel call, compile and parse
excluded: ktir-cpu's ``execute_function`` (its simulated HBM is filled from the arguments and
read back inside the call) against one call of the compiled function on tensors already on the
card (median of --reps; ktir-cpu's repetitions are capped so that they take about --budget
seconds). One thread: OMP/OpenBLAS/MKL threads, torch's intra-op threads and the simulator's
host threads (SPYRE_SIM_THREADS) are all set to 1 before anything is imported.

Where spyre-jit-bench has the same graph (a named workload or --op; --bench, default
build/bin/spyre-jit-bench), a second column gives its JIT median with --threads 1: the kernels
alone, without torch_spyre's per-call Python, dispatch and allocation.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from timing import timed  # bench/timing.py (scripts run as bench/<name>.py)

_ONE_THREAD = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "SPYRE_SIM_THREADS")


@dataclass
class Case:
    """One kernel's inputs: the keyword arguments of ktir-cpu's ``execute_function`` (arrays
    and scalars, in the kernel's signature order), which of them is the output, and the same
    computation as a torch function of ``torch_args`` (numpy arrays)."""

    ktir_args: dict[str, Any]
    out: str
    fn: Callable[..., Any]
    torch_args: list[Any]


@dataclass
class Kernel:
    name: str
    mlir: str  # relative to the ktir-cpu checkout
    func: str
    shape: str
    make: Callable[[Any], Case]
    kind: str = "other"  # "matmul" for the matmul subset of the table
    bench: list[str] = field(default_factory=list)  # spyre-jit-bench args of the same graph, if any


# --- the kernels: inputs as each example's comments and signature describe them ---------------


def _f16(rng, *shape, scale=1.0):
    import numpy as np

    return (rng.standard_normal(shape) * scale).astype(np.float16)


def _zeros(*shape):
    import numpy as np

    return np.zeros(shape, np.float16)


def _vector_add(rng):
    x, y = _f16(rng, 4096), _f16(rng, 4096)
    return Case(dict(x_ptr=x, y_ptr=y, output_ptr=_zeros(4096), BLOCK_SIZE=128), "output_ptr",
                lambda x, y: x + y, [x, y])


def _softmax(rows, cols, extra):
    def make(rng):
        import torch

        x = _f16(rng, rows, cols)
        return Case(dict(output_ptr=_zeros(rows, cols), input_ptr=x, **extra), "output_ptr",
                    lambda x: torch.softmax(x, -1), [x])
    return make


def _layernorm(rng):
    import numpy as np
    import torch

    r, c = 1151, 8192
    x, w, b = _f16(rng, r, c), _f16(rng, r, c), _f16(rng, r, c)

    def fn(x, w, b):
        d = x - x.mean(-1, keepdim=True)
        return d * torch.rsqrt((d * d).mean(-1, keepdim=True) + 1e-5) * w + b
    args = dict(X=x, Y=_zeros(r, c), W=w, B=b, Mean=_zeros(r), Rstd=_zeros(r), N=c, eps=np.float16(1e-5),
                BLOCK_SIZE=1024)
    return Case(args, "Y", fn, [x, w, b])


def _matmul(m, k, n, bm, bn, bk):
    def make(rng):
        a, b = _f16(rng, m, k, scale=k ** -0.5), _f16(rng, k, n)
        return Case(dict(a_ptr=a, b_ptr=b, c_ptr=_zeros(m, n), K=k, BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn,
                         BLOCK_SIZE_K=bk), "c_ptr", lambda a, b: a @ b, [a, b])
    return make


def _reduce_generic(rng):
    import torch

    x = _f16(rng, 1, 4)
    return Case(dict(arg0=x), "arg0", lambda x: torch.zeros_like(x) + x.sum(-1, keepdim=True), [x])


def _sdpa(rng):
    import torch

    q, k, v = _f16(rng, 32, 64), _f16(rng, 32, 64), _f16(rng, 32, 64)
    return Case(dict(q_ptr=q, k_ptr=k, v_ptr=v, output_ptr=_zeros(32, 64)), "output_ptr",
                lambda q, k, v: torch.softmax(q @ k.transpose(0, 1) * 0.125, -1) @ v, [q, k, v])


def _indexed_add(rng):
    import numpy as np

    x, y = _f16(rng, 128, 64, 8, 128), _f16(rng, 2, 32, 8, 128)
    idx = rng.choice(128, size=2, replace=False).astype(np.int64)
    # the kernel's grid [2, 8] covers out[g0, dim1_start:dim1_start+32, g1, :] for all g0, g1:
    # with dim1_start 0 that is all of out = x[idx, 0:32] + y
    return Case(dict(x_ptr=x, y_ptr=y, index_ptr=idx, output_ptr=_zeros(2, 32, 8, 128), dim1_start=0),
                "output_ptr", lambda x, y, i: x[i][:, 0:32] + y, [x, y, idx.astype(np.int32)])


def _paged_attention(rng):
    import numpy as np
    import torch

    toks, heads, kvh, d, nb, bs, tiles, ctx = 8, 32, 8, 128, 64, 16, 8, 120
    q, kc, vc = _f16(rng, toks, heads, d), _f16(rng, nb, bs, kvh, d), _f16(rng, nb, bs, kvh, d)
    table = rng.permutation(nb)[:16].astype(np.int32).reshape(1, 16)
    scale = 1.0 / math.sqrt(d)

    def fn(q, kc, vc, blocks):  # blocks: the first `tiles` entries of the block table
        k = kc[blocks].reshape(tiles * bs, kvh, d).transpose(0, 1).repeat_interleave(heads // kvh, 0)
        v = vc[blocks].reshape(tiles * bs, kvh, d).transpose(0, 1).repeat_interleave(heads // kvh, 0)
        s = (q.transpose(0, 1) @ k.transpose(1, 2)) * scale  # [heads, toks, keys]
        pos = torch.arange(tiles * bs, device=q.device, dtype=torch.int32)
        tok = torch.arange(toks, device=q.device, dtype=torch.int32)
        causal = pos[None, :] <= tok[:, None] + ctx  # key position <= context_len + token
        s = s.masked_fill(~causal[None], float("-inf"))
        return (torch.softmax(s, -1) @ v).transpose(0, 1)
    args = dict(output_ptr=_zeros(toks, heads, d), query_ptr=q, key_cache_ptr=kc, value_cache_ptr=vc,
                block_tables_ptr=table, cur_batch_start_index=0, block_table_offset=0, num_tiles=tiles,
                context_len=ctx, scale=np.float32(scale))
    return Case(args, "output_ptr", fn, [q, kc, vc, table[0, :tiles].copy()])


KERNELS = [
    Kernel("vector_add", "examples/triton-ktir/vector_add_ktir.mlir", "add_kernel", "4096", _vector_add,
           bench=["--workload", "vector_add_4096"]),
    Kernel("softmax", "examples/triton-ktir/softmax_fwd_ktir.mlir", "softmax_kernel", "4096x1024",
           _softmax(4096, 1024, dict(n_rows=4096)), bench=["--workload", "softmax_4096x1024"]),
    Kernel("layernorm", "examples/triton-ktir/layernorm_fwd_ktir.mlir", "_layer_norm_fwd_fused", "1151x8192",
           _layernorm),
    Kernel("matmul", "examples/triton-ktir/matmul_fwd_ktir.mlir", "matmul_kernel", "64x2048x8192",
           _matmul(64, 2048, 8192, 32, 512, 128), kind="matmul", bench=["--workload", "matmul_64x2048x8192"]),
    Kernel("sdpa_2d", "examples/triton-ktir/sdpa_2d.mlir", "sdpa_kernel_2d", "32x64", _sdpa, kind="matmul"),
    Kernel("indexed_add", "examples/triton-ktir/indexed_add.mlir", "indexed_add_kernel", "2x32x8x128",
           _indexed_add),
    Kernel("paged_attention", "examples/triton-ktir/paged_attention.mlir", "kernel_unified_attention_spyre_2d",
           "8x32x128, 128 keys", _paged_attention, kind="matmul"),
    Kernel("softmax_wide", "examples/ktir/softmax_wide.mlir", "softmax_kernel", "2x262144", _softmax(2, 262144, {})),
    Kernel("reduce_generic", "examples/ktir/reduce_generic.mlir", "reduce_explicit_region", "1x4", _reduce_generic),
    Kernel("softmax_small", "examples/latency/softmax_small.mlir", "softmax_kernel_small", "64x64",
           _softmax(64, 64, dict(n_rows=64))),
    Kernel("matmul_small", "examples/latency/matmul_small.mlir", "matmul_kernel_small", "16x64x64",
           _matmul(16, 64, 64, 8, 32, 32), kind="matmul", bench=["--op", "matmul", "--shape", "16x64x64"]),
]


# --- the two sides -----------------------------------------------------------------------------


def _error(got, ref) -> tuple[float, bool]:
    """Max abs error against the fp32 reference, and whether it is within atol=rtol=0.1."""
    import torch

    got = torch.as_tensor(got).float()
    return float((got - ref).abs().max()), bool(torch.allclose(got, ref, atol=0.1, rtol=0.1))


def run_ktir(root: Path, k: Kernel, case: Case, reps: int, budget_s: float) -> dict:
    from ktir_cpu import KTIRInterpreter

    interp = KTIRInterpreter()
    t0 = time.perf_counter()
    interp.load(str(root / k.mlir))
    parse_ms = (time.perf_counter() - t0) * 1e3
    call = lambda: interp.execute_function(k.func, **case.ktir_args)  # noqa: E731
    t0 = time.perf_counter()
    out = call()[case.out]
    first = (time.perf_counter() - t0) * 1e3
    more = max(0, min(reps - 1, int(budget_s * 1e3 / max(first, 1e-3)) - 1))
    times = [first] + timed(call, more)
    return dict(ms=statistics.median(times), min_ms=min(times), reps=len(times), parse_ms=parse_ms, out=out)


def run_ours(case: Case, reps: int) -> dict:
    import torch

    dev = [torch.from_numpy(a).to("spyre") for a in case.torch_args]
    torch._dynamo.reset()
    f = torch.compile(case.fn, dynamic=False)
    t0 = time.perf_counter()
    out = f(*dev)
    first = (time.perf_counter() - t0) * 1e3
    f(*dev)  # warm
    times = timed(lambda: f(*dev), reps)
    return dict(ms=statistics.median(times), min_ms=min(times), reps=reps, first_ms=first, out=out.cpu())


def run_bench(bench: Path, k: Kernel, reps: int) -> dict:
    """The same graph's kernels alone (no Python, no torch): spyre-jit-bench's JIT median."""
    cmd = [str(bench), *k.bench, "--threads", "1", "--engine", "jit", "--native", "off", "--compile-reps", "0",
           "--reps", str(max(reps, 5)), "--json"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {res.stderr.strip().splitlines()[-1:]}")
    jit = json.loads(res.stdout)[0]["jit"]
    return dict(ms=jit["median_ms"], min_ms=jit["min_ms"], reps=jit["reps"])


def measure(root: Path, k: Kernel, reps: int, budget_s: float, seed: int, bench: Path | None) -> dict:
    import numpy as np
    import torch

    case = k.make(np.random.default_rng(seed))
    ref = case.fn(*[torch.from_numpy(a).float() if a.dtype == np.float16 else torch.from_numpy(a)
                    for a in case.torch_args])
    row: dict[str, Any] = dict(kernel=k.name, shape=k.shape, kind=k.kind, mlir=k.mlir)
    sides = (("ktir", lambda: run_ktir(root, k, case, reps, budget_s)), ("ours", lambda: run_ours(case, reps)))
    for side, run in sides:
        try:
            r = run()
        except Exception as e:  # a side that cannot run the kernel: say why, keep the other
            row[side] = dict(error=f"{type(e).__name__}: {e}".splitlines()[0][:200])
            continue
        r["max_err"], r["ok"] = _error(r.pop("out"), ref)
        row[side] = r
    if "ms" in row["ktir"] and "ms" in row["ours"]:
        row["ratio"] = row["ktir"]["ms"] / row["ours"]["ms"]
    if bench is not None and k.bench:
        try:
            row["bench"] = run_bench(bench, k, reps)
            if "ms" in row["ktir"]:
                row["bench_ratio"] = row["ktir"]["ms"] / row["bench"]["ms"]
        except (OSError, RuntimeError, ValueError, KeyError) as e:
            row["bench"] = dict(error=str(e)[:200])
    return row


# --- report ------------------------------------------------------------------------------------


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def _cell(side: dict) -> tuple[str, str]:
    if "error" in side:
        return "error", side["error"]
    return f"{side['ms']:.4g}", f"{side['max_err']:.3g}{'' if side['ok'] else ' (!)'}"


def report(rows: list[dict], commit: str) -> str:
    lines = [f"ktir-cpu {commit} vs torch_spyre, 1 host thread each; ms per call (median)",
             "| kernel | shape | ktir-cpu ms | ours ms | ktir-cpu / ours | ktir-cpu max err | ours max err "
             "| kernels only ms (spyre-jit-bench) | ktir-cpu / kernels only |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        (km, ke), (om, oe) = _cell(r["ktir"]), _cell(r["ours"])
        ratio = f"{r['ratio']:.3g}x" if "ratio" in r else "-"
        b = r.get("bench", {})
        bm = f"{b['ms']:.4g}" if "ms" in b else b.get("error", "-")
        br = f"{r['bench_ratio']:.3g}x" if "bench_ratio" in r else "-"
        lines.append(f"| {r['kernel']} | {r['shape']} | {km} | {om} | {ratio} | {ke} | {oe} | {bm} | {br} |")
    for key, what in (("ratio", "torch_spyre calls"), ("bench_ratio", "kernels only")):
        ratios = [r[key] for r in rows if key in r]
        mm = [r[key] for r in rows if key in r and r["kind"] == "matmul"]
        g = lambda xs: f"{_geomean(xs):.3g}x" if xs else "-"  # noqa: E731
        lines.append(f"ktir-cpu / {what}: geomean over {len(ratios)} kernels {g(ratios)}, matmul kernels ({len(mm)}) {g(mm)}")
    lines.append("Errors: max abs vs torch CPU fp32; (!) = outside atol=rtol=0.1.")
    return "\n".join(lines)


def _commit_of(root: Path) -> str:
    try:
        return subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], check=True, capture_output=True,
                              text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "(commit unknown: not a git checkout; pass --ktir-commit)"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("ktir_cpu_dir", help="a ktir-cpu checkout (its ktir_cpu/ package and examples/)")
    p.add_argument("--kernels", default="all",
                   help="comma-separated names, or all: " + ",".join(k.name for k in KERNELS))
    p.add_argument("--reps", type=int, default=5, help="timed calls per side (ktir-cpu: capped by --budget)")
    p.add_argument("--budget", type=float, default=60.0, help="seconds of ktir-cpu repetitions per kernel")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ktir-commit", help="the checkout's commit, when it is not a git checkout")
    p.add_argument("--bench", default=str(Path(__file__).resolve().parents[1] / "build" / "bin" / "spyre-jit-bench"),
                   help="spyre-jit-bench for the kernels-only column (skipped when absent)")
    p.add_argument("--json", help="also write the rows here")
    a = p.parse_args(argv)

    root = Path(a.ktir_cpu_dir).resolve()
    if not (root / "ktir_cpu" / "__init__.py").is_file() or not (root / "examples").is_dir():
        print(f"ktir_compare: no ktir-cpu checkout at {root} (expected {root}/ktir_cpu/__init__.py and "
              f"{root}/examples/); get one with: git clone https://github.com/torch-spyre/ktir-cpu", file=sys.stderr)
        return 2
    names = [k.name for k in KERNELS] if a.kernels == "all" else a.kernels.split(",")
    unknown = sorted(set(names) - {k.name for k in KERNELS})
    if unknown:
        print(f"ktir_compare: unknown kernel(s) {', '.join(unknown)}; known: {', '.join(k.name for k in KERNELS)}",
              file=sys.stderr)
        return 2

    for var in _ONE_THREAD:  # before numpy, torch and the simulator are loaded
        os.environ[var] = "1"
    os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "1")
    os.environ["SPYRE_STRICT"] = "1"
    sys.path.insert(0, str(root))
    import torch

    import torch_spyre  # noqa: F401

    torch.set_num_threads(1)
    commit = a.ktir_commit or _commit_of(root)
    bench = Path(a.bench) if Path(a.bench).is_file() else None
    rows = []
    for k in KERNELS:
        if k.name in names:
            print(f"[ktir_compare] {k.name} ({k.shape})", file=sys.stderr, flush=True)
            rows.append(measure(root, k, a.reps, a.budget, a.seed, bench))
    print(report(rows, commit))
    if a.json:
        Path(a.json).write_text(json.dumps(dict(ktir_commit=commit, rows=rows), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
