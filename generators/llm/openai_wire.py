"""The chat-completions wire format: decoding bodies, classifying failures, parsing responses.

Why a separate module: the retry policy is a table of decisions (which failure is transient,
which permanent, what the message says) that must be testable without a server, and the
backend (connections, retry loop) stays small. Policy:

- transient, retried with backoff: 408, 409, 429, 5xx, timeouts, connection errors, and a 2xx
  whose body is not JSON (an HTML error page from a proxy, a body cut off mid-stream);
- permanent, failed at once with a clear message: other 4xx, a malformed URL;
- a JSON body that is not a usable answer (no choices, content of non-text parts) is a
  permanent, named error.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from trajforge.generators.llm.redact import ERROR_BODY_CHARS, bounded, redact
from trajforge.generators.llm.toolcall_text import parse_arguments
from trajforge.schemas import ChatRequest, ChatResponse
from trajforge.schemas.llm import FinishReason

try:  # several times faster than json on these bodies; optional
    import orjson

    _fast_loads: Any = orjson.loads
    encode_body: Callable[[Any], bytes] = orjson.dumps
except ImportError:  # pragma: no cover - depends on the environment
    _fast_loads = json.loads

    def encode_body(value: Any) -> bytes:
        """Compact JSON, as orjson writes it (ASCII-escaped where orjson writes UTF-8)."""
        return json.dumps(value, separators=(",", ":")).encode()


RETRYABLE_STATUS = frozenset({408, 409, 429})
FINISH_REASONS: Mapping[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
}


@dataclass(frozen=True, slots=True)
class Failure:
    """One failed attempt: what to report, whether to retry, why (the retry counter's cause),
    and the server's requested wait."""

    what: str
    retryable: bool
    cause: str
    retry_after_s: float | None = None
    detail: str = ""


class BadResponse(ValueError):
    """A JSON body that is not a usable chat completion; the message says what is wrong."""


def request_payload(model: str, request: ChatRequest) -> dict[str, Any]:
    """The `/chat/completions` body as a dict: every message and tool converted per request.

    A rollout resends its whole conversation, so this is quadratic in its length; caching the
    conversions by object identity saved no measurable whole-build CPU (benchmarks/README.md,
    "Issue 31: wire_body and wire_memo, measured again"), so it is done plainly. Optional
    members only when set, in this order (the request bodies of earlier builds, byte for
    byte)."""
    sampling = request.sampling
    payload: dict[str, Any] = {
        "model": model,
        "messages": [m.openai_dict() for m in request.messages],
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "max_tokens": sampling.max_tokens,
    }
    if request.tools:
        payload["tools"] = [t.openai_schema() for t in request.tools]
    if request.seed is not None:
        payload["seed"] = request.seed
    if sampling.stop:
        payload["stop"] = list(sampling.stop)
    if request.response_format == "json_object":
        payload["response_format"] = {"type": "json_object"}
    return payload


def status_failure(status: int, headers: Mapping[str, str], body: str) -> Failure:
    """The failure for a non-2xx status; the body is cut and redacted (it may echo headers)."""
    if status == 429:
        cause = "rate_limited"
    elif status >= 500:
        cause = "server_error"
    else:
        cause = f"http_{status}"
    retryable = status in RETRYABLE_STATUS or status >= 500
    detail = bounded(redact(body), ERROR_BODY_CHARS)
    return Failure(f"HTTP {status}", retryable, cause, parse_retry_after(headers), detail)


def decode_body(raw: bytes) -> Any:
    """JSON of a 2xx body, or a transient `Failure` (HTML page, truncated body).

    orjson refuses lone UTF-16 surrogates (`"\\ud800"`), which the JSON grammar allows; the
    standard parser accepts them and the sanitisation boundary (schemas/sanitize.py) then
    replaces them, so such an answer is kept instead of failing."""
    try:
        return _fast_loads(raw)
    except ValueError:
        pass
    try:
        return json.loads(raw)
    except ValueError as exc:
        head = raw[:80].decode("utf-8", "replace")
        kind = "an HTML page" if head.lstrip().startswith("<") else "not complete JSON"
        return Failure(
            f"2xx body is {kind}", True, "bad_body", None, redact(f"{exc}; body starts {head!r}")
        )


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked us to wait (`retry-after-ms`, `retry-after` seconds or date)."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, parsed.timestamp() - time.time())


def _content(wire_message: Mapping[str, Any]) -> str | None:
    """Message content; a list of text parts (some servers send one) is joined."""
    content = wire_message.get("content")
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        if len(texts) == len(content) and all(isinstance(t, str) for t in texts):
            return "".join(texts)
        kinds = sorted(
            {str(p.get("type")) if isinstance(p, dict) else type(p).__name__ for p in content}
        )
        raise BadResponse(f"message content is a list with non-text parts {kinds}; text only")
    raise BadResponse(f"message content is a {type(content).__name__}, expected a string")


def parse_chat(data: Any, model: str, latency_s: float) -> ChatResponse:
    """A decoded chat-completion body -> ChatResponse, or `BadResponse` naming the problem."""
    if not isinstance(data, dict):
        raise BadResponse(f"body is a JSON {type(data).__name__}, expected an object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise BadResponse(
            "the server returned no choices (`choices` is missing or empty); check that the "
            "model name is served and the request was not filtered"
        )
    choice = choices[0]
    wire_message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(wire_message, dict):
        raise BadResponse("choices[0] has no `message` object")
    tool_calls = tuple(
        tool_call(index, wire) for index, wire in enumerate(wire_message.get("tool_calls") or ())
    )
    finish = FINISH_REASONS.get(choice.get("finish_reason") or "stop", "stop")
    if tool_calls:
        finish = "tool_calls"
    usage = data.get("usage") or {}
    # One validation of the nested fields (not one constructor per record: each is a separate
    # round trip into pydantic); the same fields are given, so the records are the same.
    return ChatResponse.model_validate(
        {
            "message": {
                "role": "assistant",
                "content": _content(wire_message),
                "tool_calls": tool_calls,
            },
            "model": data.get("model") or model,
            "finish_reason": finish,
            "usage": {
                "prompt_tokens": usage.get("prompt_tokens") or 0,
                "completion_tokens": usage.get("completion_tokens") or 0,
            },
            "latency_s": latency_s,
        }
    )


def tool_call(index: int, wire: Mapping[str, Any]) -> dict[str, Any]:
    """One wire tool call's `ToolCall` fields; bad argument JSON keeps the call with
    `parse_error` and the raw text."""
    function = wire.get("function") or {}
    name = function.get("name") or ""
    raw = function.get("arguments")
    call_id = wire.get("id") or f"call_{index}"
    if isinstance(raw, dict):  # some servers send an object instead of a JSON string
        return {"id": call_id, "name": name, "arguments": raw}
    raw_text = raw if isinstance(raw, str) else ""
    arguments, error = parse_arguments(raw_text)
    if error is not None:
        return {"id": call_id, "name": name, "parse_error": error, "raw_arguments": raw_text}
    return {"id": call_id, "name": name, "arguments": arguments}


def base_url_problem(url: str) -> str | None:
    """Why `url` cannot be an endpoint base URL (None when it can). A malformed URL fails every
    call the same way, so it is refused at load time instead of dead-lettering every element."""

    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError on a non-numeric or out-of-range port
    except ValueError as err:
        return f"base_url {url!r} is malformed ({err})"
    if parts.scheme not in ("http", "https"):
        return f"base_url {url!r} needs the scheme http:// or https://"
    if not parts.hostname or any(c.isspace() for c in url):
        return f"base_url {url!r} has no valid host"
    if port == 0:
        return f"base_url {url!r} has port 0"
    return None
