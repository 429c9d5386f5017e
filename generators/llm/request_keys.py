"""The response cache's request key, from each record's canonical JSON made once per object.

Why: `ChatRequest.cache_key()` dumps and encodes the whole request on every call, which is
quadratic in the conversation (~0.25 ms for a 20-message retail request), and the cache (on in a
default build) keys every request. Measured at the whole-build level (benchmarks/README.md,
"Issue 31: wire_body and wire_memo, measured again"): a rollout build of 800 tasks with the
cache on spent ~5% more CPU per task keying requests whole (median of five pairs). Canonical JSON is compact with
sorted keys, so a request's encoding is its sorted members' encodings joined; the key is
`cache_key()` byte for byte (tests/generators/llm/test_request_body.py).
"""

from __future__ import annotations

import hashlib
from typing import Any

from trajforge.generators.llm.identity_memo import MEMO_SIZE, IdentityMemo
from trajforge.schemas import ChatRequest
from trajforge.schemas.base import canonical_bytes

#: The fields a key spells out, in canonical (sorted) order; another field set (the schema
#: grew) falls back to `ChatRequest.cache_key`.
KEY_FIELDS = ("messages", "model", "response_format", "sampling", "seed", "tools")
_SPELLED_OUT = tuple(sorted(ChatRequest.model_fields)) == KEY_FIELDS


def _kept_canonical(record: Any) -> bytes:
    """A record's canonical JSON, as an exact-size copy (an encoder's buffer is not kept)."""
    return bytes(memoryview(canonical_bytes(record.model_dump(mode="json"))))


class RequestKeys:
    """`request.cache_key()` for the requests of one client (`CachedLLM` owns one): the
    messages', tools' and sampling's canonical JSON memoised by object. Pickles as a fresh,
    empty memo (its entries are identities in this process)."""

    def __init__(self, maxsize: int = MEMO_SIZE):
        self._maxsize = maxsize
        self._canonical: IdentityMemo[Any] = IdentityMemo(_kept_canonical, maxsize)

    def __call__(self, request: ChatRequest) -> str:
        if not _SPELLED_OUT:
            return request.cache_key()
        canonical = self._canonical
        parts = [
            b'{"messages":[',
            b",".join([canonical(m) for m in request.messages]),
            b'],"model":',
            canonical_bytes(request.model),
            b',"response_format":',
            canonical_bytes(request.response_format),
            b',"sampling":',
            canonical(request.sampling),
            b',"seed":',
            canonical_bytes(request.seed),
            b',"tools":[',
            b",".join([canonical(t) for t in request.tools]),
            b"]}",
        ]
        return hashlib.sha256(b"".join(parts)).hexdigest()

    def __len__(self) -> int:
        return len(self._canonical)

    def __getstate__(self) -> dict[str, int]:
        return {"maxsize": self._maxsize}

    def __setstate__(self, state: dict[str, int]) -> None:
        self.__init__(state["maxsize"])
