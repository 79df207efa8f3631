"""torch-spyre's ``torch_spyre._inductor.errors``: ``Unsupported``, raised for a graph, op,
dtype or shape the simulated Spyre stack does not run (the same class as
``torch_spyre.Unsupported``, a ``NotImplementedError`` and so a ``RuntimeError``)."""

from __future__ import annotations

from .._errors import Unsupported

__all__ = ["Unsupported"]
