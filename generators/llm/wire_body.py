"""The `/chat/completions` request body as bytes, assembled from per-record encodings.

Why: a rollout resends its whole conversation and tool list with every request. Building the
body dict (a list of message dicts, a list of tool dicts) and encoding all of it again on every
call is quadratic in the conversation's length (36-59 us of loop CPU for a 20-message retail request). Each
message's JSON is encoded once per object (records are frozen and requests carry the very
objects the rollout appended, see wire_memo.py), the tool list's JSON once per tuple of tool
objects, and the body is their concatenation with the few per-request fields.

The body is byte-identical to encoding `payload_for`'s dict whole: compact JSON (orjson, or
the standard library with `(",", ":")` separators) encodes an object as its members in insertion
order joined by commas, whatever surrounds it, so the concatenation of the parts is the encoding
of the whole. `tests/generators/llm/test_wire_body.py` compares the two on many requests.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from trajforge.generators.llm.wire_memo import IdentityMemo
from trajforge.schemas import ChatRequest, Message, ToolSpec

try:  # several times faster than json on these bodies; optional
    import orjson

    dumps: Callable[[Any], bytes] = orjson.dumps
except ImportError:  # pragma: no cover - depends on the environment

    def dumps(value: Any) -> bytes:
        return json.dumps(value, separators=(",", ":")).encode()


#: Each message's and tool's wire dict, made once per object (wire_memo.py).
message_wire: IdentityMemo[Message] = IdentityMemo(Message.openai_dict)
tool_wire: IdentityMemo[ToolSpec] = IdentityMemo(ToolSpec.openai_schema)


def _kept_encoding(message: Message) -> bytes:
    """The message's JSON as an exact-size copy: orjson's result keeps its whole write buffer
    (~5 KB for a ~350-byte message), which the memo would hold for thousands of messages."""
    return bytes(memoryview(dumps(message.openai_dict())))


#: Each message's encoded wire dict, once per object.
_message_json: IdentityMemo[Message] = IdentityMemo(_kept_encoding)

#: Tool lists kept encoded: a handful of domains' lists per process.
TOOL_LISTS_KEPT = 64


class _ToolListJson:
    """The encoded `tools` array per tuple of tool objects (by identity: equal specs whose
    schema dicts differ in key order encode differently). Each entry holds its tools, so the
    ids stay valid; past `TOOL_LISTS_KEPT` lists it starts over."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[tuple[int, ...], tuple[tuple[ToolSpec, ...], bytes]] = {}

    def __call__(self, tools: tuple[ToolSpec, ...]) -> bytes:
        key = tuple(map(id, tools))
        hit = self._entries.get(key)
        if hit is not None:
            return hit[1]
        encoded = b"[" + b",".join(dumps(tool_wire(t)) for t in tools) + b"]"
        with self._lock:
            if len(self._entries) >= TOOL_LISTS_KEPT:
                self._entries.clear()
            self._entries[key] = (tools, encoded)
        return encoded


_tool_list_json = _ToolListJson()


def payload_dict(model: str, request: ChatRequest) -> dict[str, Any]:
    """The body as a dict (the SDK transport's input, and the reference for `body_bytes`)."""
    sampling = request.sampling
    payload: dict[str, Any] = {
        "model": model,
        "messages": [message_wire(m) for m in request.messages],
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "max_tokens": sampling.max_tokens,
    }
    if request.tools:
        payload["tools"] = [tool_wire(t) for t in request.tools]
    if request.seed is not None:
        payload["seed"] = request.seed
    payload.update(_stop_and_format(request))
    return payload


def _stop_and_format(request: ChatRequest) -> dict[str, Any]:
    """`stop` and `response_format`, each only when set (in this order)."""
    out: dict[str, Any] = {}
    if request.sampling.stop:
        out["stop"] = list(request.sampling.stop)
    if request.response_format == "json_object":
        out["response_format"] = {"type": "json_object"}
    return out


def body_bytes(model_json: bytes, request: ChatRequest) -> bytes:
    """`dumps(payload_dict(model, request))`, from the memoised encodings of its parts;
    `model_json` is `dumps(model)`, encoded once per backend."""
    sampling = request.sampling
    parts = [
        b'{"model":',
        model_json,
        b',"messages":[',
        b",".join([_message_json(m) for m in request.messages]),
        b'],"temperature":',
        dumps(sampling.temperature),
        b',"top_p":',
        dumps(sampling.top_p),
        b',"max_tokens":',
        dumps(sampling.max_tokens),
    ]
    if request.tools:
        parts += (b',"tools":', _tool_list_json(request.tools))
    if request.seed is not None:
        parts += (b',"seed":', dumps(request.seed))
    rest = _stop_and_format(request)
    if rest:  # the members of the encoded object, without its braces
        parts += (b",", dumps(rest)[1:-1])
    parts.append(b"}")
    return b"".join(parts)
