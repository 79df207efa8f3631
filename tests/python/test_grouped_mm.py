"""Grouped matmuls on the card (_decompositions_grouped_mm.py): the dense and the tiled form,
strict, against the CPU on the card's fp16 inputs, and the two forms equal to the last bit."""

from __future__ import annotations

import pytest
import torch

from torch_spyre import _decompositions_grouped_mm as G


def _case(groups: int, rows: int, k: int, n: int, *, empty: bool = False, tail: int = 0, transposed: bool = False):
    g = torch.Generator().manual_seed(groups * 1000 + rows)
    x = torch.randn(rows, k, generator=g).half()
    w = (torch.randn(groups, n, k, generator=g) * 0.1).half().transpose(1, 2) if transposed else \
        (torch.randn(groups, k, n, generator=g) * 0.1).half()
    sizes = torch.multinomial(torch.ones(groups), rows, replacement=True, generator=g).bincount(minlength=groups)
    if empty:  # groups 0 and 3 get no rows
        sizes[1] += sizes[0]
        sizes[2] += sizes[3]
        sizes[0] = sizes[3] = 0
    offs = sizes.cumsum(0).to(torch.int32)
    if tail:  # the last `tail` rows belong to no group: their output is zero
        offs = offs.clamp(max=rows - tail)
    return x, w, offs


def _reference(x, w, offs):
    out = torch.zeros(x.shape[0], w.shape[2])
    start = 0
    for gi, end in enumerate(offs.tolist()):
        out[start:end] = x[start:end].float() @ w[gi].float()
        start = max(start, end)
    return out


def _on_card(x, w, offs, form, monkeypatch):
    monkeypatch.setattr(G, "GROUPED_MM_FORM", form)
    monkeypatch.setenv("SPYRE_STRICT", "1")
    torch._dynamo.reset()
    f = torch.compile(lambda a, b, c: G.grouped_mm(a, b, c), dynamic=False)
    return f(x.to("spyre"), w.to("spyre"), offs.to("spyre")).cpu()


@pytest.mark.parametrize("groups,rows,k,n,kw", [
    (4, 128, 64, 64, {}),
    (16, 100, 64, 96, {"tail": 5}),  # rows not a multiple of the tile, rows past the last group
    (8, 37, 32, 64, {"empty": True}),  # empty groups
    (6, 64, 64, 128, {"transposed": True}),  # weights as transformers passes them (a transposed view)
])
def test_tiled_and_dense_forms_agree_bit_for_bit_and_with_cpu(groups, rows, k, n, kw, monkeypatch):
    x, w, offs = _case(groups, rows, k, n, **kw)
    tiled = _on_card(x, w, offs, "tiled", monkeypatch)
    dense = _on_card(x, w, offs, "dense", monkeypatch)
    assert torch.equal(tiled, dense)
    torch.testing.assert_close(tiled.float(), _reference(x, w, offs), atol=0.1, rtol=0.1)
    if kw.get("tail"):
        assert not tiled[-kw["tail"]:].any()


def test_the_tiled_form_is_chosen_for_many_rows_and_groups():
    assert G.grouped_mm_form(4, 128) == "dense"  # the small MoE of test_models.py
    assert G.grouped_mm_form(64, 128) == "dense"  # weight-bound: the gather costs more
    assert G.grouped_mm_form(64, 1024) == "tiled"  # 65,536 dense rows against 3,040
    assert G.grouped_mm_form(16, 1024) == "tiled"


def test_outside_the_bounds_is_not_implemented():
    x, w, offs = _case(4, 32, 32, 32)
    assert G.grouped_mm(x, w, offs.float()) is NotImplemented  # offsets must be integers
    assert G.grouped_mm(x, w[:3], offs) is NotImplemented  # one offset per group
    big = torch.zeros(G.GROUPED_MM_MAX_GROUPS + 1, 32, 32, dtype=torch.float16)
    assert G.grouped_mm(x, big, torch.zeros(big.shape[0], dtype=torch.int32)) is NotImplemented
