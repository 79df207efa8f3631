"""Advanced indexing by several index tensors on the card (issue 18: ``aten.index.Tensor``
beyond one index on dim 0): broadcast index tensors, whole dims (None) before, between and
after them as torch places the result dims, negative indices, one index tensor on a later dim.
Strict mode, compiled; a gather is exact, so results equal torch's on the card's values. An
index outside its dim is a DeviceIndexError, also where the flat row it would make is valid."""

from __future__ import annotations

import pytest
import torch

from torch_spyre._errors import DeviceIndexError
from torch_spyre._compile import compile_stats
from torch_spyre.testing import cached_randn


@pytest.fixture(autouse=True)
def _strict(monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    torch._dynamo.reset()


X = (5, 6, 7, 64)
I2 = torch.tensor([[0, 4], [-1, 2]])  # dim 0 (size 5), negative wraps
J = torch.tensor([1, 5])
K = torch.tensor([3, -7])

CASES = {
    "adjacent_front": (lambda x, i, j, k: x[i, j], "int64"),
    "adjacent_after_slice": (lambda x, i, j, k: x[:, j, k], "int64"),
    "separated": (lambda x, i, j, k: x[i, :, k], "int64"),
    "three": (lambda x, i, j, k: x[i[0], j, k], "int64"),
    "one_on_dim1": (lambda x, i, j, k: x[:, j], "int32"),
    "index_and_int": (lambda x, i, j, k: x[i, 2], "int32"),
    "all_dims_of_2d": (lambda x, i, j, k: x[0, :, 0][j, k], "int64"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_advanced_index_on_the_card(name):
    f, dtype = CASES[name]
    x = cached_randn(X, key="advidx")
    idx = [t.to(getattr(torch, dtype)) for t in (I2, J, K)]
    got = torch.compile(f, dynamic=False)(x.to("spyre"), *[t.to("spyre") for t in idx]).cpu()
    ref = f(x.to("spyre").cpu(), *idx)  # the card's fp16 values: a gather is exact
    assert got.shape == ref.shape
    assert torch.equal(got, ref)
    assert compile_stats.partitions == 1


@pytest.mark.parametrize("which", ["second_past_end", "second_negative", "first_past_end"])
def test_advanced_index_faults_on_a_bad_index(which):
    x = cached_randn((4, 6, 64), key="advidx_bad")
    i, j = torch.tensor([1, 2]), torch.tensor([0, 3])
    if which == "second_past_end":  # flat row 1 * 6 + 6 = 12 would be a valid row
        j = torch.tensor([0, 6])
    elif which == "second_negative":
        j = torch.tensor([-7, 0])
    else:
        i = torch.tensor([4, 0])
    f = lambda x, i, j: x[i, j]  # noqa: E731
    with pytest.raises(IndexError):
        f(x, i, j)  # torch raises too
    with pytest.raises(DeviceIndexError, match=r"dma\.gather on core \d+: index"):
        torch.compile(f, dynamic=False)(x.to("spyre"), i.to("spyre"), j.to("spyre")).cpu()
