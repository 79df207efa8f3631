"""torch.compile for the simulated Spyre card.

``torch.compile(fn, backend="spyre")`` (and the default backend when the inputs are spyre
tensors) traces through aot_autograd to an ATen FX graph, translates it to the Spyre graph IR
text, and hands it to the C++ frontend/backend/JIT (``torch_spyre._C.CompiledGraph``).
"""

from __future__ import annotations

import collections
import functools
import operator
import threading
import warnings
from typing import Any, Callable, Sequence

import torch

from . import _fallback, _guards
from ._build import _dump_dir, compile_stats, compile_text, passes_text  # noqa: F401  (re-exported)
from ._fold_matmul_views import fold_matmul_views
from ._errors import FallbackWarning, Unsupported, strict_unsupported, typed_device_faults
from ._collectives import COLLECTIVE_OPS as _COLLECTIVE_OPS
from ._collectives import call_implementations, rewrite_collectives
from ._device import device_of
from ._no_trace import no_trace
from ._lowering import (
    Env,
    check_text,
    is_lowerable,
    lower,
    node_lines,
    single_node_text,
    type_text,
)

__all__ = ["Unsupported", "FallbackWarning", "spyre_backend", "register", "compile_stats", "graph_to_text",
           "partition_graph"]

aten = torch.ops.aten

# A spyre input in another SpyreTensorLayout recompiles (dynamo builds this frame's guards after
# the backend has run, so installing here is in time for the first compile).
_guards.install()


_lock = threading.Lock()


class _FxEnv(Env):
    """Operands of an ATen FX graph: tensors are nodes with a FakeTensor ``val``; constants are
    Python numbers (0-d tensor constants stay tensors: they become graph inputs)."""

    def tensor(self, x: Any) -> tuple[tuple[int, ...], torch.dtype] | None:
        if isinstance(x, torch.fx.Node):
            v = x.meta.get("val")
            if isinstance(v, torch.Tensor):
                return tuple(v.shape), v.dtype
        return None

    def constant(self, x: Any) -> float | None:
        if isinstance(x, bool):
            return float(x)
        if isinstance(x, (int, float)):
            return float(x)
        return None


_ENV = _FxEnv()


def _val_type(node: torch.fx.Node, where: str) -> str:
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        raise Unsupported(f"non-tensor value {type(val).__name__} at {where}")
    return type_text(val.shape, val.dtype, where)


def _lower_node(node: torch.fx.Node) -> Any:
    if not is_lowerable(node.target):
        raise Unsupported(f"op {node.target} ({node.name})")
    return lower(node.target, tuple(node.args), dict(node.kwargs), _ENV)


def graph_to_text(gm: torch.fx.GraphModule) -> str:
    """The Spyre graph IR text of an ATen-level FX graph (every node must have a lowering)."""
    names: dict[torch.fx.Node, str] = {}
    params: list[str] = []
    body: list[str] = []
    outputs: list[str] = []
    for node in gm.graph.nodes:
        where = f"node {node.name} ({node.format_node()})"
        if node.op == "placeholder":
            names[node] = node.name
            params.append(f"%{node.name}: {_val_type(node, where)}")
        elif node.op == "call_function":
            lowered = _lower_node(node)
            for o in lowered.operands():
                if o not in names:
                    raise Unsupported(f"operand {o} of {node.name} is not a graph value")
            names[node] = node.name
            body += node_lines(lowered, lambda o: names[o], node.name, _val_type(node, where),
                               lambda o: _val_type(o, where))
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


def node_support(node: torch.fx.Node) -> str:
    """'' if this ATen node compiles for spyre on its own, else why not. Asks the C++ side
    (``_C.check_graph`` on a one-node graph, cached by the graph text)."""
    if node.op != "call_function":
        return f"FX node kind {node.op}"
    try:
        lowered = _lower_node(node)
        where = f"node {node.name}"
        types = {id(o): _val_type(o, where) for o in lowered.operands()}
        text = single_node_text(lowered, types, _val_type(node, where))
    except Unsupported as e:
        return str(e)
    return check_text(text)


