"""Mixture-of-experts routing on the card (SPYRE_STRICT=1: nothing on the CPU): topk, sort,
histc, integer floor_divide, 1-d x[idx] / x[idx] = v and grouped matmuls, as decomposed in
python/torch_spyre/_decompositions_routing.py. Against torch CPU: values and integer results
exactly (inputs exact in DL16), matmuls within atol = rtol = 0.1. Equal values: torch's CPU
topk returns them in an unspecified order; ours is the lowest index first, which is the order
of torch's stable sort, so indices are checked against that."""

from __future__ import annotations

import zlib

import pytest
import torch


def _gen(key) -> torch.Generator:
    return torch.Generator().manual_seed(zlib.crc32(repr(key).encode()))


def _distinct(shape, dtype, key) -> torch.Tensor:
    """Distinct values exact in DL16 (a permutation of quarters)."""
    n = 1
    for s in shape:
        n *= s
    return (torch.randperm(n, generator=_gen(key)).float() / 4 - n / 8).view(shape).to(dtype)


def _ints(shape, dtype, key, lo, hi) -> torch.Tensor:
    return torch.randint(lo, hi, shape, generator=_gen((shape, dtype, key)), dtype=dtype)


def _on_card(fn, *args):
    torch._dynamo.reset()
    out = torch.compile(fn, dynamic=False)(*[a.to("spyre") for a in args])
    return out.cpu() if isinstance(out, torch.Tensor) else tuple(o.cpu() for o in out)


