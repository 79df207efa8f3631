"""Eager ops take Python scalars as kernel arguments (runtime scalars, ``$k`` in the graph IR,
read from the launch's scalar-argument block in LX): one compiled kernel for ``a * s`` whatever
``s``, bit for bit the result of the kernel with ``s`` compiled in; the eager caches are LRU
and bounded; SPYRE_DUMP_DIR and SPYRE_DEBUG cover eager ops."""

from __future__ import annotations

import math

import pytest
import torch

import torch_spyre  # noqa: F401
from torch_spyre import ConfigError, _C, _eager
from torch_spyre._eager import eager_stats
from torch_spyre._lowering import format_attr

# Awkward values: DL16 underflow and overflow, infinities, NaN, -0, DL16 rounding ties (1 + 2^-10
# is half a DL16 ulp above 1), fp16's largest, values that round differently via fp16.
VALUES = [0.1, -2.7, 1e-9, 1e10, math.inf, -math.inf, math.nan, -0.0, 1 + 2**-10, 65504.0, 3.0, 1 / 3,
          2 + 3 * 2**-10, -7.000244140625]
DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
SHAPE = (8, 64)


def _bits(t: torch.Tensor) -> torch.Tensor:
    t = t.cpu()
    return t.view({2: torch.int16, 4: torch.int32, 1: torch.int8}[t.element_size()])


# op name -> (attribute keys of one node, result is bool, first operand is a bool condition)
OPS = {
    "add": (["scalar"], False, False), "sub": (["scalar"], False, False), "mul": (["scalar"], False, False),
    "div": (["scalar"], False, False), "maximum": (["scalar"], False, False),
    "minimum": (["scalar"], False, False), "eq": (["scalar"], True, False), "lt": (["scalar"], True, False),
    "ge": (["scalar"], True, False), "where_a": (["a"], False, True), "where_b": (["b"], False, True),
    "clamp_min": (["min"], False, False), "clamp_max": (["max"], False, False),
    "clamp": (["min", "max"], False, False),
}


def _graph(op: str, dt: str, attr_values: list[list[str]]) -> str:
    """One node per entry of attr_values (its attributes' texts), each a graph output."""
    keys, to_bool, cond = OPS[op]
    name = op.split("_")[0]
    params = ("%c: bool[8, 64], " if cond else "") + f"%x: {dt}[8, 64]"
    lines, outs = [], []
    for i, vals in enumerate(attr_values):
        operands = (["%c"] if cond else []) + ["%x"] + [f"{k}={v}" for k, v in zip(keys, vals)]
        lines.append(f"  %o{i} = {name}({', '.join(operands)}) : {'bool' if to_bool else dt}[8, 64]")
        outs.append(f"%o{i}")
    return f"graph({params}) {{\n" + "\n".join(lines) + f"\n  return ({', '.join(outs)})\n}}\n"


