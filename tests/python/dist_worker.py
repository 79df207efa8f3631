"""One rank of the multi-process torch.distributed tests (tests/python/test_distributed.py).

    dist_worker.py SCENARIO RANK WORLD_SIZE INIT_METHOD

Scenarios: ``eager`` (every collective on every dtype against the same collective on CPU
tensors over a gloo group), ``compiled`` (functional collectives inside torch.compile),
``all`` (both, one process start), ``dead`` (rank 1 exits; rank 0 must get torch.distributed's
error), ``timeout`` (rank 1 stays away, alive, until rank 0 has timed out). A rank prints ``RANK<r> OK`` at the end; any failure is an
exception (non-zero exit status and a traceback).
"""

from __future__ import annotations

import datetime
import os
import sys
import time
import warnings

os.environ.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.distributed._functional_collectives as funcol  # noqa: E402

import torch_spyre  # noqa: E402,F401

warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", message=".*downcasting to int32.*")

DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.int32, torch.int64]
R = dist.ReduceOp


def data(rank: int, dtype: torch.dtype, shape: tuple = (4, 64), salt: int = 0) -> torch.Tensor:
    """This rank's input, as the card holds it (fp16 rounded to DL16)."""
    g = torch.Generator().manual_seed(1000 * rank + salt)
    if dtype.is_floating_point:
        x = torch.randn(shape, generator=g).to(dtype)
    else:
        x = torch.randint(-3, 4, shape, generator=g).to(dtype)
    return x.to("spyre").cpu()


def as_card(x: torch.Tensor) -> torch.Tensor:
    """``x`` written to the card and read back: the rounding of the write-back."""
    return x.to("spyre").cpu()


