"""The exceptions and warnings torch_spyre raises, in one place.

* ``Unsupported`` (a ``NotImplementedError``): a graph, op, dtype or shape the simulated Spyre
  stack does not run (yet). Eager and compiled code fall back to the CPU on it unless
  ``SPYRE_STRICT=1``; C++ ``spyre::Unsupported`` reaches Python as ``NotImplementedError`` too.
* ``FallbackWarning`` (a ``UserWarning``): an op ran on the CPU instead of the card.
* ``DeviceIndexError`` (an ``IndexError`` and a ``RuntimeError``): a launch failed on an index
  outside a table's rows (the card's bounds-checked dma.gather / dma.scatter). torch raises
  ``IndexError`` for some of the ops that reach these (``x[idx]``, ``index_select``,
  ``embedding``, ``index_copy``, ``index_put``) and ``RuntimeError`` for others (``one_hot``,
  ``gather``, ``scatter_add``, ``index_add``): either ``except`` catches it.
* ``ConfigError`` (a ``ValueError``): an environment variable has a value outside its accepted
  ones (``_config``). It is never a reason to fall back: the fallback paths catch only
  ``NotImplementedError`` and ``RuntimeError``.

The public names stay importable from where they always were (``torch_spyre.Unsupported``,
``torch_spyre._lowering.Unsupported``, ``torch_spyre._compile.FallbackWarning``, ...).
"""

from __future__ import annotations

import contextlib
import re
from typing import Iterator

__all__ = ["Unsupported", "FallbackWarning", "ConfigError", "DeviceIndexError", "strict_unsupported",
           "typed_device_faults"]

STRICT_HINT = "SPYRE_STRICT=1 disables the CPU fallback"


class Unsupported(NotImplementedError):
    """Raised for graphs, ops or shapes the simulated Spyre stack does not support (yet)."""

    def __init__(self, what: str) -> None:
        super().__init__(f"Unsupported: {what}")


class FallbackWarning(UserWarning):
    """An op ran on the CPU instead of the simulated card (once per op and reason)."""


class ConfigError(ValueError):
    """An environment variable with a value outside the accepted ones. The message has the form
    of the C++ side's (``spyre::Env``): ``invalid NAME value 'x' (expected ...)``."""

    def __init__(self, name: str, value: str, expected: str) -> None:
        super().__init__(f"invalid {name} value '{value}' (expected {expected})")
        self.name = name
        self.value = value
        self.expected = expected


def strict_unsupported(what: str) -> Unsupported:
    """The error strict mode raises instead of a CPU fallback: ``what`` says which op cannot
    run on spyre and why."""
    return Unsupported(f"{what}; {STRICT_HINT}")


class DeviceIndexError(IndexError, RuntimeError):
    """A launch failed on an index outside a table's rows (the device fault of dma.gather /
    dma.scatter; the message is the device's: ``kernel …: dma.gather on core c: index j (entry e
    of the index list) is outside the table's rows [0, n)``)."""


# The simulator's wording of the fault (simulator/lib/ring.cpp, dmaGather / dmaScatter).
_INDEX_FAULT = re.compile(r"dma\.(gather|scatter) on core \d+: index -?\d+ \(entry \d+ of the index list\) "
                          r"is outside the table's rows \[0, \d+\)")


@contextlib.contextmanager
def typed_device_faults() -> Iterator[None]:
    """Around a compiled graph's run: a launch that failed on a bad index raises
    ``DeviceIndexError`` (the same message); other errors pass unchanged."""
    try:
        yield
    except RuntimeError as e:
        if isinstance(e, DeviceIndexError) or not _INDEX_FAULT.search(str(e)):
            raise
        raise DeviceIndexError(str(e)) from None
