"""`BoundedLru`: the one bounded, thread-safe LRU map the per-process memos share.

Why not `functools.lru_cache`: its callers need more than memoising a function. The replay
memo and the world templates are filled by one stage and read by another (synthesis puts, the
rollout gets on the event-loop thread), the last reader `take`s a template so it is freed with
that reader, tests switch a memo off (`enabled`) to compare against the slow path, and the
hit/miss counts prove the fast path ran. A miss only costs time: callers recompute.
"""

from __future__ import annotations

import collections
import threading
from typing import Generic, TypeVar

V = TypeVar("V")


class BoundedLru(Generic[V]):
    """At most `maxsize` entries by string key, least recently used evicted first; every
    method takes the lock (callers on the DoFn thread and the event-loop thread)."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        #: False: every lookup misses and nothing is kept (the tests' reference path).
        self.enabled = True
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._entries: collections.OrderedDict[str, V] = collections.OrderedDict()

    def get(self, key: str) -> V | None:
        """The entry (now the most recently used), or None."""
        with self._lock:
            entry = self._entries.get(key) if self.enabled else None
            self._count(entry)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def take(self, key: str) -> V | None:
        """`get`, and forget the entry: its last reader holds it from now on."""
        with self._lock:
            entry = self._entries.pop(key, None) if self.enabled else None
            self._count(entry)
            return entry

    def put(self, key: str, entry: V) -> None:
        """Keep `entry` as the most recently used (nothing when disabled)."""
        if not self.enabled:
            return
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def _count(self, entry: V | None) -> None:
        if entry is None:
            self.misses += 1
        else:
            self.hits += 1
