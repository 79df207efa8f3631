"""Test helpers, as torch-spyre's ``tests/inductor/utils_inductor.py`` defines them."""

from __future__ import annotations

import collections
import hashlib
from typing import Any, Callable

import torch
from torch.utils._pytree import tree_flatten, tree_map

from ._fallback import count_fallbacks

__all__ = ["compare_with_cpu", "cached_randn", "SpyreFallbacks"]


class SpyreFallbacks(dict):
    """What ``compare_with_cpu`` returns: mode ("compile"/"eager") -> Counter of CPU-fallback op
    names during that mode's run (empty when everything ran on the simulated card)."""

    def assert_on_spyre(self) -> None:
        bad = {mode: dict(c) for mode, c in self.items() if c}
        assert not bad, f"ops fell back to the CPU: {bad}"


def cached_randn(shape: Any, dtype: torch.dtype = torch.float16, scale: float = 1.0, abs: bool = False,
                 key: str = "") -> torch.Tensor:
    """Reproducible normal values: the generator is seeded from a SHA-256 of shape, dtype and
    key, so the same call gives the same tensor in every process."""
    shape = tuple(shape) if isinstance(shape, (tuple, list, torch.Size)) else (shape,)
    seed = int.from_bytes(hashlib.sha256(f"{shape}|{dtype}|{key}".encode()).digest()[:8], "little") & (2**63 - 1)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g, dtype=torch.float32) * scale
    if abs:
        x = x.abs()
    return x.to(dtype)


def _to_spyre(x: Any) -> Any:
    return x.to("spyre") if isinstance(x, torch.Tensor) else x


def _to_cpu_checked(x: Any, mode: str) -> Any:
    if isinstance(x, torch.Tensor):
        assert x.device.type == "spyre", f"{mode}: result is on {x.device}, expected spyre"
        return x.cpu()
    return x


def compare_with_cpu(fn: Callable, *args: Any, atol: float = 0.1, rtol: float = 0.1, run_eager: bool = True,
                     run_compile: bool = True, on_spyre: bool = False, clone_inputs: bool = False,
                     backend: str | None = None) -> SpyreFallbacks:
    """Runs ``fn`` on the CPU, then compiled (``torch.compile(fn, dynamic=False)``, default backend
    unless ``backend``) and eagerly on spyre copies of the tensor arguments, moves the results
    back and ``assert_close``s them (``equal_nan=True``). Results must be spyre tensors.

    Returns the CPU fallbacks per mode; ``on_spyre=True`` asserts there were none."""
    cpu_args = [a.clone() if clone_inputs and isinstance(a, torch.Tensor) else a for a in args]
    expected = fn(*cpu_args)
    report = SpyreFallbacks()
    modes = (["compile"] if run_compile else []) + (["eager"] if run_eager else [])
    assert modes, "compare_with_cpu: nothing to run (run_compile and run_eager are both False)"
    for mode in modes:
        dev_args = tree_map(_to_spyre, list(args))
        with count_fallbacks() as fb:
            if mode == "compile":
                torch._dynamo.reset()
                f = torch.compile(fn, backend=backend, dynamic=False) if backend else torch.compile(fn, dynamic=False)
                out = f(*dev_args)
            else:
                out = fn(*dev_args)
        report[mode] = collections.Counter(fb)
        got = tree_map(lambda x: _to_cpu_checked(x, mode), out)
        got_flat, _ = tree_flatten(got)
        exp_flat, _ = tree_flatten(expected)
        assert len(got_flat) == len(exp_flat), f"{mode}: {len(got_flat)} results, expected {len(exp_flat)}"
        for g, e in zip(got_flat, exp_flat):
            if isinstance(e, torch.Tensor):
                torch.testing.assert_close(g, e, atol=atol, rtol=rtol, equal_nan=True,
                                           msg=lambda m, mode=mode: f"{mode} mode: {m}")
            else:
                assert g == e, f"{mode}: {g!r} != {e!r}"
    if on_spyre:
        report.assert_on_spyre()
    return report