@pytest.fixture(autouse=True)
def _strict(monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")


def _expected_topk(x, k, dim, largest):
    """torch.topk's values; indices in the lowest-index-first order of a stable sort."""
    idx = torch.sort(x, dim=dim, descending=largest, stable=True)[1].narrow(dim, 0, k)
    return torch.topk(x, k, dim=dim, largest=largest)[0], idx


TOPK = [((64, 8), torch.float32, 2, -1, True), ((64, 8), torch.float16, 3, -1, False), ((5, 40), torch.float16, 1, 1, True),
        ((12, 6, 3), torch.float32, 4, 0, True), ((3, 70), torch.float32, 16, -1, False)]


@pytest.mark.parametrize("shape,dtype,k,dim,largest", TOPK)
def test_topk_floats(shape, dtype, k, dim, largest):
    x = _distinct(shape, dtype, ("topk", shape, k))
    got = _on_card(lambda t: torch.topk(t, k, dim=dim, largest=largest), x)
    values, idx = _expected_topk(x, k, dim, largest)
    assert got[0].dtype == dtype and got[1].dtype == torch.int64
    assert torch.equal(got[0], values) and torch.equal(got[1], idx)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_ints_with_ties_lowest_index_first(dtype, largest):
    x = _ints((10, 6), dtype, "ties", -3, 3)
    got = _on_card(lambda t: torch.topk(t, 3, dim=0, largest=largest), x)
    values, idx = _expected_topk(x, 3, 0, largest)
    assert torch.equal(got[0], values) and torch.equal(got[1], idx)


def test_topk_nan_is_the_largest_fp32():
    x = _distinct((4, 9), torch.float32, "nan")
    x[0, 3] = x[0, 7] = x[2, 0] = float("nan")
    x[1, 2] = float("-inf")
    x[3, :] = float("-inf")
    for largest in (True, False):
        got = _on_card(lambda t: torch.topk(t, 4, dim=-1, largest=largest), x)
        values, idx = _expected_topk(x, 4, -1, largest)
        assert torch.equal(got[0].isnan(), values.isnan())
        assert torch.equal(got[0].nan_to_num(), values.nan_to_num()) and torch.equal(got[1], idx)


def test_topk_eager_on_the_card():
    x = _distinct((32, 8), torch.float16, "eager")
    got = torch.topk(x.to("spyre"), 2)
    values, idx = _expected_topk(x, 2, -1, True)
    assert got[0].device.type == "spyre"
    assert torch.equal(got[0].cpu(), values) and torch.equal(got[1].cpu(), idx)


SORTS = [((128,), torch.int64, -1, False), ((8, 33), torch.float16, -1, True), ((20, 5), torch.float32, 0, False),
         ((3, 4, 17), torch.int32, 1, True)]


@pytest.mark.parametrize("shape,dtype,dim,descending", SORTS)
def test_sort_is_stable(shape, dtype, dim, descending):
    x = _ints(shape, torch.int64, "sort", 0, 4).to(dtype)  # many ties: the stable order is checked
    got = _on_card(lambda t: torch.sort(t, dim=dim, descending=descending, stable=True), x)
    ref = torch.sort(x, dim=dim, descending=descending, stable=True)
    assert got[0].dtype == dtype and got[1].dtype == torch.int64
    assert torch.equal(got[0], ref[0]) and torch.equal(got[1], ref[1])


def test_sort_nan_last_and_default_overload():
    x = _distinct((2, 12), torch.float32, "snan")
    x[0, 4] = x[0, 9] = x[1, 1] = float("nan")
    for descending in (False, True):
        got = _on_card(lambda t: torch.sort(t, descending=descending), x)
        ref = torch.sort(x, descending=descending, stable=True)
        assert torch.equal(got[0].isnan(), ref[0].isnan())
        assert torch.equal(got[0].nan_to_num(), ref[0].nan_to_num()) and torch.equal(got[1], ref[1])


@pytest.mark.parametrize("bins,lo,hi", [(4, 0, 3), (10, -2.5, 2.5), (7, 0.1, 0.9)])
def test_histc_floats(bins, lo, hi):
    x = torch.cat([torch.linspace(lo, hi, bins + 1), torch.tensor([lo - 1, hi + 0.5, float("nan")]),
                   _distinct((60 - bins,), torch.float32, "h") / 8]).view(8, 8)
    got = _on_card(lambda t: torch.histc(t, bins=bins, min=lo, max=hi), x)
    assert got.dtype == torch.float32
    assert torch.equal(got, torch.histc(x, bins=bins, min=lo, max=hi))


def test_histc_of_expert_ids_int32_as_transformers_calls_it():
    # grouped_mm experts on a non-CPU device: histc(expert_ids.int(), bins=E, min=0, max=E-1)
    ids = _ints((128,), torch.int64, "ids", 0, 8)
    got = _on_card(lambda t: torch.histc(t.int(), bins=8, min=0, max=7), ids)
    assert got.dtype == torch.int32
    assert torch.equal(got, torch.bincount(ids, minlength=8).int())
    odd = _ints((50,), torch.int32, "odd", -4, 12)  # edges at non-integers: (e - min) * bins // (max - min)
    got = _on_card(lambda t: torch.histc(t, bins=3, min=-2, max=9), odd)
    keep = odd[(odd >= -2) & (odd <= 9)].long()
    assert torch.equal(got, torch.bincount(((keep + 2) * 3 // 11).clamp(max=2), minlength=3).int())


@pytest.mark.parametrize("c", [2, 3, -4, 7, 1000])
def test_integer_floor_divide(c):
    x = torch.cat([_ints((120,), torch.int64, ("fd", c), -100000, 100000), torch.tensor([0, 1, -1, c, -c, c - 1, 2**30, -2**31])])
    assert torch.equal(_on_card(lambda t: t // c, x), x // c)
    assert torch.equal(torch.floor_divide(x.to("spyre"), c).cpu(), x // c)  # eager, on the card


def test_one_dim_gather_and_scatter_by_a_permutation():
    # grouped_mm experts: sample_weights[perm]; inv_perm[perm] = arange (a 1-d index_put)
    perm = torch.randperm(128, generator=_gen("perm"))
    w = _distinct((128,), torch.float16, "w")

    def fn(p, v):
        inv = torch.empty_like(p)
        inv[p] = torch.arange(p.numel(), device=p.device)
        return v[p], inv

    got = _on_card(fn, perm, w)
    assert torch.equal(got[0], w[perm]) and torch.equal(got[1], torch.argsort(perm))


def test_one_dim_gather_out_of_range_is_a_device_error():
    idx = torch.zeros(40, dtype=torch.int64)
    idx[7] = 99
    with pytest.raises(RuntimeError, match=r"dma.gather on core \d+: index 99"):
        _on_card(lambda v, i: v[i] * 2, _distinct((64,), torch.float16, "oob"), idx)


def _grouped_reference(x, w, offs):
    out, start = torch.zeros(x.shape[0], w.shape[2]), 0
    for g, end in enumerate(offs.tolist()):
        out[start:end] = x[start:end].float() @ w[g].float()
        start = end
    return out


@pytest.mark.parametrize("offs", [[10, 10, 40, 64], [0, 30, 31, 50]])  # an empty group; rows past offs[-1]
def test_grouped_mm_dense_masked(offs):
    from torch_spyre._decompositions_grouped_mm import _grouped_mm_dense

    x = torch.randn(64, 96, generator=_gen("gx")).half()
    w = (torch.randn(4, 96, 80, generator=_gen("gw")) / 8).half()
    o = torch.tensor(offs, dtype=torch.int32)
    got = _on_card(_grouped_mm_dense, x, w, o)
    torch.testing.assert_close(got.float(), _grouped_reference(x, w, o), atol=0.1, rtol=0.1)
    try:
        import transformers.integrations.moe  # noqa: F401  (registers torch.ops.transformers.grouped_mm_fallback)
    except ImportError:
        return
    else:
        got = _on_card(lambda a, b, c: torch.ops.transformers.grouped_mm_fallback(a, b, offs=c), x, w, o)
        torch.testing.assert_close(got.float(), _grouped_reference(x, w, o), atol=0.1, rtol=0.1)


def test_beyond_the_bounds_say_unsupported():
    x = _distinct((4, 40), torch.float16, "big")
    with pytest.raises(Exception, match=r"Unsupported: aten.topk.default \(topk\) cannot run on spyre"):
        _on_card(lambda t: torch.topk(t, 17), x)  # k > 16: no card kernel, strict mode
    with pytest.raises(Exception, match=r"Unsupported: aten.histc.default \(histc\) cannot run on spyre"):
        _on_card(lambda t: torch.histc(t.float()), x)  # min == max: the data's range


def test_one_hot():
    ids = _ints((3, 40), torch.int64, "oh", 0, 8)
    got = _on_card(lambda t: torch.nn.functional.one_hot(t, num_classes=9), ids)
    assert got.dtype == torch.int64 and torch.equal(got, torch.nn.functional.one_hot(ids, num_classes=9))


@pytest.mark.parametrize("dim", [0, 1])
def test_index_add_one_hot_matmul(dim):
    # the eager experts loop: final.index_add_(0, token_idx, expert_out) (repeated indices add up)
    x = torch.randn(64, 96, generator=_gen(("ia", dim))).half()
    idx = _ints((40,), torch.int64, ("iai", dim), 0, x.shape[dim])
    src = torch.randn((40, 96) if dim == 0 else (64, 40), generator=_gen(("ias", dim))).half()
    got = _on_card(lambda a, i, s: a.index_add(dim, i, s, alpha=0.5), x, idx, src)
    ref = x.float().index_add(dim, idx, src.float(), alpha=0.5)
    torch.testing.assert_close(got.float(), ref, atol=0.1, rtol=0.1)
    e = x.to("spyre")
    e.index_add_(dim, idx.to("spyre"), src.to("spyre"), alpha=0.5)  # eager, in place, on the card
    torch.testing.assert_close(e.cpu().float(), ref, atol=0.1, rtol=0.1)


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32])
def test_scatter_add(dtype):
    # load_balancing_loss_func: zeros(E).scatter_add_(0, expert_ids, mask)
    x = _ints((8, 6), torch.int64, "sa", -5, 5).to(dtype)
    idx = _ints((20, 6), torch.int64, "sai", 0, 8)
    src = _ints((20, 6), torch.int64, "sas", -9, 9).to(dtype)
    got = _on_card(lambda a, i, s: a.scatter_add(0, i, s), x, idx, src)
    assert torch.equal(got, x.scatter_add(0, idx, src))


def test_rows_of_a_3d_table():
    # batched_mm experts: gate_up_proj[expert_ids] (an [E, 2I, H] table by S expert ids)
    w = _distinct((4, 6, 70), torch.float16, "w3")
    ids = _ints((9,), torch.int64, "ids3", 0, 4)
    assert torch.equal(_on_card(lambda t, i: t[i], w, ids), w[ids])


@pytest.mark.parametrize("engine", ["jit", "interp"])
@pytest.mark.parametrize("shape,to", [((64, 2), (128,)), ((3, 40), (120,)), ((128,), (64, 2))])
def test_int_reshape_moving_lanes_keeps_every_bit(shape, to, engine, monkeypatch):
    # top_k_index.reshape(-1): [S, k] -> [S*k] moves int32 lanes between sticks, as f32 moves
    # (whole 4-byte lanes, NaN bit patterns of the float view included), in one compiled graph
    from torch_spyre import _compile

    monkeypatch.setenv("SPYRE_ENGINE", engine)
    x = _ints(shape, torch.int32, "lanes", -2**31, 2**31 - 1)
    x.view(-1)[:4] = torch.tensor([-1, 2143289345, 1, 2**31 - 1], dtype=torch.int32)
    assert torch.equal(_on_card(lambda t: t.reshape(to) + 0, x), x.reshape(to))
    assert _compile.compile_stats.partitions == 1
