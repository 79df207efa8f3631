"""Stock Hugging Face models on the simulated card: one forward of each small model of
``torch_spyre.testing_models`` (transformers' config classes, 2 layers, hidden 256, seq 64,
random weights), fp16, compiled with ``torch.compile`` (the spyre route) in strict mode
(SPYRE_STRICT=1: every op on the card), against the same model in fp32 eager on the CPU.

    .venv/bin/python bench/hf_models.py [--models llama,gpt2,...] [--reps 10] [--json out.json]

Per model: partitions of the compiled graph, kernels launched and their simulated device time
per forward (``_C.run_totals()``), host time of the first call (trace + compile + run; with
SPYRE_JIT_OPT=tiered also the wait for the background O2 compiles after it, "+N") and of a
warm call (median and minimum of --reps), CPU fp32 eager time (median of --reps) and the ratio
warm / CPU (issue 19's goal: <= 1.5x), and the error against fp32 (relative max error of the
logits or last hidden state, and argmax agreement of the logits). MoE routers are scaled by 10
as in tests/python/test_models.py (fp16 cannot order near-tied expert logits as fp32 does).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import warnings

os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "1")

import torch  # noqa: E402

import torch_spyre  # noqa: E402,F401
from torch_spyre import _C, _compile  # noqa: E402
from torch_spyre.testing_models import MODELS, scale_routers  # noqa: E402

from timing import timed  # noqa: E402  (bench/timing.py: scripts run as bench/<name>.py)


def measure(name: str, reps: int) -> dict:
    spec = MODELS[name]
    torch.manual_seed(0)
    model = spec.build()
    if spec.kind == "moe":
        scale_routers(model)
    inputs = spec.example()
    with torch.no_grad():
        ref = spec.output(model(**inputs)).float()
        cpu_ms = timed(lambda: model(**inputs), reps)

    m = model.half().to("spyre")
    torch._dynamo.reset()
    compiled = torch.compile(m, dynamic=False)
    prev = os.environ.get("SPYRE_STRICT")
    os.environ["SPYRE_STRICT"] = "1"
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the int64 -> int32 downcast notice
            dev_inputs = {k: (v.half() if v.is_floating_point() else v).to("spyre") for k, v in inputs.items()}
            t0 = time.perf_counter()
            got = spec.output(compiled(**dev_inputs)).cpu()
            first_ms = (time.perf_counter() - t0) * 1e3
            partitions = _compile.compile_stats.partitions
            t0 = time.perf_counter()
            _C.jit_wait_tier_up()  # SPYRE_JIT_OPT=tiered: the background O2 compiles
            tier_up_ms = (time.perf_counter() - t0) * 1e3
            k0, us0 = _C.run_totals()
            spec.output(compiled(**dev_inputs)).cpu()
            k1, us1 = _C.run_totals()
            warm = timed(lambda: spec.output(compiled(**dev_inputs)).cpu(), reps)
    finally:
        if prev is None:
            os.environ.pop("SPYRE_STRICT")
        else:
            os.environ["SPYRE_STRICT"] = prev
    r = {
        "model": name,
        "kind": spec.kind,
        "partitions": partitions,
        "kernels": k1 - k0,
        "simulated_us": us1 - us0,
        "first_call_ms": first_ms,
        "tier_up_wait_ms": tier_up_ms,
        "warm_ms_median": statistics.median(warm),
        "warm_ms_min": min(warm),
        "cpu_fp32_ms_median": statistics.median(cpu_ms),
        "rel_max_error": ((got.float() - ref).abs().max() / ref.abs().max()).item(),
    }
    r["warm_over_cpu"] = r["warm_ms_median"] / r["cpu_fp32_ms_median"]
    if spec.output_attr == "logits":
        r["argmax_agreement"] = (got.argmax(-1) == ref.argmax(-1)).float().mean().item()
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="all", help="comma separated names of testing_models.MODELS, or all")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--json", help="also write the results here")
    a = ap.parse_args()
    names = list(MODELS) if a.models == "all" else a.models.split(",")
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        ap.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")
    print(f"stock HF models, 2 layers, hidden 256, seq 64; fp16 strict on spyre (SENCORES={_C.sencores()}, "
          f"{torch.get_num_threads()} host threads) vs fp32 CPU eager; --reps {a.reps}")
    print("| model | partitions | kernels | simulated µs | first call ms | warm ms (median / min) | CPU fp32 ms "
          "| warm / CPU | rel. max error | argmax |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = []
    for n in names:
        r = measure(n, a.reps)
        rows.append(r)
        arg = f"{100 * r['argmax_agreement']:.1f} %" if "argmax_agreement" in r else "–"
        # SPYRE_JIT_OPT=tiered: "+N" is the wait for the background O2 compiles after the first call
        first = f"{r['first_call_ms']:.0f}" + (f" (+{r['tier_up_wait_ms']:.0f})" if r["tier_up_wait_ms"] >= 1 else "")
        print(f"| {n} | {r['partitions']} | {r['kernels']} | {r['simulated_us']:.1f} | {first} | "
              f"{r['warm_ms_median']:.1f} / {r['warm_ms_min']:.1f} | {r['cpu_fp32_ms_median']:.1f} | "
              f"{r['warm_over_cpu']:.2f}× | {100 * r['rel_max_error']:.2f} % | {arg} |", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
