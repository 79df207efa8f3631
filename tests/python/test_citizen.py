"""torch_spyre as a good PyTorch citizen: installing it costs nothing to code that does not use
spyre (same dynamo graphs, a lazy ``import torch``, working pin_memory), and torch.compile on
spyre behaves like other backends (no graph breaks from us, shape changes, failed calls,
mode/options)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch
import torch._dynamo
import torch._dynamo.utils
from torch._dynamo.testing import CompileCounter

import torch_spyre  # noqa: F401
from torch_spyre import _compile


def _run(script: str, autoload: bool) -> dict:
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="1" if autoload else "0")
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---- no graph breaks from us ----------------------------------------------------------------

_CPU_GRAPHS = """
import json, torch, torch._dynamo, torch._dynamo.utils as utils
from torch._dynamo.testing import CompileCounter

class Norm(torch.nn.Module):  # the HF RMSNorm upcast pattern
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(8))
    def forward(self, x):
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
        return self.weight * h.to(x.dtype)

fns = {
    "to_dtype": lambda x: x.to(torch.float32) * 2 + 1,
    "to_device_dtype": lambda x: x.to("cpu", torch.float64).sum(),
    "to_kwargs": lambda x: x.to(device="cpu", dtype=torch.float16, copy=True) + 1,
    "to_other": lambda x: x.to(torch.ones(1, dtype=torch.float64)) * x,
    "norm": Norm(),
    "repr": lambda x: x * len(repr(x)),  # a break in stock torch too: the same one
    "break_then_to": lambda x: (torch._dynamo.graph_break(), (x + 1).to(torch.float64) * 2)[1],
    "module_to": lambda x: torch.nn.Linear(8, 2).to(torch.float64)(x.to(torch.float64)),
    "empty": lambda x: torch.empty(4, 8).fill_(2) * x + torch.empty((4, 8), dtype=x.dtype).fill_(1),
    "empty_strided": lambda x: torch.empty_strided((4, 8), (1, 4)).fill_(3) + x,
}
result = {}
for name, fn in fns.items():
    torch._dynamo.reset()
    utils.counters.clear()
    cnt = CompileCounter()
    out = torch.compile(fn, backend=cnt)(torch.randn(4, 8))
    result[name] = [cnt.frame_count, cnt.op_count, sum(utils.counters["graph_break"].values()),
                    sorted(k.splitlines()[0] for k in utils.counters["graph_break"])]
