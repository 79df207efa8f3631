"""Tensor-parallel Llama-style decoder on simulated Spyre cards: one card per rank, collectives
through the c10d backend "spyre" (docs/user-guide.md, "Several cards").

    torchrun --nproc-per-node 2 bench/tp_decoder.py [--seq 32] [--hidden 256] [--heads 8]
                                                    [--ffn 512] [--layers 2] [--json out.json]
    .venv/bin/python bench/tp_decoder.py            # TP = 1 (one card, no process group)

Each layer is pre-norm: ``x + o_proj(attn(rmsnorm(x)))`` and ``x + down(silu(gate(h)) * up(h))``
with causal attention. Tensor parallelism follows Megatron/Llama: q, k, v, gate and up are
column-parallel (each rank holds heads/TP attention heads and ffn/TP MLP columns), o_proj and
down are row-parallel, and an all_reduce (``_functional_collectives.all_reduce``, inside the
compiled graph) sums their partial outputs. Every rank builds the full fp16 weights from the
same seed and keeps its shard.

Rank 0 also runs the whole model on its own card (TP = 1, compiled the same way) and on the
CPU in fp32, and reports the largest element error of the TP output against both, the
simulated device time of one step (the compiled partitions' kernels plus the modelled
collectives, ``torch_spyre._distributed.collective_stats``), the partitions, the nodes left on
the CPU and the graph breaks. The run fails (exit status 1) if the TP output differs from the
single-card output by more than atol = rtol = 0.1 or if any rank's output differs from rank
0's.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.distributed._functional_collectives as funcol  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import torch_spyre  # noqa: E402,F401
from torch_spyre import _distributed  # noqa: E402
from torch_spyre._compile import compile_stats  # noqa: E402


def full_weights(hidden: int, heads: int, ffn: int, layers: int, seed: int = 0) -> list[dict]:
    """The unsharded fp16 weights of every layer ([out, in], as nn.Linear holds them)."""
    g = torch.Generator().manual_seed(seed)

    def w(out: int, inp: int) -> torch.Tensor:
        return (torch.randn(out, inp, generator=g) / math.sqrt(inp)).half()

    return [{"q": w(hidden, hidden), "k": w(hidden, hidden), "v": w(hidden, hidden), "o": w(hidden, hidden),
             "gate": w(ffn, hidden), "up": w(ffn, hidden), "down": w(hidden, ffn),
             "n1": (1 + 0.1 * torch.randn(hidden, generator=g)).half(),
             "n2": (1 + 0.1 * torch.randn(hidden, generator=g)).half()} for _ in range(layers)]


def shard(full: dict, rank: int, tp: int) -> dict:
    """Rank ``rank``'s part: rows of the column-parallel weights, columns of the row-parallel."""
    def rows(t: torch.Tensor) -> torch.Tensor:
        return t.chunk(tp, 0)[rank].contiguous()

    def cols(t: torch.Tensor) -> torch.Tensor:
        return t.chunk(tp, 1)[rank].contiguous()

    return {"q": rows(full["q"]), "k": rows(full["k"]), "v": rows(full["v"]), "o": cols(full["o"]),
            "gate": rows(full["gate"]), "up": rows(full["up"]), "down": cols(full["down"]),
            "n1": full["n1"], "n2": full["n2"]}