class _SpyreSupport:
    """OperatorSupport for CapabilityBasedPartitioner: supported = the C++ side compiles it."""

    def __init__(self) -> None:
        self.reasons: dict[torch.fx.Node, str] = {}

    def is_node_supported(self, submodules: Any, node: torch.fx.Node) -> bool:
        if node not in self.reasons:
            self.reasons[node] = node_support(node)
        return self.reasons[node] == ""


# Ops that run as they are on spyre tensors outside the compiled partitions: views are
# metadata on the device (the next partition restages them), and these data-movement and
# creation ops have device kernels (copies, empty + fill).
_NATIVE = {
    aten._unsafe_view.default,  # reshape of a fresh contiguous tensor: a view (not marked is_view)
    aten._to_copy.default,
    aten.copy.default,
    aten.empty.memory_format,
    aten.empty_strided.default,
    aten.full.default,
    aten.zeros.default,
    aten.ones.default,
    aten.scalar_tensor.default,
    aten.lift_fresh_copy.default,
    aten.empty_like.default,
    aten.zeros_like.default,
    aten.ones_like.default,
    aten.full_like.default,
}


def _runs_natively(target: Any) -> bool:
    if target is operator.getitem:
        return True
    if target in _COLLECTIVE_OPS:
        # Collectives run between the partitions, through the c10d backend (``_collectives``).
        return True
    if isinstance(target, torch._ops.OpOverload):
        return target.is_view or target in _NATIVE
    return False


def _on_spyre(x: Any, dev: int | None) -> Any:
    # Partition inputs that are not on the graph's card: tensor constants of the graph (CPU, or
    # uploaded at compile time to the card that was current then).
    if isinstance(x, torch.Tensor) and (x.device.type != "spyre" or (dev is not None and x.device.index != dev)):
        return x.to("spyre" if dev is None else f"spyre:{dev}")
    return x


def _compiled_runner(compiled: Any, single: bool) -> Callable:
    @no_trace
    def run(*args: Any) -> Any:
        dev = device_of(args)
        with typed_device_faults():
            outs = compiled.run([_on_spyre(a, dev) for a in args])
        return outs[0] if single else tuple(outs)

    run._spyre_compiled = compiled  # type: ignore[attr-defined]
    return run


def _cpu_partition_runner(sub: torch.fx.GraphModule, name: str, reason: str) -> Callable:
    """A partition whose graph failed to compile as a whole runs on the CPU."""

    @no_trace
    def run(*args: Any) -> Any:
        _fallback.note_fallback(f"partition {name}", reason)
        dev = device_of(args)
        home = "spyre" if dev is None else f"spyre:{dev}"
        cpu = [a.cpu() if isinstance(a, torch.Tensor) else a for a in args]
        out = sub(*cpu)
        if isinstance(out, (tuple, list)):
            return type(out)(o.to(home) if isinstance(o, torch.Tensor) else o for o in out)
        return out.to(home) if isinstance(out, torch.Tensor) else out

    return run


def _all_tensor_outputs(gm: torch.fx.GraphModule) -> bool:
    out = gm.graph.output_node().args[0]
    return all(isinstance(o, torch.fx.Node) for o in (out if isinstance(out, (list, tuple)) else [out]))


def _check_static(gm: torch.fx.GraphModule) -> None:
    for node in gm.graph.find_nodes(op="placeholder"):
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor):
            # Shapes only: an input of a dtype the graph IR lacks (int8, float8_e4m3fn) is for
            # the partitioner, whose nodes that read it run through the CPU fallback.
            type_text(val.shape, torch.float16, f"node {node.name}")
        elif val is not None and not isinstance(val, (int, float, bool)):
            raise Unsupported(f"non-tensor value {type(val).__name__} at node {node.name} "
                              f"({node.format_node()})")


