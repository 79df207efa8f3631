"""Views inside compiled graphs: zero-copy reshapes (view, _unsafe_view, squeeze, unsqueeze)
stay in the graph, so a block of ops with reshapes between them is one spyre partition."""

import pytest
import torch

from torch_spyre._compile import compile_stats
from torch_spyre.testing import compare_with_cpu


def _x(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).half()


@pytest.mark.parametrize("fn", [
    lambda x: (x.view(64, 4, 64).exp() * 2).view(64, 256),
    lambda x: (x.unsqueeze(0).exp() + 1).squeeze(0),
    lambda x: x.reshape(64, 4, 64).transpose(0, 1).contiguous().neg(),
    lambda x: x.view(64, 4, 64).transpose(0, 1).transpose(0, 1).reshape(64, 256).abs(),
], ids=["view-split-merge", "unsqueeze-squeeze", "reshape-permute", "heads-roundtrip"])
def test_zero_copy_views_stay_in_one_partition(fn):
    fb = compare_with_cpu(fn, _x(64, 256), run_eager=False)
    assert not fb["compile"], fb
    assert compile_stats.partitions == 1
    assert compile_stats.fallback_nodes == 0


@pytest.mark.parametrize("fn,shape", [
    (lambda x: x.exp().view(256, 64).neg(), (4, 64, 64)),
    (lambda x: (x * 2).reshape(6, 50).exp(), (2, 3, 50)),
    (lambda x: (x + 1).view(2, 32, 256).relu(), (64, 256)),
], ids=["merge-rows", "merge-padded", "split-rows"])
def test_reshape_reordering_sticks_stays_on_the_card(fn, shape):
    # Merging or splitting leading dims under the same last dim reorders whole sticks: one
    # restickify kernel inside the partition, no host restaging.
    fb = compare_with_cpu(fn, _x(*shape), run_eager=False)
    assert not fb["compile"], fb
    assert compile_stats.partitions == 1


def test_linear_on_a_batch_is_one_partition():
    # nn.Linear on [B, S, H] views to [B*S, H] and back: both views are stick reorderings.
    lin = torch.nn.Linear(256, 128, dtype=torch.float16)
    with torch.no_grad():
        fb = compare_with_cpu(lambda x, w, b: torch.nn.functional.linear(x, w, b).relu(), _x(2, 64, 256),
                              lin.weight.detach(), lin.bias.detach(), run_eager=False)
    assert not fb["compile"], fb
    assert compile_stats.partitions == 1


@pytest.mark.parametrize("shape,to", [
    ((64, 100), (100, 64)),        # neither row count divides the other: through [1, 6400]
    ((64, 32), (32, 64)),          # two rows per stick -> one
    ((32, 64), (64, 32)),
    ((8, 7, 7), (8, 49)),          # flatten of short rows
    ((8, 49), (8, 7, 7)),
    ((6, 4, 64), (4, 6, 64)),      # same last dim, leading dims without a common refinement
    ((2, 16, 96), (2, 16, 3, 32)), # heads of 32 lanes split from a 96-wide row
    ((2, 16, 3, 32), (2, 16, 96)),
    ((400,), (20, 20)),
    ((67, 71), (71, 67)),
], ids=lambda v: "x".join(map(str, v)))
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=["f16", "f32"])
def test_reshape_moving_lanes_stays_on_the_card(shape, to, dtype):
    # A reshape that changes the row length moves elements between lanes: ldu/stu pack and
    # unpack them on the card (SuperDSC `reshape`), inside the one compiled partition.
    x = _x(*shape).to(dtype)
    fb = compare_with_cpu(lambda t: (t * 2).reshape(to).exp(), x, run_eager=False)
    assert not fb["compile"], fb
    assert compile_stats.partitions == 1
    assert compile_stats.fallback_nodes == 0


def test_attention_heads_compile_as_one_partition():
    s, d, h = 64, 256, 4

    def heads(x, w):
        q = (x @ w).view(s, h, d // h).transpose(0, 1)
        att = torch.softmax(q @ q.transpose(-1, -2) * 0.125, dim=-1)
        return (att @ q).transpose(0, 1).reshape(s, d)

    fb = compare_with_cpu(heads, _x(s, d, seed=1), (_x(d, d, seed=2) * 0.05), run_eager=False)
    assert not fb["compile"], fb
    assert compile_stats.partitions == 1


def test_a_clone_of_a_row_view_is_a_copy_not_an_alias():
    """x[:, a:b, c:d] (slices of two row dims, read as a view by elementwise consumers) then
    .contiguous().reshape: the clone used to alias the view, so the reshape read the sliced
    tensor's buffer in order (silently wrong values)."""
    from torch_spyre.testing import compare_with_cpu

    x = torch.randn(1, 6, 7, 64, generator=torch.Generator().manual_seed(3)).to(torch.float16)
    w = torch.randn(64, 16, generator=torch.Generator().manual_seed(4)).to(torch.float16)
    compare_with_cpu(lambda x, w: x.narrow(1, 1, 4).narrow(2, 1, 5).reshape(-1, 64) @ w, x, w, run_eager=False)
    compare_with_cpu(lambda x: x[:, 2:5, 1:6].reshape(-1, 64) * 2, x, run_eager=False)
