"""A persistent response cache, so an interrupted or repeated build never pays twice for a call.

Keyed by the canonical request (`ChatRequest.cache_key()`: model, messages, tools, sampling
params, seed, response format) under a namespace naming the backend's model, so two backends
answering the same request text never share entries. Stored in one sqlite file in WAL mode:
many readers and one writer at a time, across threads (one connection per thread) and across
processes (Beam may run several workers on one machine). Only successful responses are stored.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Protocol

from trajforge.generators.llm.request_keys import RequestKeys
from trajforge.schemas import ChatRequest, ChatResponse, LLMClient, content_hash

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


class CachedLLM:
    """Answers from the cache when it can; otherwise asks `inner` and stores the answer."""

    def __init__(self, inner: LLMClient, cache: ResponseStore, namespace: str | None = None):
        self.inner = inner
        self.cache = cache
        self.model = getattr(inner, "model", "")
        self.namespace = namespace if namespace is not None else self.model
        self.keys = RequestKeys()  # this client's memo of its records' canonical JSON

    def key_for(self, request: ChatRequest) -> str:
        """The namespace and `request.cache_key()` (made from the memoised parts)."""
        return content_hash([self.namespace, self.keys(request)])

    async def complete(self, request: ChatRequest) -> ChatResponse:
        key = self.key_for(request)
        hit = self.cache.get(key)
        if hit is not None:
            return hit.model_copy(update={"cached": True, "latency_s": 0.0})
        response = await self.inner.complete(request)
        if response.finish_reason != "error":
            self.cache.put(key, response)
        return response
