"""torch-spyre's ``torch_spyre.fallbacks``: ``FallbackWarning``, the warning an op that ran on
the CPU instead of the card gives. The same class as ``torch_spyre.FallbackWarning`` and
``torch_spyre.ops.fallbacks.FallbackWarning`` (torch-spyre has both module paths); the fallback
itself is ``torch_spyre._fallback``."""

from __future__ import annotations

from ._errors import FallbackWarning

__all__ = ["FallbackWarning"]
