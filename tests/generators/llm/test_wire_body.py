"""The request body assembled from memoised parts is byte-identical to encoding the whole dict."""

from __future__ import annotations

import asyncio
import json
import random
import re
import sys

import orjson

from trajforge.generators.llm.cache import request_key
from trajforge.generators.llm.openai_backend import OpenAIBackend
from trajforge.generators.llm.wire_body import (
    TOOL_LISTS_KEPT,
    _kept_encoding,
    _tool_list_json,
    body_bytes,
)
from trajforge.schemas import ChatRequest, Message, SamplingParams, ToolCall, ToolSpec

TEXTS = [
    "",
    "plain",
    'quote " and \\ slash',
    "tab\tnew\nline",
    "é ü 日本 🙂",
    "</script>",
    "x" * 300,
]


def fresh_body(model: str, request: ChatRequest) -> bytes:
    """The reference: every record converted again, the whole dict encoded at once."""
    payload: dict = {
        "model": model,
        "messages": [m.openai_dict() for m in request.messages],
        "temperature": request.sampling.temperature,
        "top_p": request.sampling.top_p,
        "max_tokens": request.sampling.max_tokens,
    }
    if request.tools:
        payload["tools"] = [t.openai_schema() for t in request.tools]
    if request.seed is not None:
        payload["seed"] = request.seed
    if request.sampling.stop:
        payload["stop"] = list(request.sampling.stop)
    if request.response_format == "json_object":
        payload["response_format"] = {"type": "json_object"}
    return orjson.dumps(payload)


def random_call(rng: random.Random, index: int) -> ToolCall:
    if rng.random() < 0.2:
        return ToolCall(
            id=f"c{index}", name="get", parse_error="bad JSON", raw_arguments="{not json"
        )
    arguments = {"id": rng.choice(TEXTS), "n": rng.randint(-5, 10**12), "f": rng.random()}
    if rng.random() < 0.5:
        arguments["nested"] = {"z": [1, 2.5, None, True], "a": rng.choice(TEXTS)}
    return ToolCall(id=f"c{index}", name=rng.choice(["get", "set_it"]), arguments=arguments)


def random_message(rng: random.Random, index: int) -> Message:
    role = rng.choice(["system", "user", "assistant", "tool"])
    if role == "assistant" and rng.random() < 0.5:
        calls = tuple(random_call(rng, index * 10 + k) for k in range(rng.randint(1, 3)))
        return Message(role=role, content=rng.choice([None, *TEXTS]), tool_calls=calls)
    if role == "tool":
        return Message(role=role, content=rng.choice(TEXTS), tool_call_id=f"c{index}", name="get")
    return Message(role=role, content=rng.choice([None, *TEXTS]))


def random_tool(rng: random.Random, index: int) -> ToolSpec:
    properties = {f"p{k}": {"type": rng.choice(["string", "integer"])} for k in range(3)}
    if rng.random() < 0.5:  # key order matters on the wire
        properties = dict(reversed(properties.items()))
    return ToolSpec(
        name=f"tool_{index}",
        description=rng.choice(TEXTS),
        parameters={"type": "object", "properties": properties, "required": ["p0"]},
        kind=rng.choice(["read", "write"]),
        mutates_state=rng.random() < 0.5,
    )


def random_sampling(rng: random.Random) -> SamplingParams:
    return SamplingParams(
        temperature=rng.choice([0.0, 0.7, 1.0, 2.0, rng.random() * 2, 1e-7]),
        top_p=rng.choice([1.0, 0.95, rng.random() * 0.99 + 0.01]),
        max_tokens=rng.randint(1, 32768),
        stop=tuple(rng.sample(["\n", "</s>", "STOP", "é"], rng.randint(0, 3))),
    )


def test_growing_conversations_match_the_whole_encoding():
    """Many rollouts' requests (the same message objects resent, as a rollout does): every body
    equals the reference, byte for byte."""
    rng = random.Random(7)
    backend = OpenAIBackend("m-ü", base_url="http://127.0.0.1:9/v1", needs_api_key=False)
    tool_lists = [tuple(random_tool(rng, i) for i in range(n)) for n in (0, 1, 3, 12)]
    checked = 0
    for _ in range(60):
        messages = [random_message(rng, i) for i in range(rng.randint(0, 14))]
        tools = rng.choice(tool_lists)
        for end in range(len(messages) + 1):
            request = ChatRequest(
                model="ignored",
                messages=tuple(messages[:end]),
                tools=tuple(tools),  # a new tuple of the same specs per request
                sampling=random_sampling(rng),
                seed=rng.choice([None, 0, rng.randint(0, (1 << 63) - 1)]),
                response_format=rng.choice(["text", "json_object"]),
            )
            body = body_bytes(backend._model_json, request)
            assert body == fresh_body("m-ü", request)
            assert json.loads(body) == backend.payload_for(request)
            checked += 1
    assert checked > 300


