"""The ``torch.spyre`` device module: device queries, lazy initialisation, memory statistics,
seeding, streams and events over the ``_C`` extension, plus the layout types torch-spyre exposes
there. Names and behaviour are torch-spyre's."""

from __future__ import annotations

import types
from typing import Any

import torch

from . import _C
from ._C import DataFormats, ElementArrangement, SpyreTensorLayout, get_device_dtype
from ._streams import Event, Stream, current_stream, default_stream, set_stream, stream

__all__ = [
    "DataFormats",
    "Event",
    "Stream",
    "current_stream",
    "default_stream",
    "set_stream",
    "stream",
    "ElementArrangement",
    "SpyreTensorLayout",
    "current_device",
    "device_count",
    "get_device_dtype",
    "is_available",
    "manual_seed",
    "manual_seed_all",
    "max_memory_allocated",
    "memory_allocated",
    "memory_stats",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
    "set_device",
    "get_downcast_warning",
    "set_downcast_warning",
    "synchronize",
]


def _dev(device: Any) -> Any:
    """torch.device for strings ("spyre:0"); ints, None and torch.device pass through. _C
    validates the device type and index."""
    return torch.device(device) if isinstance(device, str) else device


def is_available() -> bool:
    """The simulated card is always present."""
    return True


def is_initialized() -> bool:
    """False until the simulated card is first used (a spyre allocation) or ``init()``."""
    return _C.is_initialized()


def init() -> None:
    """Brings the simulated card up now (torch-spyre's start_runtime); idempotent."""
    _C.start_runtime()


_lazy_init = init


def _is_in_bad_fork() -> bool:
    # The simulator keeps no driver state a forked child could corrupt.
    return False


def device_count() -> int:
    return _C.device_count()


def current_device() -> int:
    return _C.current_device()


def set_device(device: Any) -> None:
    """Makes ``device`` this thread's current card (``spyre:0`` .. ``spyre:N-1``, N =
    ``device_count()``); another index raises RuntimeError naming the valid range."""
    _C.set_device(_dev(device))


def synchronize(device: Any = None) -> None:
    """Waits for all streams of the device; the simulator finishes every transfer and kernel
    before the call that issued it returns, so there is nothing left to wait for."""
    _C.synchronize(_dev(device))


def get_downcast_warning() -> bool:
    """Whether int64 tensors warn that they are stored as int32 (``set_downcast_warning``, else
    ``TORCH_SPYRE_DOWNCAST_WARN``, default on)."""
    return _C.get_downcast_warning()


def set_downcast_warning(enabled: bool) -> None:
    """Turns the int64 -> int32 downcast warning on or off for this process."""
    _C.set_downcast_warning(bool(enabled))


def memory_allocated(device: Any = None) -> int:
    """Bytes of simulated DDR held by live spyre storages (4 KiB-aligned blocks)."""
    return _C.memory_allocated(_dev(device))


def max_memory_allocated(device: Any = None) -> int:
    return _C.max_memory_allocated(_dev(device))


def reset_peak_memory_stats(device: Any = None) -> None:
    _C.reset_peak_memory_stats(_dev(device))


def reset_accumulated_memory_stats(device: Any = None) -> None:
    """Zeroes ``allocation.all.allocated``/``.freed``; the live figures stay."""
    _C.reset_accumulated_memory_stats(_dev(device))


def memory_stats(device: Any = None) -> dict[str, int]:
    return _C.memory_stats(_dev(device))


def manual_seed(seed: int) -> None:
    """Seeds every generator, as torch.manual_seed does (which also seeds spyre's)."""
    torch.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """Seeds the spyre default generator (called by torch.manual_seed)."""
    _C.manual_seed_all(int(seed))


def initial_seed() -> int:
    return _C.initial_seed()


class device:
    """Context manager that makes ``device`` current while it is entered and restores the
    previous one after (torch.cuda.device's form); None and -1 change nothing. torch's storage
    moves (``UntypedStorage.to``, used by torch.load) enter it."""

    def __init__(self, device: Any) -> None:
        self.idx = torch.device(device).index if isinstance(device, (str, torch.device)) else device
        self.prev = -1

    def __enter__(self) -> "device":
        if self.idx is not None and self.idx != -1:
            self.prev = current_device()
            set_device(self.idx)
        return self

    def __exit__(self, *exc: Any) -> bool:
        if self.prev != -1:
            set_device(self.prev)
        return False


def device_of(values: Any) -> int | None:
    """The index of the first spyre tensor among ``values`` (a flat sequence), else None."""
    for x in values:
        if isinstance(x, torch.Tensor) and x.device.type == "spyre":
            return x.device.index if x.device.index is not None else current_device()
    return None


def get_amp_supported_dtype() -> list[torch.dtype]:
    return [torch.float16, torch.bfloat16]


_MODULE_MEMBERS = (
    "is_available",
    "is_initialized",
    "_is_in_bad_fork",
    "device_count",
    "current_device",
    "set_device",
    "synchronize",
    "memory_allocated",
    "max_memory_allocated",
    "reset_peak_memory_stats",
    "reset_accumulated_memory_stats",
    "memory_stats",
    "get_downcast_warning",
    "set_downcast_warning",
    "init",
    "_lazy_init",
    "Stream",
    "Event",
    "stream",
    "current_stream",
    "default_stream",
    "set_stream",
    "manual_seed",
    "manual_seed_all",
    "initial_seed",
    "get_amp_supported_dtype",
    "device",
    "SpyreTensorLayout",
    "DataFormats",
    "ElementArrangement",
    "get_device_dtype",
)


def make_spyre_module() -> types.ModuleType:
    mod = types.ModuleType("spyre", "torch.spyre: the simulated IBM Spyre device")
    for name in _MODULE_MEMBERS:
        setattr(mod, name, globals()[name])
    mod.encode_constant = _C.encode_constant
    mod.empty_with_layout = _C.empty_with_layout
    mod.get_elem_in_stick = _C.get_elem_in_stick
    # torch-spyre's allocator statistics (its SpyreAllocator's names).
    mod._spyre_get_allocator_stats = _C._spyre_get_allocator_stats
    mod._spyre_reset_accumulated_stats = _C._spyre_reset_accumulated_stats
    mod._spyre_reset_peak_stats = _C._spyre_reset_peak_stats
    return mod
