"""Bad indices are never silently ignored (issue 18): the one-hot forms (one_hot, index_add,
scatter_add, gather) check their indices on the card through a dma.gather from arange(n), and
x[idx] / index_put / index_copy gather or scatter through the checked dma forms directly; an
index outside the dim is a device fault that fails the launch, in eager kernels and compiled
graphs, in both engines, raised as ``DeviceIndexError``: both the ``IndexError`` torch raises
for x[idx] / index_put / index_copy and the ``RuntimeError`` it raises for the one-hot forms. Negative indices wrap where torch wraps (advanced indexing: x[idx],
x[idx] = v) and fault where torch raises. Strict mode: everything runs on the card."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F


@pytest.fixture(autouse=True)
def _strict(monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    torch._dynamo.reset()


def _fault(kind: str, bad: int, n: int) -> str:
    return (rf"kernel \w+: dma\.{kind} on core \d+: index {bad} \(entry \d+ of the index list\) is outside "
            rf"the table's rows \[0, {n}\)")


def _run(f, mode, *args):
    g = f if mode == "eager" else torch.compile(f, dynamic=False)
    out = g(*[a.to("spyre") for a in args])
    return out.cpu()


x16 = torch.randn(6, 40, dtype=torch.float16)
src16 = torch.randn(3, 40, dtype=torch.float16)

# (name, f, args, index that is bad at entry 1, n of the checked dim)
CASES = [
    ("one_hot", lambda i: F.one_hot(i, 7), lambda bad: (torch.tensor([3, bad, 0]),), 7),
    ("index_add", lambda x, i, s: x.index_add(0, i, s), lambda bad: (x16, torch.tensor([0, bad, 2]), src16), 6),
    ("scatter_add", lambda x, i, s: x.scatter_add(0, i, s),
     lambda bad: (torch.zeros(5, 3), torch.tensor([[1, 0, 2], [4, bad, 0]]), torch.ones(2, 3)), 5),
    ("gather", lambda x, i: torch.gather(x, 1, i), lambda bad: (x16, torch.tensor([[1, bad]] * 6)), 40),
]


@pytest.mark.parametrize("engine", ["jit", "interp"])
@pytest.mark.parametrize("mode", ["eager", "compiled"])
@pytest.mark.parametrize("name,f,args,n", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("which", ["past_end", "negative"])
def test_a_one_hot_form_faults_on_a_bad_index(name, f, args, n, which, mode, engine, monkeypatch):
    monkeypatch.setenv("SPYRE_ENGINE", engine)
    bad = n if which == "past_end" else -1
    with pytest.raises(RuntimeError):
        f(*args(bad))  # torch raises too
    with pytest.raises(RuntimeError, match=_fault("gather", bad, n)) as e:
        _run(f, mode, *args(bad))
    assert isinstance(e.value, IndexError)


@pytest.mark.parametrize("name,f,args,n", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("mode", ["eager", "compiled"])
def test_a_one_hot_form_with_good_indices_matches_torch(name, f, args, n, mode):
    a = args(n - 1)
    a = tuple(t.to("spyre").cpu() for t in a)  # the values the card holds
    got = _run(f, mode, *a)
    ref = f(*a)
    assert got.dtype == ref.dtype
    torch.testing.assert_close(got, ref, atol=0.1, rtol=0.1)


TABLES = {1: torch.arange(9, dtype=torch.float16) * 3, 2: torch.randn(9, 64, dtype=torch.float16),
          3: torch.randn(9, 2, 64, dtype=torch.float16)}


@pytest.mark.parametrize("engine", ["jit", "interp"])
@pytest.mark.parametrize("mode", ["eager", "compiled"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_advanced_indexing_wraps_negative_indices_as_torch(rank, mode, engine, monkeypatch):
    if mode == "eager" and rank != 2:
        pytest.skip("eager x[idx] runs on the card for a 2-d x")
    monkeypatch.setenv("SPYRE_ENGINE", engine)
    x = TABLES[rank].to("spyre").cpu()
    idx = torch.tensor([-1, 0, -9, 4, 8])
    assert torch.equal(_run(lambda t, i: t[i], mode, x, idx), x[idx])
    for bad in (9, -10):  # torch raises IndexError for both
        with pytest.raises(IndexError):
            x[torch.tensor([0, bad])]
        with pytest.raises(IndexError, match=_fault("gather", bad if bad > 0 else bad + 9, 9)):
            _run(lambda t, i: t[i], mode, x, torch.tensor([0, bad]))


@pytest.mark.parametrize("engine", ["jit", "interp"])
def test_index_put_wraps_negative_indices_and_faults_outside(engine, monkeypatch):
    monkeypatch.setenv("SPYRE_ENGINE", engine)
    cache = torch.zeros(2, 2, 8, 64, dtype=torch.float16)
    k = torch.randn(2, 2, 2, 64, dtype=torch.float16).to("spyre").cpu()

    def update(c, pos, k):
        c = c.clone()
        c[:, :, pos] = k
        return c

    pos = torch.tensor([-1, 2])
    ref = update(cache, pos, k)
    got = torch.compile(update, dynamic=False)(cache.to("spyre"), pos.to("spyre"), k.to("spyre")).cpu()
    assert torch.equal(got, ref)
    eager = cache.to("spyre")
    eager[:, :, pos.to("spyre")] = k.to("spyre")
    assert torch.equal(eager.cpu(), ref)
    with pytest.raises(IndexError, match=_fault("scatter", 8, 8)):
        torch.compile(update, dynamic=False)(cache.to("spyre"), torch.tensor([1, 8]).to("spyre"),
                                             k.to("spyre")).cpu()

    v = torch.zeros(9, dtype=torch.float16)

    def put1(v, i):
        v = v.clone()
        v[i] = 5.0
        return v

    assert torch.equal(torch.compile(put1, dynamic=False)(v.to("spyre"), torch.tensor([-2, 0]).to("spyre")).cpu(),
                       put1(v, torch.tensor([-2, 0])))


def test_index_copy_faults_on_a_negative_index_as_torch_raises():
    x = torch.zeros(1, 8, 64, dtype=torch.float16)
    s = torch.ones(1, 1, 64, dtype=torch.float16)
    with pytest.raises(IndexError):
        x.index_copy(1, torch.tensor([-1]), s)
    with pytest.raises(IndexError, match=_fault("scatter", -1, 8)):
        x.to("spyre").index_copy(1, torch.tensor([-1]).to("spyre"), s.to("spyre")).cpu()
