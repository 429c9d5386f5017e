"""A bounded memo of a pure function of frozen records, keyed by the record's identity.

Why: the response cache keys every request by its canonical JSON, and a rollout resends its
whole conversation with every request, so dumping every message again per request is quadratic
in the conversation's length. Records are frozen, and requests carry the very message objects
the rollout appended (validation does not copy model instances), so a memo by identity answers
from the second request on. Pydantic models take no weak references, so each entry holds its
record (the identity stays valid) and the memo is bounded (two generations, see
`IdentityMemo`). A memo is owned by the object that uses it (`request_keys.RequestKeys`, one
per `CachedLLM`), never module state. Values are shared: callers never mutate them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

Rec = TypeVar("Rec")

#: Entries kept per memo: a few hundred conversations in flight, ~10 messages each.
MEMO_SIZE = 8192


class IdentityMemo(Generic[Rec]):
    """`convert(record)`, memoised by the record's identity; bounded, thread-safe.

    Two generations instead of an LRU: a hit in the young one is a dict lookup and an identity
    check, with no lock and no reordering (an LRU's locked move-to-end was most of a hit's
    cost, and a request looks up every message of its conversation). An entry found in the old
    generation moves to the young one; when the young one reaches half the bound it becomes the
    old one (the previous old one is dropped). So at most `maxsize` entries are held and the
    `maxsize // 2` most recently inserted or used are always kept. A lookup racing a rotation
    may miss and convert again: the value is a pure function of the record, so only time is lost.
    """

    def __init__(self, convert: Callable[[Rec], Any], maxsize: int = MEMO_SIZE):
        self._convert = convert
        self._half = max(1, maxsize // 2)
        self._lock = threading.Lock()
        self._young: dict[int, tuple[Rec, Any]] = {}
        self._old: dict[int, tuple[Rec, Any]] = {}

    def __call__(self, record: Rec) -> Any:
        hit = self._young.get(id(record))
        if hit is not None and hit[0] is record:
            return hit[1]
        return self._miss(record)

    def _miss(self, record: Rec) -> Any:
        key = id(record)
        old = self._old.get(key)
        value = old[1] if old is not None and old[0] is record else self._convert(record)
        with self._lock:
            self._young[key] = (record, value)
            if len(self._young) >= self._half:
                self._old, self._young = self._young, {}
        return value

    def __len__(self) -> int:
        return len(self._young) + len(self._old)