@pytest.mark.parametrize("dt", sorted(DTYPES))
@pytest.mark.parametrize("op", sorted(OPS))
def test_runtime_scalars_are_bit_exact_with_compiled_in_constants(op, dt):
    """The same graph with each value compiled in and with each value a runtime scalar gives
    identical bits (fp16/bf16 constants are rounded to DL16 through fp32 in both)."""
    nkeys = len(OPS[op][0])
    values = [v for v in VALUES if not (op.startswith("clamp") and math.isnan(v) and dt != "f32")]
    if nkeys == 2:
        pairs = [[v, w] for v, w in zip(values, [-x for x in values[::-1]])]
    else:
        pairs = [[v] for v in values]
    scalars = [v for p in pairs for v in p]
    const_text = _graph(op, dt, [[format_attr(v) for v in p] for p in pairs])
    if dt == "f32" and (OPS[op][1] or OPS[op][2]) and "stick geometry" in _C.check_graph(const_text):
        pytest.skip("fp32 comparisons and where with a bool condition do not compile on the card yet")
    runtime = _C.CompiledGraph(_graph(op, dt, [[f"${i * nkeys + j}" for j in range(nkeys)]
                                               for i in range(len(pairs))]))
    assert runtime.num_scalars == len(scalars)
    assert any(".scalars $" in l for l in runtime.listings())
    constant = _C.CompiledGraph(const_text)
    assert constant.num_scalars == 0 and not any(".scalars" in l for l in constant.listings())
    x = (torch.randn(SHAPE) * 4).to(DTYPES[dt])
    x[0, :8] = torch.tensor([0.0, -0.0, math.inf, -math.inf, 1e-9, 1 + 2**-10, 3.0, -2.7])
    inputs = ([(torch.randn(SHAPE) > 0).to("spyre")] if OPS[op][2] else []) + [x.to("spyre")]
    got, want = runtime.run(inputs, scalars), constant.run(inputs)
    for i, (g, w) in enumerate(zip(got, want)):
        assert torch.equal(_bits(g), _bits(w)), (op, dt, pairs[i])


def test_1500_distinct_scalars_compile_one_kernel():
    a = (torch.randn(24, 96) * 3).to(torch.float16)
    sa = a.to("spyre")
    before = eager_stats.compiled
    for i in range(1500):
        s = (1.0 + i / 997) * (-1) ** i
        torch.testing.assert_close((sa * s).cpu(), a * s, atol=0.1, rtol=0.1)
    assert eager_stats.compiled == before + 1


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_eager_scalar_ops_reuse_one_kernel(dtype):
    a = (torch.randn(12, 80) * 3).to(dtype)
    sa = a.to("spyre")
    cond = torch.randn(12, 80) > 0
    scond = cond.to("spyre")
    ops = [lambda t, s: t + s, lambda t, s: t - s, lambda t, s: s - t, lambda t, s: t * s, lambda t, s: t / s,
           lambda t, s: torch.add(t, 1.5, alpha=s), lambda t, s: t.clamp(min=-abs(s)),
           lambda t, s: t.clamp(max=abs(s)), lambda t, s: t.clamp(-abs(s), abs(s) + 1),
           lambda t, s: torch.where(scond if t.device.type == "spyre" else cond, t, s),
           lambda t, s: torch.where(scond if t.device.type == "spyre" else cond, s, t),
           lambda t, s: t > s, lambda t, s: t <= s, lambda t, s: t + torch.tensor(s)]
    tol = 1e-5 if dtype == torch.float32 else 0.1
    for i, f in enumerate(ops):
        f(sa, 0.75).cpu()
        before = eager_stats.compiled
        for s in (2.5, -0.3125, 7.0):
            got, want = f(sa, s).cpu(), f(a, s)
            if want.dtype == torch.bool:
                assert torch.equal(got, want) or (got != want).float().mean() < 0.01, i
            else:
                torch.testing.assert_close(got, want, atol=tol, rtol=tol), i
        assert eager_stats.compiled == before, f"op {i} compiled per value"


def test_eager_result_equals_the_compiled_in_constant():
    x = torch.randn(SHAPE, dtype=torch.float16)
    for v in (0.1, 1 + 2**-10, -7.000244140625):
        const = _C.CompiledGraph(_graph("mul", "f16", [[format_attr(v)]]))
        assert torch.equal(_bits((x.to("spyre") * v)), _bits(const.run([x.to("spyre")])[0]))


def test_nan_clamp_bound_is_a_compiled_in_constant():
    """clip's NaN bound is not a DL16 value: it stays a constant (its own kernel), and the result
    is torch's (NaN everywhere)."""
    a = torch.randn(6, 64)
    before = eager_stats.compiled
    out = a.to("spyre").clamp(min=math.nan).cpu()
    assert torch.isnan(out).all() and torch.isnan(a.clamp(min=math.nan)).all()
    assert eager_stats.compiled == before + 1


