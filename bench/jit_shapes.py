"""JIT compile time of new shapes of known kernels: eager ops on the simulated card, each at
several shapes in one process, with the JIT's per-prepare thread CPU time (SPYRE_JIT_TIMES).

    SPYRE_CACHE_DIR=off .venv/bin/python bench/jit_shapes.py [--ops relu,exp,add,softmax,layernorm]

The first shape of an op compiles its loop nests; with shape-generic nests (the default,
SPYRE_JIT_GENERIC_NESTS=0 turns them off) later shapes find them in the code cache and compile
only their phase functions (docs/performance.md, Log 2026-12-03 h-cgen). Each result is checked
against torch CPU (atol = rtol = 0.1 of the output's magnitude).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys

OPS = {
    "relu": "torch.relu(x)",
    "exp": "torch.exp(x)",
    "add": "x + x",
    "softmax": "torch.softmax(x, -1)",
    "layernorm": "torch.nn.functional.layer_norm(x, x.shape[-1:])",
}
SHAPES = [(4096, 1024), (2048, 512), (1024, 2048), (1000, 300)]

CHILD = r"""
import sys, torch, torch_spyre
for name, expr in [a.split("=", 1) for a in sys.argv[1:]]:
    for shape in SHAPES:
        x = torch.randn(*shape, dtype=torch.float16)
        print(f"## {name} {shape[0]}x{shape[1]}", file=sys.stderr, flush=True)
        y = eval(expr, {"torch": torch, "x": x.to("spyre")}).cpu().float()
        ref = eval(expr, {"torch": torch, "x": x.float()})
        err = (y - ref).abs().max().item()
        assert err <= 0.1 + 0.1 * ref.abs().max().item(), (name, shape, err)
        print(f"## done", file=sys.stderr, flush=True)
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", default=",".join(OPS))
    args = ap.parse_args()
    env = dict(os.environ, SPYRE_JIT_TIMES="1")
    env.setdefault("SPYRE_CACHE_DIR", "off")
    code = f"SHAPES = {SHAPES!r}\n" + CHILD
    ops = [f"{o}={OPS[o]}" for o in args.ops.split(",")]
    p = subprocess.run([sys.executable, "-c", code, *ops], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        return p.returncode
    print("| op | shape | prepares | JIT thread CPU ms |")
    print("|---|---|---:|---:|")
    cur, cpu, n = None, 0.0, 0
    for line in p.stderr.splitlines():
        if line.startswith("## done"):
            print(f"| {cur[0]} | {cur[1]} | {n} | {cpu:.1f} |")
        elif line.startswith("## "):
            cur, cpu, n = line[3:].split(), 0.0, 0
        elif m := re.search(r" (?:miss|hit) .*\(cpu ([\d.]+)\)", line):
            cpu += float(m.group(1))
            n += 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