result["spyre_loaded"] = hasattr(torch, "spyre")
print(json.dumps(result))
"""


def test_cpu_models_compile_to_the_same_graphs_with_and_without_torch_spyre():
    with_spyre = _run(_CPU_GRAPHS, autoload=True)
    without = _run(_CPU_GRAPHS, autoload=False)
    assert with_spyre.pop("spyre_loaded") is True
    assert without.pop("spyre_loaded") is False
    assert with_spyre == without
    for name in ("to_dtype", "to_device_dtype", "to_kwargs", "to_other", "norm", "empty", "empty_strided"):
        frames, _ops, breaks, reasons = with_spyre[name]
        assert (frames, breaks, reasons) == (1, 0, []), name


def test_to_in_a_compiled_function_is_traced_not_broken():
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    cnt = CompileCounter()
    x = torch.randn(5, dtype=torch.float16)
    out = torch.compile(lambda a: a.to(torch.float32) * 2 + 1, backend=cnt)(x)
    torch.testing.assert_close(out, x.float() * 2 + 1)
    assert cnt.frame_count == 1 and cnt.op_count == 3
    assert not torch._dynamo.utils.counters["graph_break"]


def test_to_with_device_layout_still_works(dl16_round, assert_bits):
    x = torch.randn(4, 64, dtype=torch.float16)
    stl = torch.spyre.SpyreTensorLayout([4, 64], torch.float16)
    y = x.to("spyre", device_layout=stl)
    assert y.device.type == "spyre"
    assert y.device_tensor_layout() is not None
    assert_bits(y.cpu(), dl16_round(x))
    with pytest.raises(TypeError, match="expects a torch.spyre.SpyreTensorLayout, got str"):
        x.to("spyre", device_layout="tiled")


class _LlamaBlock(torch.nn.Module):
    """One decoder layer as HF Llama writes it: RMSNorm with the fp32 upcast and ``.to`` back,
    rotary embedding, grouped-query causal attention, SiLU-gated MLP, residuals."""

    def __init__(self, dim: int = 64, heads: int = 4, kv_heads: int = 2, hidden: int = 128) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.norm1 = torch.nn.Parameter(torch.ones(dim))
        self.norm2 = torch.nn.Parameter(torch.ones(dim))
        self.q = torch.nn.Linear(dim, dim, bias=False)
        self.k = torch.nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.v = torch.nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.o = torch.nn.Linear(dim, dim, bias=False)
        self.gate = torch.nn.Linear(dim, hidden, bias=False)
        self.up = torch.nn.Linear(dim, hidden, bias=False)
        self.down = torch.nn.Linear(hidden, dim, bias=False)

    @staticmethod
    def _norm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
        return w * h.to(x.dtype)

    @staticmethod
    def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        half = x.shape[-1] // 2
        rot = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return x * cos + rot * sin

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        h = self._norm(x, self.norm1)
        q = self.q(h).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(h).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v(h).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = self._rotate(q, cos, sin), self._rotate(k, cos, sin)
        rep = self.heads // self.kv_heads
        k = k[:, :, None].expand(b, self.kv_heads, rep, s, self.head_dim).reshape(b, self.heads, s, self.head_dim)
        v = v[:, :, None].expand(b, self.kv_heads, rep, s, self.head_dim).reshape(b, self.heads, s, self.head_dim)
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, -1))
        h = self._norm(x, self.norm2)
        return x + self.down(torch.nn.functional.silu(self.gate(h)) * self.up(h))


def test_llama_block_on_spyre_compiles_to_one_graph():
    torch.manual_seed(0)
    block = _LlamaBlock().half().eval()
    x = torch.randn(1, 16, 64, dtype=torch.float16)
    pos = torch.arange(16, dtype=torch.float32)[:, None] * (1e-2 * torch.arange(1, 9, dtype=torch.float32))
    cos, sin = torch.cat((pos, pos), -1).cos().half(), torch.cat((pos, pos), -1).sin().half()
    with torch.no_grad():
        expect = block.float()(x.float(), cos.float(), sin.float())
        block.half().to("spyre")
        graphs = []

        def counting(gm, example_inputs):
            graphs.append(gm)
            return _compile.spyre_backend(gm, example_inputs)

        torch._dynamo.reset()
        torch._dynamo.utils.counters.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", torch_spyre.FallbackWarning)
            out = torch.compile(block, backend=counting, dynamic=False)(x.to("spyre"), cos.to("spyre"),
                                                                         sin.to("spyre"))
    assert len(graphs) == 1
    assert not torch._dynamo.utils.counters["graph_break"]
    assert out.device.type == "spyre"
    torch.testing.assert_close(out.cpu().float(), expect, atol=0.1, rtol=0.05)


# ---- import time --------------------------------------------------------------------------

_IMPORTED = """
import json, sys, time
t = time.perf_counter()
import torch
seconds = time.perf_counter() - t
heavy = ["torch._dynamo", "torch._inductor", "torch._inductor.compile_fx", "sympy",
         "torch_spyre._compile"]
print(json.dumps({"spyre": hasattr(torch, "spyre") and torch.spyre.is_available(),
                  "loaded": [m for m in heavy if m in sys.modules], "seconds": seconds}))
