"""Wire forms of frozen records, made once per record instead of once per request.

Why: a rollout sends its whole conversation with every agent request, so converting each
`Message` (and each `ToolSpec`) to its OpenAI dict on every request is quadratic in the
conversation's length: 11 conversions per request in a 4-turn retail rollout, ~1 ms per
rollout on the event-loop thread. Records are frozen, and requests carry the very message
objects the rollout appended (validation does not copy model instances), so a memo by
identity answers from the second request on. Pydantic models take no weak references, so
each entry holds its record (the identity stays valid) and the memo is a bounded LRU.
The wire dicts are shared: callers serialise them and never mutate them.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

Rec = TypeVar("Rec")

#: Entries kept per memo: a few hundred conversations in flight, ~10 messages each.
MEMO_SIZE = 8192


class IdentityMemo(Generic[Rec]):
    """`convert(record)`, memoised by the record's identity (a bounded, thread-safe LRU)."""

    def __init__(self, convert: Callable[[Rec], Any], maxsize: int = MEMO_SIZE):
        self._convert = convert
        self._maxsize = maxsize
        self._lock = threading.Lock()
        self._entries: collections.OrderedDict[int, tuple[Rec, Any]] = collections.OrderedDict()

    def __call__(self, record: Rec) -> Any:
        key = id(record)
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None and hit[0] is record:
                self._entries.move_to_end(key)
                return hit[1]
        value = self._convert(record)
        with self._lock:
            self._entries[key] = (record, value)
            self._entries.move_to_end(key)
            if len(self._entries) > self._maxsize:
                self._entries.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._entries)
