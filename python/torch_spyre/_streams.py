"""Streams and events of the spyre device (``torch.spyre.Stream``, ``stream()``,
``current_stream()``, ``default_stream()``, ``set_stream()``, ``Event``), with torch-spyre's names.

The simulator runs every transfer and kernel to completion before the call that issued it
returns, so all work is complete and in issue order: ``query()`` is always True and
``synchronize()`` returns at once, but the API holds as for CUDA. Streams are ``torch.Stream``
objects of the spyre device (``torch.Stream("spyre")`` and ``torch.accelerator`` work too), the
current stream is per thread, and an ``Event`` records the host time of its ``record()``, so
``elapsed_time`` measures the work issued between two records.
"""

from __future__ import annotations

from typing import Any

import torch

from . import _C

__all__ = ["Stream", "Event", "stream", "current_stream", "default_stream", "set_stream"]


def _spyre_device(device: Any) -> torch.device | None:
    if device is None:
        return None
    if isinstance(device, int):
        return torch.device("spyre", device)
    return torch.device(device)


class Stream(torch.Stream):
    """A stream of the spyre device: ``Stream(device=None, priority=0)`` creates one (lower
    priority numbers are higher priorities, as in CUDA). As a context manager it is the current
    stream inside the block; nesting the same stream restores each level's predecessor."""

    def __new__(cls, device: Any = None, priority: int = 0, **kwargs: Any) -> "Stream":
        if kwargs:  # stream_id=, device_index=, device_type=: a handle on an existing stream
            return super().__new__(cls, **kwargs)
        s = _C._new_stream(_spyre_device(device), int(priority))
        return super().__new__(cls, stream_id=s.stream_id, device_index=s.device_index,
                               device_type=s.device_type)

    @classmethod
    def _wrap(cls, s: torch.Stream) -> "Stream":
        return cls(stream_id=s.stream_id, device_index=s.device_index, device_type=s.device_type)

    @property
    def id(self) -> int:
        return self.stream_id

    @property
    def priority(self) -> int:
        return _C._stream_priority(self)

    def __enter__(self) -> "Stream":
        prev = self.__dict__.setdefault("_prev", [])
        prev.append(_C.current_stream(self.device))
        _C.set_current_stream(self)
        return self

    def __exit__(self, *exc: Any) -> bool:
        _C.set_current_stream(self.__dict__["_prev"].pop())
        return False

    def __repr__(self) -> str:
        return f"torch.spyre.Stream(device={self.device}, id={self.stream_id}, priority={self.priority})"


class Event(torch.Event):
    """An event of the spyre device: ``Event(enable_timing=False, ...)``. ``record()`` notes the
    host time (the work before it is complete), ``elapsed_time(end)`` is in milliseconds."""

    def __new__(cls, device: Any = None, **kwargs: Any) -> "Event":
        return super().__new__(cls, device=_spyre_device(device) or torch.device("spyre"), **kwargs)


class stream:  # noqa: N801 - torch.cuda.stream's spelling
    """Context manager that makes ``s`` the current stream (``None``: no change)."""

    def __init__(self, s: torch.Stream | None) -> None:
        self.stream = s
        self._prev: torch.Stream | None = None

    def __enter__(self) -> torch.Stream | None:
        if self.stream is not None:
            self._prev = _C.current_stream(self.stream.device)
            _C.set_current_stream(self.stream)
        return self.stream

    def __exit__(self, *exc: Any) -> bool:
        if self._prev is not None:
            _C.set_current_stream(self._prev)
        return False


def current_stream(device: Any = None) -> Stream:
    """This thread's current stream of the device (the default stream unless one was set)."""
    return Stream._wrap(_C.current_stream(_spyre_device(device)))


def default_stream(device: Any = None) -> Stream:
    """The device's default stream (id 0)."""
    return Stream._wrap(_C.default_stream(_spyre_device(device)))


def set_stream(s: torch.Stream) -> None:
    """Makes ``s`` this thread's current stream."""
    _C.set_current_stream(s)
