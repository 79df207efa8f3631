"""torch-spyre's ``torch_spyre.ops.fallbacks``: ``FallbackWarning``, the warning an op that ran
on the CPU instead of the card gives (the same class as ``torch_spyre.FallbackWarning``; the
fallback itself is ``torch_spyre._fallback``)."""

from __future__ import annotations

from .._errors import FallbackWarning

__all__ = ["FallbackWarning"]