"""


def test_import_torch_does_not_import_the_compile_machinery():
    r = _run(_IMPORTED, autoload=True)
    assert r["spyre"] is True
    assert r["loaded"] == []


def test_the_first_spyre_op_prints_no_warning():
    # Registering the eager kernels overrides functorch's where.Scalar on purpose; torch would
    # print an "Overriding a previously registered kernel" UserWarning in every process.
    r = _run("""
        import json, warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import torch
            x = torch.ones(3, dtype=torch.float16).to("spyre")
            y = (x * 3).cpu()
        print(json.dumps({"warnings": [str(w.message)[:200] for w in caught], "y": y.tolist()}))
    """, autoload=True)
    assert r["warnings"] == []
    assert r["y"] == [3.0, 3.0, 3.0]


def test_spyre_backend_is_found_lazily_through_the_entry_point():
    r = _run("""
        import json, torch
        x = torch.arange(8, dtype=torch.float16).to("spyre")
        out = torch.compile(lambda a: a * 2 + 1, backend="spyre", dynamic=False)(x).cpu()
        routed = torch.compile(lambda a: a - 1, dynamic=False)(x).cpu()  # default backend
        print(json.dumps({"out": out.tolist(), "routed": routed.tolist()}))
    """, autoload=True)
    assert r["out"] == [2 * i + 1 for i in range(8)]
    assert r["routed"] == [i - 1 for i in range(8)]


def test_every_inductor_entry_routes_spyre_graphs_lazily():
    """torch._dynamo.optimize("inductor"), CompileCounterWithBackend("inductor") and direct calls
    of inductor's compile_fx reach our backend for spyre inputs; the hook that routes them
    imports nothing until compile_fx is imported."""
    r = _run("""
        import json, sys, torch
        before = "torch._inductor.compile_fx" in sys.modules
        import torch._dynamo
        from torch._dynamo.testing import CompileCounterWithBackend
        from torch_spyre import _compile
        x = torch.arange(8, dtype=torch.float16)
        xs = x.to("spyre")
        graphs = _compile.compile_stats.graphs
        opt = torch._dynamo.optimize("inductor")(lambda a: a * 3 - 1)(xs).cpu()
        cnt = CompileCounterWithBackend("inductor")
        counted = torch.compile(lambda a: a + 5, backend=cnt)(xs).cpu()
        import torch._inductor.compile_fx as cfx
        print(json.dumps({"before": before, "opt": opt.tolist(), "counted": counted.tolist(),
                          "frames": cnt.frame_count, "ours": _compile.compile_stats.graphs - graphs,
                          "routed": getattr(cfx.compile_fx, "_spyre_routed", False)}))
    """, autoload=True)
    assert r["before"] is False
    assert r["opt"] == [3 * i - 1 for i in range(8)]
    assert r["counted"] == [i + 5 for i in range(8)]
    assert r["frames"] == 1 and r["ours"] == 2 and r["routed"] is True


def test_the_compile_fx_route_sends_only_spyre_graphs_to_us():
    from torch_spyre import _route

    calls = []
    module = type("CompileFxModule", (), {})()
    module.compile_fx = lambda gm, inputs, **kw: calls.append(kw) or "inductor's"
    _route.wrap_compile_fx(module)
    routed = module.compile_fx
    _route.wrap_compile_fx(module)
    assert module.compile_fx is routed  # idempotent
    assert routed(None, [torch.ones(2)], config_patches={"k": 1}) == "inductor's"
    assert calls == [{"config_patches": {"k": 1}}]

    x, xs = _spyre(4, 64)
    graphs = _compile.compile_stats.graphs
    fn = routed(torch.fx.symbolic_trace(lambda a: (torch.relu(a) * 2,)), [xs])  # as dynamo gives it
    assert calls == [{"config_patches": {"k": 1}}] and _compile.compile_stats.graphs == graphs + 1
    (out,) = fn(xs)
    torch.testing.assert_close(out.cpu(), torch.relu(x) * 2, atol=0.01, rtol=0.01)


def test_a_graph_without_spyre_inputs_that_makes_spyre_tensors_is_ours():
    torch._dynamo.reset()
    graphs = _compile.compile_stats.graphs
    for compiled in (torch.compile(lambda n, device=None: torch.arange(n, dtype=torch.float16, device=device)),
                     torch._dynamo.optimize("inductor")(
                         lambda n, device=None: torch.arange(n, dtype=torch.float16, device=device))):
        out = compiled(64.0, device="spyre")
        assert out.device.type == "spyre"
        torch.testing.assert_close(out.cpu(), torch.arange(64, dtype=torch.float16))
        torch._dynamo.reset()
    assert _compile.compile_stats.graphs == graphs + 2


def test_cpu_graphs_still_reach_inductor():
    torch._dynamo.reset()
    graphs = _compile.compile_stats.graphs
    x = torch.randn(4, 8)
    try:
        out = torch._dynamo.optimize("inductor")(lambda a: a * 2 + 1)(x)
    finally:
        torch._dynamo.reset()
    torch.testing.assert_close(out, x * 2 + 1)
    assert _compile.compile_stats.graphs == graphs  # inductor compiled it, not us


# ---- pin_memory ---------------------------------------------------------------------------

def test_pin_memory_on_the_cpu():
    x = torch.randn(3, 5)
    assert not x.is_pinned()
    p = x.pin_memory()
    assert p.is_pinned() and p.device.type == "cpu"
    assert p[1:, 2:].is_pinned()  # views of pinned memory are pinned
    assert torch.equal(p, x)
    assert not p.clone().is_pinned()
    assert torch.empty(4, pin_memory=True).is_pinned()
    assert torch.empty(0).pin_memory().is_pinned()
    s = p.to("spyre", non_blocking=True)
    assert torch.equal(s.cpu(), x)


def test_dataloader_pin_memory():
    ds = torch.utils.data.TensorDataset(torch.arange(10.0), torch.arange(10))
    batches = list(torch.utils.data.DataLoader(ds, batch_size=4, pin_memory=True))
    assert [b[0].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert all(t.is_pinned() for b in batches for t in b)


def test_pin_memory_in_a_cpu_only_script():
    r = _run("""
        import json, torch
        x = torch.ones(2, 3).pin_memory()
        dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.ones(4, 2)), batch_size=2,
                                         pin_memory=True)
        print(json.dumps({"pinned": x.is_pinned(), "batches": [b[0].is_pinned() for b in dl]}))
    """, autoload=True)
    assert r == {"pinned": True, "batches": [True, True]}


# ---- a dynamo-robust backend --------------------------------------------------------------

def _f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.relu(a + b) * b


def _spyre(*shape: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g, dtype=torch.float16)
    return x, x.to("spyre")


def _frames() -> dict:
    return dict(torch._dynamo.utils.counters["frames"])


def test_a_failed_call_does_not_poison_later_calls():
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    x, xs = _spyre(4, 64)
    _, bad = _spyre(3, 64, seed=1)
    g = torch.compile(_f, backend="spyre", dynamic=False)
    with pytest.raises(Exception, match="Attempting to broadcast a dimension of length 3"):
        g(xs, bad)
    graphs = _compile.compile_stats.graphs
    for _ in range(5):
        out = g(xs, xs)
    torch.testing.assert_close(out.cpu(), _f(x, x), atol=0.1, rtol=0.1)
    # One failed and one successful compile of _f; the later calls run the compiled graph.
    assert _frames() == {"total": 2, "ok": 1}
    assert _compile.compile_stats.graphs == graphs + 1


def test_eager_kernels_are_never_traced_by_dynamo():
    """A frame whose compile failed runs eagerly with dynamo's frame hook still active: our
    kernels (and the CPU fallback) run untraced instead of being compiled op by op."""
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    x, xs = _spyre(4, 64)

    def failing(gm, example_inputs):
        raise RuntimeError("backend failure")

    def f(a):
        return torch.relu(a + 1) * a - torch.sigmoid(a) + torch.atan(a)  # atan: CPU fallback

    with torch._dynamo.config.patch(suppress_errors=True), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = torch.compile(f, backend=failing)
        for _ in range(3):
            out = g(xs)
    torch.testing.assert_close(out.cpu(), f(x), atol=0.1, rtol=0.1)
    assert _frames().get("total") == 1  # f only: no frame of ours was offered to dynamo


@pytest.mark.parametrize("how", ["automatic", "dynamic=True", "mark_dynamic"])
def test_symbolic_shapes_compile_per_concrete_shape(how):
    torch._dynamo.reset()
    graphs = []

    def counting(gm, example_inputs):
        graphs.append(gm)
        return _compile.spyre_backend(gm, example_inputs)

    g = torch.compile(_f, backend=counting, dynamic=True if how == "dynamic=True" else None)
    compiled = _compile.compile_stats.graphs
    for rows in (4, 8, 4, 12):
        x, xs = _spyre(rows, 64, seed=rows)
        if how == "mark_dynamic":
            torch._dynamo.mark_dynamic(xs, 0)
        out = g(xs, xs)
        assert out.shape == (rows, 64)
        torch.testing.assert_close(out.cpu(), _f(x, x), atol=0.1, rtol=0.1)
    # dynamo: one static graph, then one symbolic graph (automatic dynamic after the second
    # shape), or one symbolic graph from the start; spyre: one compile per distinct shape of
    # each (the symbolic graph of "automatic" meets shapes 8, 4, 12).
    assert len(graphs) == (2 if how == "automatic" else 1)
    assert _compile.compile_stats.graphs - compiled == (4 if how == "automatic" else 3)


def test_a_second_model_in_the_same_process():
    torch._dynamo.reset()
    x, xs = _spyre(4, 64)
    first = torch.compile(_f, backend="spyre")
    torch.testing.assert_close(first(xs, xs).cpu(), _f(x, x), atol=0.1, rtol=0.1)

    def second(a, b):
        return torch.sigmoid(a) - b

    y, ys = _spyre(6, 64, seed=2)
    torch.testing.assert_close(torch.compile(second, backend="spyre")(ys, ys).cpu(), second(y, y),
                               atol=0.05, rtol=0.05)
    torch.testing.assert_close(first(ys, ys).cpu(), _f(y, y), atol=0.1, rtol=0.1)


def test_mode_and_options():
    torch._dynamo.reset()
    x, xs = _spyre(4, 64)
    for mode in ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"):
        torch._dynamo.reset()
        out = torch.compile(_f, backend="spyre", mode=mode)(xs, xs)
        torch.testing.assert_close(out.cpu(), _f(x, x), atol=0.1, rtol=0.1)
    torch._dynamo.reset()
    with pytest.warns(UserWarning, match=r"ignores options \['epilogue_fusion'\]"):
        out = torch.compile(_f, backend="spyre", options={"epilogue_fusion": True})(xs, xs)
    torch.testing.assert_close(out.cpu(), _f(x, x), atol=0.1, rtol=0.1)
    torch._dynamo.reset()
    with pytest.raises(Exception, match="Unrecognized mode='fastest', should be one of: default, "):
        torch.compile(_f, backend="spyre", mode="fastest")(xs, xs)