def same(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    if got.dtype != want.dtype or got.shape != want.shape or not torch.equal(got, want):
        diff = (got.double() - want.double()).abs().max().item() if got.shape == want.shape else "shape"
        raise AssertionError(f"{what}: got {got.dtype} {list(got.shape)}, want {want.dtype} "
                             f"{list(want.shape)}, max diff {diff}")


def check_reductions(rank: int, ws: int, ref: object, dt: torch.dtype) -> None:
    ops = [R.SUM, R.MAX, R.MIN, R.PRODUCT] + ([R.AVG] if dt.is_floating_point else [])
    x = data(rank, dt)
    for op in ops:
        s = x.to("spyre")
        layout, ptr = str(s.device_tensor_layout()), s.data_ptr()
        dist.all_reduce(s, op=op)
        if op == R.AVG:
            r = x.clone()
            dist.all_reduce(r, op=R.SUM, group=ref)
            r = r / ws
        else:
            r = x.clone()
            dist.all_reduce(r, op=op, group=ref)
        same(s.cpu(), as_card(r), f"all_reduce {op} {dt}")
        assert str(s.device_tensor_layout()) == layout and s.data_ptr() == ptr, "layout or storage changed"
        if not dt.is_floating_point and op == R.SUM:
            # Exact for ints: the sum of every rank's input, computed here on the CPU.
            same(s.cpu(), sum(data(r_, dt) for r_ in range(ws)).to(dt), f"all_reduce sum {dt} (local)")
    # A tensor in a non-default device layout keeps it.
    if dt == torch.float16:
        stl = torch.spyre.SpyreTensorLayout([4, 64], [64, 1], torch.float16, [1, 0])
        s = x.to("spyre", device_layout=stl)
        dist.all_reduce(s)
        r = x.clone()
        dist.all_reduce(r, group=ref)
        same(s.cpu(), as_card(r), "all_reduce in a dim_order [1, 0] layout")
        assert s.device_tensor_layout() == stl, "the device layout changed"


def check_gathers(rank: int, ws: int, ref: object, dt: torch.dtype) -> None:
    x = data(rank, dt)
    outs = [torch.empty_like(x).to("spyre") for _ in range(ws)]
    dist.all_gather(outs, x.to("spyre"))
    want = [torch.empty_like(x) for _ in range(ws)]
    dist.all_gather(want, x, group=ref)
    for i in range(ws):
        same(outs[i].cpu(), want[i], f"all_gather[{i}] {dt}")
    out = torch.empty((4 * ws, 64), dtype=dt).to("spyre")
    dist.all_gather_into_tensor(out, x.to("spyre"))
    same(out.cpu(), torch.cat(want), f"all_gather_into_tensor {dt}")
    big = data(rank, dt, (4 * ws, 64), salt=1)
    o = torch.empty((4, 64), dtype=dt).to("spyre")
    dist.reduce_scatter_tensor(o, big.to("spyre"))
    r = torch.empty((4, 64), dtype=dt)
    dist.reduce_scatter_tensor(r, big, group=ref)
    same(o.cpu(), as_card(r), f"reduce_scatter_tensor {dt}")
    o2 = torch.empty((4, 64), dtype=dt).to("spyre")
    dist.reduce_scatter(o2, [c.to("spyre") for c in big.chunk(ws)], op=R.MAX)
    r2 = torch.empty((4, 64), dtype=dt)
    dist.reduce_scatter(r2, list(big.chunk(ws)), op=R.MAX, group=ref)
    same(o2.cpu(), r2, f"reduce_scatter max {dt}")
    b = x.to("spyre")
    dist.broadcast(b, src=ws - 1)
    same(b.cpu(), data(ws - 1, dt), f"broadcast {dt}")


def check_p2p(rank: int, ws: int, dt: torch.dtype) -> None:
    x = data(rank, dt, (2, 64), salt=2)
    if rank == 0:
        dist.send(x.to("spyre"), dst=1)
    elif rank == 1:
        y = torch.zeros((2, 64), dtype=dt).to("spyre")
        dist.recv(y, src=0)
        same(y.cpu(), data(0, dt, (2, 64), salt=2), f"send/recv {dt}")
    ins = [data(rank, dt, (2, 64), salt=3 + i).to("spyre") for i in range(ws)]
    outs = [torch.zeros((2, 64), dtype=dt).to("spyre") for _ in range(ws)]
    dist.all_to_all(outs, ins)
    for i in range(ws):
        same(outs[i].cpu(), data(i, dt, (2, 64), salt=3 + rank), f"all_to_all[{i}] {dt}")
    single_in = torch.cat([data(rank, dt, (2, 64), salt=3 + i) for i in range(ws)]).to("spyre")
    single_out = torch.zeros((2 * ws, 64), dtype=dt).to("spyre")
    dist.all_to_all_single(single_out, single_in)
    same(single_out.cpu(), torch.cat([data(i, dt, (2, 64), salt=3 + rank) for i in range(ws)]),
         f"all_to_all_single {dt}")


def check_async_and_errors(rank: int, ws: int) -> None:
    s = data(rank, torch.float16).to("spyre")
    work = dist.all_reduce(s, async_op=True)
    assert isinstance(work, dist.Work)
    assert work.wait() is True and work.is_completed()
    fut = dist.all_reduce(s, async_op=True).get_future()
    assert isinstance(fut.value()[0], torch.Tensor)
    dist.barrier()
    # Mismatched shapes: a clear error on every rank, and the group stays usable.
    bad = torch.ones((3 + rank, 64), dtype=torch.float16).to("spyre")
    try:
        dist.all_reduce(bad)
    except ValueError as e:
        msg = str(e)
        assert "rank 0: [3, 64] float16" in msg and "rank 1: [4, 64] float16" in msg, msg
    else:
        raise AssertionError("mismatched shapes did not raise")
    ok = torch.ones((2, 64), dtype=torch.float16).to("spyre")
    dist.all_reduce(ok)
    same(ok.cpu(), torch.full((2, 64), float(ws), dtype=torch.float16), "all_reduce after a mismatch")
    # Functional collectives in eager mode go through the same backend.
    t = funcol.all_reduce(torch.ones(8, dtype=torch.float16).to("spyre"), "sum", dist.group.WORLD)
    same(funcol.wait_tensor(t).cpu(), torch.full((8,), float(ws), dtype=torch.float16), "funcol eager")
    t = torch.ops.spyre.all_reduce_async(torch.ones(8, dtype=torch.float32).to("spyre"), "max", "default")
    same(torch.ops.spyre.wait_work(t).cpu(), torch.ones(8), "spyre::all_reduce_async eager")


def scenario_eager(rank: int, ws: int) -> None:
    ref = dist.new_group(backend="gloo")  # the CPU reference
    for dt in DTYPES:
        check_reductions(rank, ws, ref, dt)
        check_gathers(rank, ws, ref, dt)
        check_p2p(rank, ws, dt)
    check_async_and_errors(rank, ws)


def scenario_compiled(rank: int, ws: int) -> None:
    from torch_spyre._compile import compile_stats
    from torch._dynamo.utils import counters

    group = dist.group.WORLD
    ref = dist.new_group(backend="gloo")

    def fn(x: torch.Tensor, w: torch.Tensor) -> tuple:
        y = x @ w
        y = funcol.all_reduce(y, "sum", group)
        g = funcol.all_gather_tensor(torch.relu(y), 0, group)
        s = funcol.reduce_scatter_tensor(g * 2.0, "sum", 0, group)
        return y + 1.0, s

    x = data(rank, torch.float16, (8, 64), salt=5)
    w = data(rank, torch.float16, (64, 64), salt=6)
    counters.clear()
    got_y, got_s = torch.compile(fn, backend="spyre", fullgraph=True)(x.to("spyre"), w.to("spyre"))
    assert sum(counters["graph_break"].values()) == 0, dict(counters["graph_break"])
    assert compile_stats.fallback_nodes == 0, compile_stats.fallback_nodes
    assert compile_stats.partitions >= 2, compile_stats.partitions
    # The same computation on the CPU (the card's matmul differs in rounding: fp16 tolerance).
    y = (x.float() @ w.float())
    dist.all_reduce(y, group=ref)
    ys = [torch.empty_like(y) for _ in range(ws)]
    dist.all_gather(ys, torch.relu(y), group=ref)
    s = torch.empty_like(y)
    dist.reduce_scatter_tensor(s, torch.cat(ys) * 2.0, group=ref)
    torch.testing.assert_close(got_y.cpu().float(), y + 1.0, atol=0.1 * ws, rtol=0.1)
    torch.testing.assert_close(got_s.cpu().float(), s, atol=0.2 * ws, rtol=0.1)
    print(f"RANK{rank} compiled partitions={compile_stats.partitions} "
          f"fallback_nodes={compile_stats.fallback_nodes}", flush=True)


def scenario_fault(rank: int, ws: int, dead: bool) -> None:
    if rank == 1:
        if dead:
            sys.stdout.flush()
            os._exit(3)  # dies without a word to the group
        # Alive, but never joins the collective: waits (bounded) until rank 0 has seen its error.
        dist.distributed_c10d._get_default_store().wait(["fault_seen"], datetime.timedelta(seconds=60))
        os._exit(0)
    s = torch.ones((4, 64), dtype=torch.float16).to("spyre")
    t0 = time.monotonic()
    try:
        dist.all_reduce(s)
    except RuntimeError as e:  # DistBackendError / DistError are RuntimeErrors
        print(f"RANK0 FAULT {type(e).__name__} after {time.monotonic() - t0:.1f}s: "
              f"{str(e).splitlines()[0][:160]}", flush=True)
        if not dead:
            dist.distributed_c10d._get_default_store().set("fault_seen", "1")
    else:
        raise AssertionError("the collective with a missing peer returned")


def main() -> None:
    scenario, rank, ws, init = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    backend = os.environ.get("SPYRE_TEST_BACKEND", "spyre")
    timeout = datetime.timedelta(seconds=4 if scenario in ("dead", "timeout") else 30)
    dist.init_process_group(backend, init_method=init, rank=rank, world_size=ws, timeout=timeout)
    if scenario in ("eager", "all"):
        t0 = time.monotonic()
        scenario_eager(rank, ws)
        print(f"RANK{rank} eager {time.monotonic() - t0:.1f}s", flush=True)
    if scenario in ("compiled", "all"):
        t0 = time.monotonic()
        scenario_compiled(rank, ws)
        print(f"RANK{rank} compiled {time.monotonic() - t0:.1f}s", flush=True)
    if scenario in ("dead", "timeout"):
        scenario_fault(rank, ws, dead=scenario == "dead")
        print(f"RANK{rank} OK", flush=True)
        os._exit(0)  # the group has a dead peer: skip the teardown
    dist.barrier()
    dist.destroy_process_group()
    print(f"RANK{rank} OK", flush=True)


if __name__ == "__main__":
    main()