def partition_graph(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """Splits an ATen graph into spyre partitions (``_C.CompiledGraph``s) and CPU fallback
    nodes; returns the graph module that runs them in order."""
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner

    support = _SpyreSupport()
    for node in [n for n in gm.graph.nodes if n.op == "call_function"]:
        support.is_node_supported(None, node)
    unsupported = [n for n in [n for n in gm.graph.nodes if n.op == "call_function"]
                   if support.reasons[n] and not _runs_natively(n.target)]
    if unsupported and _fallback.strict():
        n = unsupported[0]
        more = f" (and {len(unsupported) - 1} more nodes)" if len(unsupported) > 1 else ""
        raise strict_unsupported(f"{n.target} ({n.name}) cannot run on spyre: {support.reasons[n]}{more}")
    partitioner = CapabilityBasedPartitioner(gm, support, allows_single_node_partition=True)
    fused = partitioner.partition_and_fuse("spyre_partition_")
    partitions = 0
    for node in list(fused.graph.nodes):
        if node.op == "call_module" and str(node.target).startswith("spyre_partition_"):
            sub = fused.get_submodule(node.target)
            single = not isinstance(sub.graph.output_node().args[0], (tuple, list))
            dump = _dump_dir()
            try:
                text = graph_to_text(sub)
                runner = _compiled_runner(compile_text(text, dump, str(sub.graph)), single)
            except (NotImplementedError, RuntimeError) as e:
                if _fallback.strict():
                    raise
                runner = _cpu_partition_runner(sub, node.target, str(e))
            with fused.graph.inserting_before(node):
                call = fused.graph.call_function(runner, tuple(node.args), dict(node.kwargs))
            call.meta = dict(node.meta)
            node.replace_all_uses_with(call)
            fused.graph.erase_node(node)
            partitions += 1
        elif node.op == "call_function" and not _runs_natively(node.target):
            reason = support.reasons.get(node) or node_support(node)
            node.target = _fallback.cpu_fallback_fn(node.target, reason)
    fused.delete_all_unused_submodules()
    call_implementations(fused)
    fused.graph.lint()
    fused.recompile()
    with _lock:
        compile_stats.partitions = partitions
        compile_stats.fallback_nodes = len(unsupported)
    return fused


def _foldable(node: torch.fx.Node, const: set) -> bool:
    """The node's value depends on no graph input and is the same on every call."""
    if node.op != "call_function" or not isinstance(node.meta.get("val"), torch.Tensor):
        return False
    target = node.target
    if isinstance(target, torch._ops.OpOverload):
        # Random values, and uninitialised memory (empty, empty_like, new_empty, empty_strided).
        if torch.Tag.nondeterministic_seeded in target.tags or "empty" in target.__name__:
            return False
    elif target is not operator.getitem:
        return False
    return all(a in const for a in node.all_input_nodes)


def _on_cpu(x: Any) -> Any:
    if isinstance(x, torch.device) or (isinstance(x, str) and x.startswith("spyre")):
        return torch.device("cpu")
    return x


# Input-independent ops cheaper to run on the card than to upload (fold_constants keeps them).
_PLAIN_FILLS = {aten.full.default, aten.scalar_tensor.default, aten.zeros.default, aten.ones.default}


def fold_constants(gm: torch.fx.GraphModule) -> list:
    """Input-independent subgraphs that contain an op spyre does not run (the causal mask
    ``full(-inf).triu(1)`` of scaled_dot_product_attention, tables built from ``arange``) are
    computed once, on the CPU, at compile time: each result becomes an extra graph input (a
    placeholder after the others) whose tensor is uploaded to the card once. So are those that
    compute anything beyond plain fills and views (``arange`` tables), which would otherwise run
    at every call; plain fills (a ``full``) stay in the graph. Returns the tensors, in placeholder
    order; the caller appends them to every call's inputs."""
    const: set = set()
    for node in gm.graph.nodes:
        if _foldable(node, const):
            const.add(node)
    frontier = [n for n in gm.graph.nodes if n in const and any(u not in const for u in n.users)]
    if not frontier:
        return []
    # Fold a frontier value if its constant subgraph needs the CPU or computes anything beyond
    # plain fills and views: such values (RoPE tables from arange, cos and sin) would otherwise
    # be recomputed on the card at every call.
    needs_cpu: dict = {}
    for node in gm.graph.nodes:
        if node in const:
            own = not _runs_natively(node.target) and (node.target not in _PLAIN_FILLS or node_support(node) != "")
            needs_cpu[node] = own or any(needs_cpu[a] for a in node.all_input_nodes)
    frontier = [n for n in frontier if needs_cpu[n]]
    if not frontier:
        return []
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    values: dict = {}
    with unset_fake_temporarily():  # the backend compiles under aot_autograd's fake mode
        for node in gm.graph.nodes:
            if node in const:
                args = torch.fx.node.map_arg(node.args, lambda a: values[a])
                kwargs = {k: _on_cpu(v) for k, v in torch.fx.node.map_arg(node.kwargs, lambda a: values[a]).items()}
                values[node] = node.target(*args, **kwargs)
        uploaded = [values[n].contiguous().to("spyre") for n in frontier]
    placeholders = gm.graph.find_nodes(op="placeholder")
    last = placeholders[-1] if placeholders else None
    tensors = []
    for i, node in enumerate(frontier):
        ctx = gm.graph.inserting_after(last) if last is not None else gm.graph.inserting_before(None)
        with ctx:
            ph = gm.graph.placeholder(f"_spyre_const{i}")
        ph.meta = dict(node.meta)
        node.replace_all_uses_with(ph)
        last = ph
        tensors.append(uploaded[i])
    gm.graph.eliminate_dead_code()
    gm.graph.lint()
    gm.recompile()
    return tensors


def _compile_aten_graph(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
    from ._empty import compiled_graph_has_empty, drop_empty_cat_parts

    rewrite_collectives(gm)
    drop_empty_cat_parts(gm)
    if compiled_graph_has_empty(gm):
        call_implementations(gm)
        return gm  # zero-size values need no kernels: node by node through the eager kernels
    consts = fold_constants(gm)
    fn = _compile_aten_graph_inputs(gm)
    if not consts:
        return fn

    @no_trace
    def run(*args: Any) -> Any:
        return fn(*args, *consts)

    if hasattr(fn, "_spyre_compiled"):
        run._spyre_compiled = fn._spyre_compiled  # type: ignore[attr-defined]
    return run


def _compile_aten_graph_inputs(gm: torch.fx.GraphModule) -> Callable:
    from . import _C

    _C.sencores()  # an invalid SENCORES is a setup error: raise instead of falling back
    _check_static(gm)
    fold_matmul_views(gm)
    # A node that does not compile on its own may compile in context: the unsqueeze of a
    # reduction without keepdim moves elements between sticks from the generic layout, but not
    # from the reduction's own layout, which layout propagation lets it read; a rank-5 expand or
    # clone runs at rank 4 when the reshapes around it are internal (repeat_kv). So every graph
    # whose nodes all have a lowering tries the whole compile first, and partitions if it fails.
    whole = _all_tensor_outputs(gm) and not gm.graph.find_nodes(op="get_attr")
    if whole:
        # Everything compiles: one graph, no Python between kernels.
        try:
            compiled = compile_text(graph_to_text(gm), _dump_dir(), str(gm.graph))
        except (NotImplementedError, RuntimeError):
            # Strict mode: a graph whose every node compiles on its own must compile whole.
            if _fallback.strict() and all(node_support(n) == "" for n in gm.graph.nodes if n.op == "call_function"):
                raise
        else:
            with _lock:
                compile_stats.partitions = 1
                compile_stats.fallback_nodes = 0

            @no_trace
            def run(*args: torch.Tensor) -> tuple:
                dev = device_of(args)
                with typed_device_faults():
                    return tuple(compiled.run([_on_spyre(a, dev) for a in args]))

            run._spyre_compiled = compiled  # type: ignore[attr-defined]
            return run
    return partition_graph(gm)


def _no_backward(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable:
    raise Unsupported("backward graphs (training) on spyre")


# torch.compile's modes: the simulator has one way to compile (no autotuning; a compiled graph
# already runs without Python between kernels, which is what "reduce-overhead" buys on CUDA).
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# Specialised compiles kept per graph that dynamo traced with symbolic shapes (LRU).
SHAPE_CACHE_SIZE = 32


def check_backend_args(mode: Any, options: Any) -> None:
    """torch.compile(backend="spyre", mode=..., options=...): every torch.compile mode is
    accepted (they all compile the same way here); options have no spyre meaning and are
    ignored with a warning naming them."""
    if mode is not None and mode not in MODES:
        raise RuntimeError(f"Unrecognized mode={mode!r}, should be one of: {', '.join(MODES)}")
    if options is None:
        return
    if not isinstance(options, dict):
        raise TypeError(f"torch.compile(backend=\"spyre\") options must be a dict, got {type(options).__name__}")
    if options:
        warnings.warn(f"torch.compile(backend=\"spyre\") ignores options {sorted(options)}: the spyre "
                      f"backend has no options (configure it with the SPYRE_* environment variables)",
                      UserWarning, stacklevel=3)


def _is_symbolic(x: Any) -> bool:
    if isinstance(x, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return True
    if isinstance(x, torch.Tensor):
        return any(isinstance(d, torch.SymInt) for d in (*x.shape, *x.stride(), x.storage_offset()))
    return False


def _input_key(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return (tuple(x.shape), tuple(x.stride()), x.storage_offset(), x.dtype, x.device.type, x.requires_grad)
    return (type(x).__name__, x)


def _compile_static(gm: torch.fx.GraphModule, example_inputs: Sequence[Any],
                    decompositions: dict | None = None) -> Callable:
    """aot_autograd with the spyre decompositions and, over them, the caller's (``compile_fx(..,
    decompositions=)``, ``spyre_backend(.., decompositions=)``)."""
    from torch._dynamo.backends.common import aot_autograd

    from ._decompositions import spyre_decompositions

    table = {**spyre_decompositions(), **(decompositions or {})}
    return aot_autograd(fw_compiler=_compile_aten_graph, bw_compiler=_no_backward,
                        decompositions=table)(gm, example_inputs)


def _per_shape(gm: torch.fx.GraphModule, decompositions: dict | None = None) -> Callable:
    """A graph dynamo traced with symbolic sizes (automatic dynamic shapes after a second
    shape, ``dynamic=True``, ``mark_dynamic``): the graph IR has static shapes, so each call
    compiles (once, LRU-cached by the inputs' shapes, strides, dtypes and integer values) the
    graph specialised to its concrete inputs. A failed compile is not cached."""
    cache: collections.OrderedDict = collections.OrderedDict()
    lock = threading.Lock()

    def run(*args: Any) -> Any:
        key = tuple(_input_key(a) for a in args)
        with lock:
            fn = cache.get(key)
            if fn is not None:
                cache.move_to_end(key)
        if fn is None:
            fn = _compile_static(gm, list(args), decompositions)
            with lock:
                cache[key] = fn
                while len(cache) > SHAPE_CACHE_SIZE:
                    cache.popitem(last=False)
        return fn(*args)

    run._spyre_shape_cache = cache  # type: ignore[attr-defined]
    return no_trace(run)


def spyre_backend(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], *, mode: str | None = None,
                  options: dict | None = None, decompositions: dict | None = None) -> Callable:
    """The dynamo backend "spyre" (``torch.compile(fn, backend="spyre", mode=..., options=...)``).
    ``decompositions``: the caller's ATen decompositions (op overload -> function), applied over
    the spyre ones (as inductor's ``compile_fx(.., decompositions=)``)."""
    from ._decompositions import substitute_sdpa

    check_backend_args(mode, options)
    if decompositions is not None and not isinstance(decompositions, dict):
        raise TypeError(f"spyre_backend decompositions must be a dict of op -> function, got "
                        f"{type(decompositions).__name__}")
    gm = substitute_sdpa(gm)
    if any(_is_symbolic(x) for x in example_inputs):
        return _per_shape(gm, decompositions)
    return _compile_static(gm, example_inputs, decompositions)


@functools.cache  # once per process
def register() -> None:
    """Registers the "spyre" dynamo backend now (it is also found lazily through the
    ``torch_dynamo_backends`` entry point) and routes the default backend to it for spyre inputs
    (done at autoload already)."""
    from torch._dynamo.backends import registry

    import torch_spyre

    if "spyre" not in registry._COMPILER_FNS:
        registry.register_backend(name="spyre")(spyre_backend)
    torch_spyre._route_default_backend()