def test_runtime_scalar_errors():
    g = _C.CompiledGraph(_graph("mul", "f16", [["$0"]]))
    x = torch.randn(SHAPE, dtype=torch.float16).to("spyre")
    with pytest.raises(RuntimeError, match=r"expects 1 runtime scalars \(\$0\.\.\), got 0"):
        g.run([x])
    with pytest.raises(RuntimeError, match="expects 1 runtime scalars"):
        g.run([x], [1.0, 2.0])
    sel = "graph(%x: f16[8, 64]) {\n  %o = select(%x, dim=$0, index=0) : f16[64]\n  return (%o)\n}\n"
    assert "dim=$0: a runtime scalar where an integer is needed" in _C.check_graph(sel)
    sp = "graph(%x: f16[8, 64]) {\n  %o = softplus(%x, beta=$0) : f16[8, 64]\n  return (%o)\n}\n"
    assert "runtime scalar $0 where a compile-time number is needed" in _C.check_graph(sp)
    bad = "graph(%x: f16[8, 64]) {\n  %o = mul(%x, scalar=$-1) : f16[8, 64]\n  return (%o)\n}\n"
    assert "runtime scalar number" in _C.check_graph(bad)


def test_eager_cache_is_lru_bounded(monkeypatch):
    monkeypatch.setenv("SPYRE_EAGER_CACHE_SIZE", "2")
    xs = [torch.randn(3 + i, 64, dtype=torch.float16) for i in range(3)]
    for x in xs:
        (x.to("spyre") * 2).cpu()
    torch.softmax(xs[0].to("spyre"), -1).cpu()  # a decomposed op: its cache is trimmed on insert
    assert len(eager_stats.texts) <= 2 and len(_eager._decomp_cache) <= 2
    before = eager_stats.compiled
    (xs[2].to("spyre") * 3).cpu()  # most recent: still cached
    assert eager_stats.compiled == before
    (xs[0].to("spyre") * 3).cpu()  # evicted: compiled again
    assert eager_stats.compiled == before + 1
    monkeypatch.setenv("SPYRE_EAGER_CACHE_SIZE", "0")
    with pytest.raises(ConfigError, match=r"^invalid SPYRE_EAGER_CACHE_SIZE value '0' \(expected an integer in 1\.\.1000000\)$"):
        torch.randn(5, 77, dtype=torch.float16).to("spyre") * 2


def test_compile_history_is_bounded_with_absolute_indexes():
    from torch_spyre._build import CompileHistory

    h = CompileHistory(keep=3)
    for i in range(5):
        h.append(i)
    assert len(h) == 5 and list(h) == [2, 3, 4] and h[-1] == 4 and h[-2:] == [3, 4]
    assert h[1:] == [2, 3, 4] and h[4] == 4
    with pytest.raises(IndexError, match="not kept"):
        h[0]


def test_dump_dir_and_debug_cover_eager_ops(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SPYRE_DUMP_DIR", str(tmp_path))
    monkeypatch.setenv("SPYRE_DEBUG", "1")
    x = torch.randn(9, 71, dtype=torch.float16)
    torch.testing.assert_close((x.to("spyre") * 1.25).cpu(), x * 1.25, atol=0.1, rtol=0.1)
    assert "[spyre] compiled eager aten.mul.Tensor: 1 kernels" in capsys.readouterr().out
    (d,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    names = {p.name for p in d.iterdir()}
    assert {"eager_op.txt", "graph.txt", "sdsc_0.json", "sdsc_0.lst", "passes.txt"} <= names, names
    assert (d / "eager_op.txt").read_text() == "aten.mul.Tensor\n"
    assert "mul(%x0, scalar=$0)" in (d / "graph.txt").read_text()
    assert '"argIdx_": 0' in (d / "sdsc_0.json").read_text()
    assert ".scalars $0:dl16" in (d / "sdsc_0.lst").read_text()
