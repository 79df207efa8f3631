"""A thread-safe map that keeps its most recently used entries: past a size limit (read at each
insert, so a knob changed at run time takes effect at the next compile) the least recently used
entry is dropped. The eager kernel cache, the decomposed-op cache and the compile-check cache
use it, bounded by ``SPYRE_EAGER_CACHE_SIZE``."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable

_MISSING = object()


class LruCache:
    def __init__(self, limit: Callable[[], int]) -> None:
        self._limit = limit
        self._entries: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self.evictions = 0  # entries dropped for the limit, since start

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The entry (now the most recently used), or ``default``."""
        with self._lock:
            value = self._entries.get(key, _MISSING)
            if value is _MISSING:
                return default
            self._entries.move_to_end(key)
            return value

    def put(self, key: Hashable, value: Any) -> None:
        """Stores ``value`` as the most recently used entry, then drops the least recently used
        ones beyond the limit."""
        limit = self._limit()
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > limit:
                self._entries.popitem(last=False)
                self.evictions += 1

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries
