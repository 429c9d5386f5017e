"""An OpenAI-compatible chat server on 127.0.0.1 whose answers come from a scripted agent.

Why not benchmarks/stub_server.py: its agent calls tools with placeholder arguments, so every
rollout fails the same way. Environment adapters must show that a passing and a failing
trajectory get the gate's verdicts, so this stub plays a real policy per request: `policy(body)`
returns the assistant message (an OpenAI wire dict) for the conversation in `body`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from trajforge.generators.agent import oracle_closing, oracle_for
from trajforge.generators.llm.concurrency import run_all
from trajforge.schemas import Message, Task, ToolCall

Policy = Callable[[dict[str, Any]], dict[str, Any]]


def scripted_agent_turn(policy: str, task: Task, domain: Any, messages: list[Message]) -> Message:
    """The next assistant message of a scripted agent, shared by the adapters' tests.

    `oracle`: the gold plan, confirming each write, then the closing (passes the gate).
    `rude`: the gold calls straight away, then the closing (gold state, no confirmation: a
    policy failure the gate must refuse)."""
    if policy == "oracle":
        act = oracle_for(task, domain).act(messages, domain.toolbox.specs, 0)
        return run_all([act], 1)[0].message
    issued = sum(len(m.tool_calls) for m in messages if m.role == "assistant")
    if issued < len(task.gold_actions):
        action = task.gold_actions[issued]
        call = ToolCall(id=f"call_{issued}", name=action.name, arguments=action.arguments)
        return Message(role="assistant", tool_calls=(call,))
    return Message(role="assistant", content=oracle_closing(task))


def wire_to_messages(wire: list[dict[str, Any]]) -> list[Message]:
    """OpenAI wire messages back into trajforge Messages (arguments parsed from JSON)."""
    out = []
    for m in wire:
        calls = tuple(
            ToolCall(
                id=c["id"],
                name=c["function"]["name"],
                arguments=json.loads(c["function"]["arguments"] or "{}"),
            )
            for c in m.get("tool_calls") or ()
        )
        content = m.get("content")
        if isinstance(content, list):  # content parts
            content = "".join(p.get("text", "") for p in content)
        out.append(
            Message(
                role=m["role"], content=content, tool_calls=calls,
                tool_call_id=m.get("tool_call_id"),
            )
        )  # fmt: skip
    return out


def completion(body: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
    """A chat.completion response carrying `message`."""
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "stub"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", **message},
                "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


@contextmanager
def serve_policy(policy: Policy) -> Iterator[str]:
    """Serve `policy` at http://127.0.0.1:PORT/v1 for the block; yields the base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server API)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            try:
                payload, status = completion(body, policy(body)), 200
            except Exception as err:  # the test sees the policy's failure as a 500
                payload, status = {"error": {"message": repr(err)}}, 500
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
