"""A persistent response cache, so an interrupted or repeated build never pays twice for a call.

Keyed by the canonical request (`ChatRequest.cache_key()`: model, messages, tools, sampling
params, seed, response format) under a namespace naming the backend's model, so two backends
answering the same request text never share entries. Stored in one sqlite file in WAL mode:
many readers and one writer at a time, across threads (one connection per thread) and across
processes (Beam may run several workers on one machine). Only successful responses are stored.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from trajforge.generators.llm.wire_memo import IdentityMemo
from trajforge.schemas import ChatRequest, ChatResponse, LLMClient, content_hash
from trajforge.schemas.base import canonical_bytes

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    response TEXT NOT NULL,
    created_at REAL NOT NULL
)
"""


class ResponseStore(Protocol):
    """Where responses persist: a SQLite file (`ResponseCache`, one disk) or one file per
    response on any Beam filesystem (`file_cache.FileResponseCache`, shared by remote workers)."""

    def get(self, key: str) -> ChatResponse | None: ...

    def put(self, key: str, response: ChatResponse) -> None: ...


class ResponseCache:
    """Key -> ChatResponse, in a sqlite file. Picklable (reopens the file where it lands)."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._connection().execute(_SCHEMA)

    def get(self, key: str) -> ChatResponse | None:
        row = (
            self._connection()
            .execute("SELECT response FROM responses WHERE key = ?", (key,))
            .fetchone()
        )
        return ChatResponse.model_validate_json(row[0]) if row else None

    def put(self, key: str, response: ChatResponse) -> None:
        self._connection().execute(
            "INSERT OR REPLACE INTO responses (key, response, created_at) VALUES (?, ?, ?)",
            (key, response.to_json(), time.time()),
        )

    def __len__(self) -> int:
        return self._connection().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def _connection(self) -> sqlite3.Connection:
        """This thread's connection (sqlite connections must not cross threads or forks)."""
        pid = os.getpid()
        connection = getattr(self._local, "connection", None)
        if connection is None or self._local.pid != pid:
            connection = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            self._local.connection = connection
            self._local.pid = pid
        return connection

    def __getstate__(self) -> dict[str, object]:
        return {"path": self.path}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.path = Path(str(state["path"]))
        self._local = threading.local()


def _kept_canonical(record: Any) -> bytes:
    """A record's canonical JSON, as an exact-size copy (an encoder's buffer is not kept)."""
    return bytes(memoryview(canonical_bytes(record.model_dump(mode="json"))))


_canonical_of: IdentityMemo[Any] = IdentityMemo(_kept_canonical)

#: The fields `request_key` spells out, in canonical (sorted) order; another field set (the
#: schema grew) falls back to `ChatRequest.cache_key`.
_KEY_FIELDS = ("messages", "model", "response_format", "sampling", "seed", "tools")
_FAST_KEY = tuple(sorted(ChatRequest.model_fields)) == _KEY_FIELDS


def request_key(request: ChatRequest) -> str:
    """`request.cache_key()`, from each message's and tool's canonical JSON made once per
    object: the whole request's dump and encoding per call was quadratic in the conversation
    (~0.25 ms for a 20-message retail request). Canonical JSON is compact with sorted keys, so
    the object's encoding is its sorted members' encodings joined (tested equal)."""
    if not _FAST_KEY:
        return request.cache_key()
    parts = [
        b'{"messages":[',
        b",".join([_canonical_of(m) for m in request.messages]),
        b'],"model":',
        canonical_bytes(request.model),
        b',"response_format":',
        canonical_bytes(request.response_format),
        b',"sampling":',
        _canonical_of(request.sampling),
        b',"seed":',
        canonical_bytes(request.seed),
        b',"tools":[',
        b",".join([_canonical_of(t) for t in request.tools]),
        b"]}",
    ]
    return hashlib.sha256(b"".join(parts)).hexdigest()


class CachedLLM:
    """Answers from the cache when it can; otherwise asks `inner` and stores the answer."""

    def __init__(self, inner: LLMClient, cache: ResponseStore, namespace: str | None = None):
        self.inner = inner
        self.cache = cache
        self.model = getattr(inner, "model", "")
        self.namespace = namespace if namespace is not None else self.model

    def key_for(self, request: ChatRequest) -> str:
        return content_hash([self.namespace, request_key(request)])

    async def complete(self, request: ChatRequest) -> ChatResponse:
        key = self.key_for(request)
        hit = self.cache.get(key)
        if hit is not None:
            return hit.model_copy(update={"cached": True, "latency_s": 0.0})
        response = await self.inner.complete(request)
        if response.finish_reason != "error":
            self.cache.put(key, response)
        return response
