"""The spyre-jit demo (README's first command): relu(a + b) * b on the simulated Spyre card.

Runs the walking-skeleton graph through torch.compile(backend="spyre") and through the default
backend, and prints the error against torch on the CPU, host wall time, JIT compile time and the
simulated device time from the timing model.
"""

from __future__ import annotations

import time

import torch

import torch_spyre  # noqa: F401  (also autoloaded by `import torch`)
from torch_spyre import _config
from torch_spyre._compile import compile_stats


def _fn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.relu(a + b) * b


def main() -> None:
    torch.manual_seed(0)
    x = torch.randn(67, 256, dtype=torch.float16)
    y = torch.randn(67, 256, dtype=torch.float16)
    ref = _fn(x, y)
    xs, ys = x.to("spyre"), y.to("spyre")

    print("spyre-jit demo: relu(a + b) * b, a, b: float16[67, 256]")
    print(f"  device: {torch._C._get_privateuse1_backend_name()}, SENCORES={torch_spyre._C.sencores()}, "
          f"engine={_config.engine()}")
    for label, compiled in (("backend='spyre'", torch.compile(_fn, backend="spyre")),
                            ("default backend", torch.compile(_fn))):
        t0 = time.perf_counter()
        out = compiled(xs, ys).cpu()
        first = time.perf_counter() - t0
        cg = compile_stats.last
        runs = []
        for _ in range(20):
            t0 = time.perf_counter()
            compiled(xs, ys)
            runs.append(time.perf_counter() - t0)
        runs.sort()
        err = (out.float() - ref.float()).abs().max().item()
        torch.testing.assert_close(out, ref, atol=0.1, rtol=0.1)
        print(f"\n[{label}]")
        print(f"  max |spyre - cpu|          {err:.6f}  (atol = rtol = 0.1: ok)")
        print(f"  first call (trace+compile) {first * 1e3:9.2f} ms")
        print(f"  frontend / backend / JIT   {cg.frontend_ms:9.2f} / {cg.backend_ms:.2f} / {cg.jit_ms:.2f} ms "
              f"({len(cg.listings())} kernels)")
        print(f"  warm call, host wall time  {runs[len(runs) // 2] * 1e3:9.3f} ms (median of {len(runs)})")
        print(f"  simulator run (kernels)    {cg.last_run_ms:9.3f} ms")
        print(f"  simulated device time      {cg.simulated_us:9.2f} us")
    print("\nper-kernel timing (last graph):")
    for t in compile_stats.last.timings():
        print("  " + t.replace("\n", "\n  ").rstrip())
    print("\nISA listing of the first kernel:")
    print(compile_stats.last.listings()[0])
    if _config.dump_root():
        print(f"every stage was written under {_config.dump_root()}")
    else:
        print("set SPYRE_DUMP_DIR=dir to write graph text, SuperDSC, listings and LLVM IR of each graph")


if __name__ == "__main__":
    main()