class Decoder(torch.nn.Module):
    """The decoder layers of one rank. ``group`` None: the whole model on one card."""

    def __init__(self, weights: list[dict], heads: int, group: object = None) -> None:
        super().__init__()
        self.dh = weights[0]["q"].shape[1] // heads  # the head size (hidden / heads)
        self.local_heads = weights[0]["q"].shape[0] // self.dh
        self.group = group
        self.layers = torch.nn.ParameterList()
        self.names = list(weights[0])
        for layer in weights:
            for name in self.names:
                self.layers.append(torch.nn.Parameter(layer[name], requires_grad=False))

    def _reduce(self, y: torch.Tensor) -> torch.Tensor:
        return y if self.group is None else funcol.all_reduce(y, "sum", self.group)

    @staticmethod
    def _rmsnorm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: [seq, hidden]
        s = x.shape[0]
        per = len(self.names)
        for i in range(len(self.layers) // per):
            p = dict(zip(self.names, self.layers[i * per:(i + 1) * per]))
            h = self._rmsnorm(x, p["n1"])
            dh = self.dh
            q = F.linear(h, p["q"]).view(s, self.local_heads, dh).transpose(0, 1)
            k = F.linear(h, p["k"]).view(s, self.local_heads, dh).transpose(0, 1)
            v = F.linear(h, p["v"]).view(s, self.local_heads, dh).transpose(0, 1)
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            o = o.transpose(0, 1).reshape(s, self.local_heads * dh)
            x = x + self._reduce(F.linear(o, p["o"]))
            h = self._rmsnorm(x, p["n2"])
            x = x + self._reduce(F.linear(F.silu(F.linear(h, p["gate"])) * F.linear(h, p["up"]), p["down"]))
        return x


def run_compiled(model: torch.nn.Module, x: torch.Tensor, reps: int) -> dict:
    """Compiles and runs ``model`` on the card; the first call compiles, the others measure."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()  # the single-card model must compile afresh, not hit the TP one's cache
    counters.clear()
    fn = torch.compile(model, backend="spyre", dynamic=False)
    hist0 = len(compile_stats.history)
    t0 = time.perf_counter()
    y = fn(x)
    cold_ms = (time.perf_counter() - t0) * 1e3
    graphs = compile_stats.history[hist0:]
    partitions, fallback_nodes = compile_stats.partitions, compile_stats.fallback_nodes
    _distributed.collective_stats.reset()
    t0 = time.perf_counter()
    for _ in range(reps):
        y = fn(x)
    warm_ms = (time.perf_counter() - t0) * 1e3 / reps
    coll = _distributed.collective_stats.snapshot()
    kernels_us = sum(g.simulated_us for g in graphs)
    link_us = coll["simulated_us"] / reps
    return {"out": y.cpu().float(), "cold_ms": cold_ms, "warm_ms": warm_ms, "graphs": len(graphs),
            "partitions": partitions, "fallback_nodes": fallback_nodes,
            "graph_breaks": sum(counters["graph_break"].values()), "kernels_us": kernels_us,
            "collectives": coll["calls"] // reps, "collective_bytes": coll["bytes"] // reps,
            "link_us": link_us, "step_us": kernels_us + link_us}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--ffn", type=int, default=512)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", help="rank 0 writes its results here")
    a = ap.parse_args()

    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if a.heads % world or a.ffn % world:
        raise SystemExit(f"heads ({a.heads}) and ffn ({a.ffn}) must divide by the TP degree {world}")
    group = None
    if world > 1:
        dist.init_process_group("cpu:gloo,spyre:spyre")
        group = dist.group.WORLD
    weights = full_weights(a.hidden, a.heads, a.ffn, a.layers)
    x = (torch.randn(a.seq, a.hidden, generator=torch.Generator().manual_seed(1))).half()
    with torch.no_grad():
        tp = Decoder([shard(w, rank, world) for w in weights], a.heads, group).to("spyre")
        res = run_compiled(tp, x.to("spyre"), a.reps)
        ok = True
        if world > 1:
            outs = [torch.empty_like(res["out"]) for _ in range(world)]
            dist.all_gather(outs, res["out"])
            same = all(torch.equal(o, outs[0]) for o in outs)
            ok &= same
        if rank == 0:
            single = run_compiled(Decoder(weights, a.heads).to("spyre"), x.to("spyre"), a.reps)
            cpu = Decoder([{k: v.float() for k, v in w.items()} for w in weights], a.heads)(x.float())
            err_single = (res["out"] - single["out"]).abs().max().item()
            err_cpu = (res["out"] - cpu).abs().max().item()
            close = torch.allclose(res["out"], single["out"], atol=0.1, rtol=0.1)
            ok &= close
            print(f"TP={world}: seq {a.seq}, hidden {a.hidden}, heads {a.heads}, ffn {a.ffn}, "
                  f"{a.layers} layer(s), fp16")
            print(f"  max |TP - single card| = {err_single:.4f} (allclose atol=rtol=0.1: {close}); "
                  f"max |TP - CPU fp32| = {err_cpu:.4f}; single card vs CPU fp32: "
                  f"{(single['out'] - cpu).abs().max().item():.4f}")
            if world > 1:
                print(f"  every rank's output equals rank 0's: {same}")
            for name, r in (("TP", res), ("single", single)):
                print(f"  {name:<6}: {r['graphs']} compiled partition graph(s), partitions {r['partitions']}, "
                      f"nodes on the CPU {r['fallback_nodes']}, graph breaks {r['graph_breaks']}, "
                      f"{r['collectives']} collective(s)/step ({r['collective_bytes']} B)")
                print(f"          simulated step {r['step_us']:.2f} us = kernels {r['kernels_us']:.2f} + "
                      f"link {r['link_us']:.2f}; host wall: cold {r['cold_ms']:.0f} ms, warm {r['warm_ms']:.1f} ms")
            if a.json:
                with open(a.json, "w") as f:
                    json.dump({"tp": world, "args": vars(a), "err_vs_single": err_single, "err_vs_cpu": err_cpu,
                               "tp_run": {k: v for k, v in res.items() if k != "out"},
                               "single_run": {k: v for k, v in single.items() if k != "out"}}, f, indent=1)
    if world > 1:
        flag = torch.tensor([0 if ok else 1])
        dist.all_reduce(flag)
        ok = flag.item() == 0
        dist.destroy_process_group()
    if not ok:
        print(f"rank {rank}: FAILED", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
