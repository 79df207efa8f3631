"""The decorator of the op tables (DECOMPOSITIONS, _LOWERINGS): ``registrar(table)(*ops)``
stores the decorated function under every op and returns it unchanged."""

from __future__ import annotations

from typing import Any, Callable


def registrar(table: dict[Any, Callable]) -> Callable[..., Callable[[Callable], Callable]]:
    def register(*ops: Any) -> Callable[[Callable], Callable]:
        def deco(fn: Callable) -> Callable:
            for op in ops:
                table[op] = fn
            return fn

        return deco

    return register
