"""torch.gather on the card (a one-hot select: eq with an arange, where, sum), in strict mode,
bit-exact against torch.gather on the same device-rounded input: each output is one selected
element plus zeros. BERT's use: gather(token_type_ids_buffer.expand(B, -1), 1, position_ids)."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _strict(monkeypatch):
    monkeypatch.setenv("SPYRE_STRICT", "1")
    torch._dynamo.reset()


def _on_card_and_back(x: torch.Tensor) -> torch.Tensor:
    return x.to("spyre").cpu()  # the values the card holds (DL16 rounding of fp16)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.int32, torch.int64])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather_matches_torch(dtype, dim):
    torch.manual_seed(0)
    x = (torch.randn(8, 100) * 50).to(dtype)
    n = x.shape[dim]
    idx = torch.randint(0, n, (5, 30)) if dim == 0 else torch.randint(0, n, (8, 30))
    f = torch.compile(lambda x, i: torch.gather(x, dim, i))
    got = f(x.to("spyre"), idx.to("spyre")).cpu()
    ref = torch.gather(_on_card_and_back(x), dim, idx)
    assert got.dtype == ref.dtype
    assert torch.equal(got, ref)


def test_gather_of_an_expanded_buffer_as_bert_does():
    buf = torch.zeros(1, 66, dtype=torch.long)
    buf[0, 5] = 3
    pos = torch.arange(2, 66).unsqueeze(0).expand(2, -1)
    f = torch.compile(lambda b, p: torch.gather(b.expand(2, -1), 1, p))
    assert torch.equal(f(buf.to("spyre"), pos.to("spyre")).cpu(), torch.gather(buf.expand(2, -1), 1, pos))


def test_gather_with_a_smaller_index_than_the_source():
    # torch allows index.size(k) <= x.size(k) off the gathered dim
    x = torch.arange(6 * 40, dtype=torch.float32).reshape(6, 40)
    idx = torch.tensor([[3, 0, 39], [1, 1, 2]])
    f = torch.compile(lambda x, i: torch.gather(x, 1, i))
    assert torch.equal(f(x.to("spyre"), idx.to("spyre")).cpu(), torch.gather(x, 1, idx))
