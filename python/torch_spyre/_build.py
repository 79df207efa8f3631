"""Graph IR text -> ``_C.CompiledGraph``, shared by compiled graphs (``_compile``) and eager ops
(``_eager``): the SPYRE_DUMP_DIR dump, the SPYRE_DEBUG / TORCH_SPYRE_DEBUG logs and
``compile_stats``. Imports neither dynamo nor inductor, so eager ops stay light.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from . import _config

__all__ = ["CompileHistory", "CompileStats", "compile_stats", "compile_text", "passes_text"]

_lock = threading.Lock()


class CompileHistory:
    """The last ``keep`` compiled graphs, bounded (every CompiledGraph kept alive forever was a
    leak). Indexes are absolute: ``len()`` counts every graph recorded, ``history[n:]`` is those
    recorded after the first n (as far as still kept), ``history[-k:]`` the last k."""

    def __init__(self, keep: int = 64) -> None:
        self._kept: deque = deque(maxlen=keep)
        self._count = 0

    def append(self, graph: Any) -> None:
        self._kept.append(graph)
        self._count += 1

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Any:
        return iter(list(self._kept))

    def __getitem__(self, i: Any) -> Any:
        first = self._count - len(self._kept)
        if isinstance(i, slice):
            return [self._kept[k - first] for k in range(*i.indices(self._count)) if k >= first]
        k = i + self._count if i < 0 else i
        if not first <= k < self._count:
            raise IndexError(f"compile history entry {i} is not kept (the last {len(self._kept)} are)")
        return self._kept[k - first]


@dataclass
class CompileStats:
    """What the last compiled graph cost (read by the demo and benchmarks)."""

    graphs: int = 0
    frontend_ms: float = 0.0
    backend_ms: float = 0.0
    jit_ms: float = 0.0
    simulated_us: float = 0.0
    last: Any = None
    history: CompileHistory = field(default_factory=CompileHistory)  # the last 64 compiled graphs
    partitions: int = 0      # spyre partitions of the last partitioned graph
    fallback_nodes: int = 0  # nodes of the last partitioned graph that run on the CPU


compile_stats = CompileStats()
_graph_ids = itertools.count()


def _dump_dir() -> str:
    root = _config.dump_root()
    if not root:
        return ""
    d = os.path.join(root, f"graph_{next(_graph_ids)}")
    os.makedirs(d, exist_ok=True)
    return d


def compile_text(text: str, dump: str = "", fx_graph: str = "", eager_op: str = "") -> Any:
    """``_C.CompiledGraph`` for an IR text. A compiled graph is recorded in ``compile_stats``;
    an eager op's kernel (``eager_op``: the ATen op it runs) is not, but is dumped
    (``eager_op.txt`` instead of ``fx_graph.txt``) and logged the same way."""
    from . import _C

    if dump and (fx_graph or eager_op):
        name, body = ("eager_op.txt", eager_op + "\n") if eager_op else ("fx_graph.txt", fx_graph)
        with open(os.path.join(dump, name), "w") as f:
            f.write(body)
    engine = _config.engine()
    _config.check_compile()
    level = _config.debug_level()
    torch_debug = _config.torch_debug()
    compiled = _C.CompiledGraph(text, engine=engine, dump_dir=dump)
    if not eager_op:
        with _lock:
            compile_stats.graphs += 1
            compile_stats.frontend_ms = compiled.frontend_ms
            compile_stats.backend_ms = compiled.backend_ms
            compile_stats.jit_ms = compiled.jit_ms
            compile_stats.simulated_us = compiled.simulated_us
            compile_stats.last = compiled
            compile_stats.history.append(compiled)
    if level:
        what = f"eager {eager_op}" if eager_op else "graph"
        print(f"[spyre] compiled {what}: {len(compiled.listings())} kernels, frontend "
              f"{compiled.frontend_ms:.2f} ms, backend {compiled.backend_ms:.2f} ms, "
              f"JIT {compiled.jit_ms:.2f} ms")
        if level >= 2:
            print(passes_text(compiled))
            print("\n".join(compiled.superdscs()))
        if level >= 3:
            print("\n".join(compiled.listings()))
    if torch_debug:
        print(passes_text(compiled), file=sys.stderr)
    return compiled


def passes_text(compiled: Any) -> str:
    """The graph IR after each frontend pass of a compiled graph (the SPYRE_DUMP_DIR passes.txt
    head), one `# graph after <pass>` section each."""
    return "".join(f"# graph after {name}\n{text}\n" for name, text in compiled.passes())