def test_equal_but_distinct_records_are_encoded_anew():
    """A twin with equal fields (but another schema key order) is not answered from the memo."""
    backend = OpenAIBackend("m", base_url="http://127.0.0.1:9/v1", needs_api_key=False)
    spec = {"name": "t", "description": "d", "kind": "read", "mutates_state": False}
    first = ToolSpec(parameters={"a": 1, "b": 2}, **spec)
    twin = ToolSpec(parameters={"b": 2, "a": 1}, **spec)
    assert first == twin  # pydantic equality ignores dict order; the wire does not
    for tool in (first, twin, first):
        request = ChatRequest(model="m", messages=(), tools=(tool,))
        assert body_bytes(backend._model_json, request) == fresh_body("m", request)


def test_tool_list_memo_is_bounded():
    rng = random.Random(3)
    lists = [(random_tool(rng, i),) for i in range(TOOL_LISTS_KEPT * 2 + 5)]
    for tools in lists:
        assert _tool_list_json(tools) == orjson.dumps([t.openai_schema() for t in tools])
    assert len(_tool_list_json._entries) <= TOOL_LISTS_KEPT


async def _capture_raw_requests(requests: list[ChatRequest]) -> list[tuple[bytes, bytes]]:
    """Each request as the server reads it off the socket: (head, body)."""
    reply = orjson.dumps({"choices": [{"message": {"role": "assistant", "content": "ok"}}]})
    got: list[tuple[bytes, bytes]] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                return
            length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
            assert length is not None
            got.append((head, await reader.readexactly(int(length.group(1)))))
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(reply) + reply)
            await writer.drain()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    backend = OpenAIBackend("m", base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-test")
    for request in requests:
        await backend.complete(request)
    await backend.aclose()
    server.close()
    return got


def test_requests_on_the_socket_carry_the_reference_bodies():
    """What the aiohttp transport really sends: the reference body byte for byte, and the same
    head (request line and headers) on every request but for the body's length."""
    rng = random.Random(5)
    tools = tuple(random_tool(rng, i) for i in range(4))
    messages = [random_message(rng, i) for i in range(12)]
    requests = [
        ChatRequest(model="m", messages=tuple(messages[:end]), tools=tools, seed=end)
        for end in range(1, len(messages) + 1)
    ]
    raw = asyncio.run(_capture_raw_requests(requests))
    assert [body for _, body in raw] == [fresh_body("m", r) for r in requests]
    heads = {re.sub(rb"(?i)(content-length: *)\d+", rb"\1N", head) for head, _ in raw}
    assert len(heads) == 1 and next(iter(heads)).startswith(b"POST /v1/chat/completions HTTP/1.1")


def test_kept_message_encodings_hold_no_spare_buffer():
    """orjson's bytes keep their write buffer; the memo keeps exact-size copies instead."""
    message = Message(role="user", content="short")
    encoded = _kept_encoding(message)
    assert encoded == orjson.dumps(message.openai_dict())
    assert sys.getsizeof(encoded) - len(encoded) < 64


def test_cache_key_from_parts_equals_the_whole_request_key():
    """`request_key` (per-record canonical JSON, memoised) == `ChatRequest.cache_key()` on
    growing random conversations, float spellings the encoders disagree on included."""
    rng = random.Random(13)
    tool_lists = [tuple(random_tool(rng, i) for i in range(n)) for n in (0, 2, 9)]
    odd = Message(
        role="assistant",
        tool_calls=(ToolCall(id="c", name="f", arguments={"x": 1e-7, "y": -0.0, "z": 2**70}),),
    )
    for _ in range(40):
        messages = [random_message(rng, i) for i in range(rng.randint(0, 10))] + [odd]
        sampling = random_sampling(rng)
        for end in range(len(messages) + 1):
            request = ChatRequest(
                model=rng.choice(["m", "mödel"]),
                messages=tuple(messages[:end]),
                tools=rng.choice(tool_lists),
                sampling=sampling,
                seed=rng.choice([None, 0, rng.randint(0, (1 << 63) - 1)]),
                response_format=rng.choice(["text", "json_object"]),
            )
            assert request_key(request) == request.cache_key()
