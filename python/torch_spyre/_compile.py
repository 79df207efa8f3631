"""torch.compile for the simulated Spyre card.

``torch.compile(fn, backend="spyre")`` (and the default backend when the inputs are spyre
tensors) traces through aot_autograd to an ATen FX graph, translates it to the Spyre graph IR
text, and hands it to the C++ frontend/backend/JIT (``torch_spyre._C.CompiledGraph``).
"""

from __future__ import annotations

import itertools
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch

__all__ = ["Unsupported", "spyre_backend", "register", "compile_stats", "graph_to_text"]


class Unsupported(NotImplementedError):
    """Raised for graphs, ops or shapes the simulated Spyre stack does not support (yet)."""

    def __init__(self, what: str) -> None:
        super().__init__(f"Unsupported: {what}")


_DTYPES = {
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.float32: "f32",
    torch.int32: "i32",
    torch.int64: "i64",
    torch.bool: "bool",
}

aten = torch.ops.aten

# ATen overload -> (graph IR op, number of tensor operands)
_OPS: dict[Any, tuple[str, int]] = {
    aten.add.Tensor: ("add", 2),
    aten.sub.Tensor: ("sub", 2),
    aten.mul.Tensor: ("mul", 2),
    aten.relu.default: ("relu", 1),
    aten.neg.default: ("neg", 1),
    aten.abs.default: ("abs", 1),
    aten.clone.default: ("clone", 1),
}


@dataclass
class CompileStats:
    """What the last compiled graph cost (read by the demo and benchmarks)."""

    graphs: int = 0
    frontend_ms: float = 0.0
    backend_ms: float = 0.0
    jit_ms: float = 0.0
    simulated_us: float = 0.0
    last: Any = None
    history: list = field(default_factory=list)


compile_stats = CompileStats()
_graph_ids = itertools.count()
_lock = threading.Lock()


def _type_text(val: Any, where: str) -> str:
    if not isinstance(val, torch.Tensor):
        raise Unsupported(f"non-tensor value {type(val).__name__} at {where}")
    for s in val.shape:
        if not isinstance(s, int):
            raise Unsupported(f"dynamic shape {tuple(val.shape)} at {where}; compile with dynamic=False")
    if val.dtype not in _DTYPES:
        raise Unsupported(f"dtype {val.dtype} at {where}")
    return f"{_DTYPES[val.dtype]}[{', '.join(str(int(s)) for s in val.shape)}]"


def graph_to_text(gm: torch.fx.GraphModule) -> str:
    """The Spyre graph IR text of an ATen-level FX graph."""
    names: dict[torch.fx.Node, str] = {}
    params: list[str] = []
    body: list[str] = []
    outputs: list[str] = []
    for node in gm.graph.nodes:
        where = f"node {node.name} ({node.format_node()})"
        if node.op == "placeholder":
            names[node] = node.name
            params.append(f"%{node.name}: {_type_text(node.meta.get('val'), where)}")
        elif node.op == "call_function":
            if node.target not in _OPS:
                raise Unsupported(f"op {node.target} ({node.name})")
            op, arity = _OPS[node.target]
            operands = []
            for a in node.args:
                if not isinstance(a, torch.fx.Node):
                    raise Unsupported(f"scalar operand {a!r} of {node.target} ({node.name})")
                operands.append(f"%{names[a]}")
            if len(operands) != arity:
                raise Unsupported(f"{node.target} with {len(operands)} tensor operands ({node.name})")
            for k, v in node.kwargs.items():
                if k == "alpha" and v == 1:
                    continue
                if k == "memory_format" and v in (None, torch.preserve_format, torch.contiguous_format):
                    continue
                raise Unsupported(f"keyword {k}={v!r} of {node.target} ({node.name})")
            names[node] = node.name
            body.append(f"  %{node.name} = {op}({', '.join(operands)}) : {_type_text(node.meta.get('val'), where)}")
        elif node.op == "output":
            outs = node.args[0]
            for o in outs if isinstance(outs, (list, tuple)) else [outs]:
                if not isinstance(o, torch.fx.Node):
                    raise Unsupported(f"graph output {o!r}")
                outputs.append(f"%{names[o]}")
        else:
            raise Unsupported(f"FX node kind {node.op} ({node.name})")
    return "graph(" + ", ".join(params) + ") {\n" + "\n".join(body) + ("\n" if body else "") + \
        "  return (" + ", ".join(outputs) + ")\n}\n"


def _dump_dir() -> str:
    root = os.environ.get("SPYRE_DUMP_DIR", "")
    if not root:
        return ""
    d = os.path.join(root, f"graph_{next(_graph_ids)}")
    os.makedirs(d, exist_ok=True)
    return d


def _compile_aten_graph(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
    from . import _C

    text = graph_to_text(gm)
    dump = _dump_dir()
    if dump:
        with open(os.path.join(dump, "fx_graph.txt"), "w") as f:
            f.write(str(gm.graph))
    engine = os.environ.get("SPYRE_ENGINE", "jit")
    compiled = _C.CompiledGraph(text, engine=engine, dump_dir=dump)
    with _lock:
        compile_stats.graphs += 1
        compile_stats.frontend_ms = compiled.frontend_ms
        compile_stats.backend_ms = compiled.backend_ms
        compile_stats.jit_ms = compiled.jit_ms
        compile_stats.simulated_us = compiled.simulated_us
        compile_stats.last = compiled
        compile_stats.history.append(compiled)
    if os.environ.get("SPYRE_DEBUG", "0") not in ("", "0"):
        level = int(os.environ["SPYRE_DEBUG"])
        print(f"[spyre] compiled graph: {len(compiled.listings())} kernels, frontend "
              f"{compiled.frontend_ms:.2f} ms, backend {compiled.backend_ms:.2f} ms, "
              f"JIT {compiled.jit_ms:.2f} ms")
        if level >= 2:
            print("\n".join(compiled.superdscs()))
        if level >= 3:
            print("\n".join(compiled.listings()))

    def run(*args: torch.Tensor) -> tuple:
        return tuple(compiled.run(list(args)))

    run._spyre_compiled = compiled  # type: ignore[attr-defined]
    return run


def _no_backward(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
    raise Unsupported("backward graphs (training) on spyre")


def spyre_backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
    """The dynamo backend "spyre"."""
    from torch._dynamo.backends.common import aot_autograd

    return aot_autograd(fw_compiler=_compile_aten_graph, bw_compiler=_no_backward)(gm, example_inputs)


def _has_spyre_tensor(xs: Sequence[Any]) -> bool:
    return any(isinstance(x, torch.Tensor) and x.device.type == "spyre" for x in xs)


_registered = False


def register() -> None:
    """Registers the "spyre" dynamo backend and routes the default backend to it for spyre inputs."""
    global _registered
    if _registered:
        return
    _registered = True
    from torch._dynamo.backends import registry

    if "spyre" not in registry._COMPILER_FNS:
        registry.register_backend(name="spyre")(spyre_backend)

    import torch._inductor.compile_fx as cfx

    original = cfx.compile_fx
    if getattr(original, "_spyre_wrapped", False):
        return

    def compile_fx(model_: Any, example_inputs_: Sequence[Any], *args: Any, **kwargs: Any) -> Callable:
        if _has_spyre_tensor(example_inputs_):
            return spyre_backend(model_, example_inputs_)
        return original(model_, example_inputs_, *args, **kwargs)

    compile_fx._spyre_wrapped = True  # type: ignore[attr-defined]
    cfx.compile_fx = compile_fx
