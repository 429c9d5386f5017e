"""The OpenEnv server: started with its one command on 127.0.0.1, driven by OpenEnv's own client;
one environment per session, at most --max-sessions, rewards equal to the eval gate."""

from __future__ import annotations

import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.finetune.chat_policy_stub import scripted_agent_turn
from trajforge.finetune.environments import CONVERSATION_OVER, USER_TOOL
from trajforge.finetune.evaluate import CHECKS
from trajforge.finetune.openenv_server import parse_args
from trajforge.generators.domains import get_domain
from trajforge.schemas import Message, Trajectory
from trajforge.verifiers.gate import gate_verdict

openenv_core = pytest.importorskip("openenv.core", reason="openenv-core is an optional extra")

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs/guides/openenv.md"
DOMAIN = get_domain("retail")
pytestmark = pytest.mark.timeout(180)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    """The server process, started with docs/guides/openenv.md's command on a free port (2
    fresh retail tasks that both write, 2 sessions), stopped after."""
    port = free_port()
    (line,) = re.findall(r"```bash\n(.*?)```", PAGE.read_text(), re.S)
    command = shlex.split(line.replace("\\\n", " "))
    assert command[:3] == ["python", "-m", "trajforge.finetune.openenv_server"]
    command[0] = sys.executable
    command[command.index("--port") + 1] = str(port)
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{url}/health", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    out = proc.stdout.read().decode() if proc.stdout else ""
                    pytest.fail(f"the server did not come up:\n{out[-3000:]}")
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def play(client, task, policy: str):
    """An episode through the client: `oracle` (confirms each write) or `rude` (the gold calls
    unconfirmed, then the closing); returns the final step's result."""
    opened = client.reset(task_index=task.index)
    messages = [Message(role="user", content=opened.observation["text"])]
    for _ in range(60):
        msg = scripted_agent_turn(policy, task.task, DOMAIN, messages)
        messages.append(msg)
        if msg.tool_calls:
            (call,) = msg.tool_calls
            result = client.step({"name": call.name, "arguments": dict(call.arguments)})
            messages.append(Message(role="tool", content=result.observation["text"],
                                    tool_call_id=call.id))  # fmt: skip
        else:
            result = client.step({"name": USER_TOOL, "arguments": {"message": msg.content}})
            messages.append(Message(role="user", content=result.observation["text"]))
        if result.done:
            return result
    raise AssertionError("the episode did not end")


class Indexed:
    def __init__(self, index, task):
        self.index, self.task = index, task


@pytest.fixture(scope="module")
def tasks():
    from trajforge.finetune.env_tasks import load_env_tasks

    loaded = load_env_tasks(parse_args(["--num-tasks", "2", "--seed", "2"]).source)
    return [Indexed(i, t) for i, t in enumerate(loaded.tasks)]


def test_rewards_equal_the_eval_gate(server, tasks):
    seen = {}
    with openenv_core.GenericEnvClient(base_url=server).sync() as client:
        for task in tasks:
            for policy in ("oracle", "rude"):
                result = play(client, task, policy)
                trajectory = Trajectory.model_validate_json(result.observation["trajectory_json"])
                assert trajectory.task.id == task.task.id
                verdict = gate_verdict(trajectory, DOMAIN, CHECKS)
                assert result.reward == (1.0 if verdict.kept else 0.0)
                assert result.observation["reasons"] == [r.reason for r in verdict.reasons]
                seen[task.index, policy] = verdict.kept
    assert seen == {(0, "oracle"): True, (0, "rude"): False, (1, "oracle"): True,
                    (1, "rude"): False}  # fmt: skip


def test_reset_offers_the_tools_and_the_conversation_ends(server, tasks):
    with openenv_core.GenericEnvClient(base_url=server).sync() as client:
        opened = client.reset(task_index=0)
        names = {t["name"] for t in opened.observation["tools"]}
        assert names == {s.name for s in DOMAIN.toolbox.specs} | {USER_TOOL}
        assert opened.observation["task_id"] == tasks[0].task.id and not opened.done
        play(client, tasks[0], "oracle")
        after = client.step({"name": USER_TOOL, "arguments": {"message": "anything else?"}})
        assert after.observation["text"] == CONVERSATION_OVER and after.done


def test_sessions_are_isolated_and_bounded(server, tasks):
    """Two sessions play different tasks at once without sharing state; a third is refused
    (the server closes it at capacity) until one of them ends."""

    def client():
        return openenv_core.GenericEnvClient(base_url=server).sync()

    with client() as first:
        with client() as second:
            first.reset(task_index=0)
            second.reset(task_index=1)
            assert first.state()["task_id"] == tasks[0].task.id
            assert second.state()["task_id"] == tasks[1].task.id
            with pytest.raises(Exception), client() as third:  # noqa: B017 (a closed socket)
                third.reset(task_index=0)
            assert play(first, tasks[0], "oracle").reward == 1.0
        time.sleep(0.5)  # the server frees the closed session's slot
        with client() as third:
            assert third.reset(task_index=1).observation["task_id"] == tasks[1].task.id


def test_the_docs_client_example_runs(server, tasks, capsys):
    (code,) = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)
    exec(compile(code.replace("http://127.0.0.1:8000", server), str(PAGE), "exec"), {})
    printed = capsys.readouterr().out
    assert "send_message_to_user" in printed and tasks[0].task.id in printed
