"""The request bodies reaching the endpoint and the response cache's keys, pinned.

The backend builds each body plainly (every message and tool converted per request, the dict
encoded whole); the cache keys each request by `ChatRequest.cache_key()`, made from its
records' memoised canonical JSON (`RequestKeys`, one per `CachedLLM`). Earlier versions
assembled the bodies from module-level memos too; the digests below were taken from that code
(commit 670328b) on the same random requests, so a change to any body byte or any key fails.
Only public entry points are used (`OpenAIBackend.complete` over a socket, `CachedLLM.key_for`),
so the same test runs against either implementation.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import re

import orjson

from trajforge.generators.llm.cache import CachedLLM, ResponseCache
from trajforge.generators.llm.openai_backend import OpenAIBackend
from trajforge.generators.llm.scripted import ScriptedLLM
from trajforge.schemas import (
    ChatRequest,
    Message,
    SamplingParams,
    ToolCall,
    ToolSpec,
    content_hash,
)

#: sha256 of every body, in order, that `growing_requests()` puts on the socket (670328b).
BODIES_DIGEST = "8eec8f04e3fc6ec33fdb180710ed5a97978c38a1efe6f057d5d548e97e8cd3bd"
#: sha256 of every cache key, in order, of `growing_requests()` (670328b).
KEYS_DIGEST = "5bf9dc7e4bcb89407af431aedcc186d510ce84c48e406cbcd9bc14c7d37673bf"

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


def growing_requests() -> list[ChatRequest]:
    """Rollouts' requests: the same message objects resent, growing, with random tools,
    sampling, seeds and response formats (float spellings the encoders disagree on too)."""
    rng = random.Random(7)
    tool_lists = [tuple(random_tool(rng, i) for i in range(n)) for n in (0, 1, 3, 12)]
    odd = Message(
        role="assistant",
        tool_calls=(ToolCall(id="c", name="f", arguments={"x": 1e-7, "y": -0.0, "z": 2**70}),),
    )
    requests = []
    for _ in range(30):
        messages = [random_message(rng, i) for i in range(rng.randint(0, 12))] + [odd]
        tools = rng.choice(tool_lists)
        for end in range(len(messages) + 1):
            requests.append(
                ChatRequest(
                    model=rng.choice(["m", "mödel"]),
                    messages=tuple(messages[:end]),
                    tools=tuple(tools),
                    sampling=random_sampling(rng),
                    seed=rng.choice([None, 0, rng.randint(0, (1 << 63) - 1)]),
                    response_format=rng.choice(["text", "json_object"]),
                )
            )
    return requests


def digest(parts: list[bytes]) -> str:
    whole = hashlib.sha256()
    for part in parts:
        whole.update(hashlib.sha256(part).digest())
    return whole.hexdigest()


def test_bodies_on_the_socket_are_the_pinned_bodies():
    requests = growing_requests()
    assert len(requests) > 200
    raw = asyncio.run(_capture_raw_requests(requests))
    bodies = [body for _, body in raw]
    assert bodies == [fresh_body("m", r) for r in requests]
    assert digest(bodies) == BODIES_DIGEST


def test_cache_keys_are_the_pinned_keys(tmp_path):
    """The key of each request (namespace: the backend's model) is its whole canonical dump's."""
    cached = CachedLLM(
        ScriptedLLM([], model="stub-model"), ResponseCache(tmp_path / "cache.sqlite")
    )
    requests = growing_requests()
    keys = [cached.key_for(r) for r in requests]
    assert keys == [content_hash(["stub-model", r.cache_key()]) for r in requests]
    assert digest([k.encode() for k in keys]) == KEYS_DIGEST
