"""A real local HTTP server speaking the chat-completions wire format, scripted per test."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One scripted HTTP answer of the stub server."""

    status: int = 200
    body: dict[str, Any] | None = None
    headers: tuple[tuple[str, str], ...] = ()
    delay_s: float = 0.0
    raw: bytes | None = None  # sent verbatim instead of `body` (HTML, truncated JSON, ...)
    echo_headers: bool = False  # an error body that copies the request headers (auth included)


def chat_body(content: str | None = "hello", tool_calls: Sequence[dict[str, Any]] = ()) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = list(tool_calls)
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "stub-model",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
    }


@dataclass
class StubChatServer:
    """A real HTTP server on 127.0.0.1 serving scripted replies; the last reply repeats."""

    script: list[Reply]
    requests: list[dict[str, Any]] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0  # the most requests the server held at once
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            index = min(len(self.requests), len(self.script)) - 1
            return self.script[index]

    def done(self) -> None:
        with self._lock:
            self.in_flight -= 1


def _handler_for(stub: StubChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 (http.server API)
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            reply = stub.next_reply(body)
            if reply.delay_s:
                time.sleep(reply.delay_s)
            payload = json.dumps(reply.body or {"error": {"message": "scripted"}}).encode()
            if reply.echo_headers:
                payload = json.dumps({"error": {"message": f"bad request {dict(self.headers)}"}})
                payload = payload.encode()
            if reply.raw is not None:
                payload = reply.raw
            try:
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                for name, value in reply.headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client timed out and left
            finally:
                stub.done()

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


class _Server(ThreadingHTTPServer):
    request_queue_size = 512  # the default backlog (5) drops bursts of concurrent connects
    daemon_threads = True


def start_stub_server(script: Sequence[Reply]) -> tuple[StubChatServer, str, ThreadingHTTPServer]:
    """Serve `script` on 127.0.0.1 (a free port) in a daemon thread."""
    stub = StubChatServer(script=list(script))
    server = _Server(("127.0.0.1", 0), _handler_for(stub))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return stub, f"http://127.0.0.1:{server.server_address[1]}/v1", server
