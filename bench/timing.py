"""Wall-clock timing shared by the Python bench scripts (hf_models.py, ktir_compare.py)."""

from __future__ import annotations

import time
from typing import Callable


def timed(fn: Callable[[], object], reps: int) -> list[float]:
    """Milliseconds of each of `reps` calls of fn."""
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    return out
