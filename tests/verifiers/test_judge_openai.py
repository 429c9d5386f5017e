"""The judge over the real openai backend, against a local OpenAI-compatible HTTP server."""

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from trajforge.generators.llm.openai_backend import OpenAIBackend
from trajforge.generators.llm.responders import judge_approves
from trajforge.schemas import ChatRequest, Message
from trajforge.verifiers.judge import JudgeConfig, TrajectoryJudge


def serve(content_for):
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(body)
            messages = tuple(
                Message(role=m["role"], content=m["content"]) for m in body["messages"]
            )
            request = ChatRequest(model=body["model"], messages=messages)
            reply = {
                "id": "c1",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": content_for(request)},
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5},
            }
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, seen


async def _judge_and_close(judge, backend, trajectory):
    """Judge on this loop, then close the backend's HTTP session on it (left open, aiohttp
    reports an "Unclosed client session" when the interpreter exits)."""
    try:
        return await judge.judge(trajectory, "Be nice.", seed=1)
    finally:
        await backend.aclose()


@pytest.mark.parametrize(
    "content, status",
    [(judge_approves, "graded"), (lambda r: "I think it went well!", "ungradeable")],
)
def test_judge_over_openai_backend(good_trajectory, content, status):
    server, seen = serve(content)
    try:
        backend = OpenAIBackend(
            "judge-model",
            base_url=f"http://127.0.0.1:{server.server_port}/v1",
            api_key="test",
            max_retries=0,
        )
        judge = TrajectoryJudge([backend], ["judge-model"], JudgeConfig(max_attempts=2))
        judgement = asyncio.run(_judge_and_close(judge, backend, good_trajectory))
    finally:
        server.shutdown()
    assert judgement.status == status
    assert seen[0]["response_format"] == {"type": "json_object"}
    assert len(seen) == (1 if status == "graded" else 2)  # malformed answers are retried
