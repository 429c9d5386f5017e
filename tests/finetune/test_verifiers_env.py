"""The `verifiers` export: rollouts through prime's own `Environment.evaluate`, against a scripted
OpenAI-compatible model on 127.0.0.1, earn exactly `trajforge eval`'s gate verdicts."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from tests.finetune.chat_policy_stub import scripted_agent_turn, serve_policy, wire_to_messages
from trajforge.finetune.evaluate import CHECKS
from trajforge.finetune.verifiers_env import (
    TRAJECTORY_KEY,
    gate_reasons,
    load_environment,
    prime_verifiers,
)
from trajforge.schemas import Task, Trajectory
from trajforge.verifiers.gate import gate_verdict

PAGE = Path(__file__).resolve().parents[2] / "docs/guides/verifiers.md"

try:
    VF = prime_verifiers()
except ImportError as err:  # optional extra: `pip install 'trajforge[rl]'`
    pytest.skip(f"prime's verifiers is not importable: {err}", allow_module_level=True)


def wire_call(call_id: str, name: str, arguments: dict) -> dict:
    """One tool call on the wire, under its own id (ids shared by several calls made the
    oracle pair every tool result with the last call: its closing then told one write six
    times and named the wrong order, which the outcome check now refuses)."""
    return {
        "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": name, "arguments": json.dumps(arguments)}}
        ]
    }  # fmt: skip


def make_policy(tasks_by_opening: dict[str, Task], domain):
    """`oracle`: confirms each write, calls the gold actions, closes (passes the gate).
    `rude`: the gold calls straight away, then the closing (gold state, no confirmation)."""

    def policy(body: dict) -> dict:
        messages = wire_to_messages(body["messages"])
        opening = next(m.content for m in messages if m.role == "user")
        turn = scripted_agent_turn(body["model"], tasks_by_opening[opening], domain, messages)
        if turn.tool_calls:
            (call,) = turn.tool_calls
            return wire_call(call.id, call.name, dict(call.arguments)) | {"content": None}
        return {"content": turn.content}

    return policy


@pytest.fixture(scope="module")
def env():
    return load_environment(domain="retail", num_tasks=2, seed=2)  # both tasks write


def run_eval(env, base_url: str, model: str, monkeypatch) -> list[dict]:
    monkeypatch.setenv("TRAJFORGE_STUB_KEY", "stub")
    client = VF.ClientConfig(api_key_var="TRAJFORGE_STUB_KEY", api_base_url=base_url)
    outputs = asyncio.run(
        env.evaluate(
            client=client,
            model=model,
            sampling_args={"temperature": 0.0},
            state_columns=[TRAJECTORY_KEY],
            on_progress=lambda *a, **k: None,
        )
    )
    return list(outputs["outputs"])


def test_rewards_equal_the_eval_gate(env, monkeypatch):
    domain = env.env_cls.domain
    rows = env.get_eval_dataset().to_list()
    tasks = {r["prompt"][-1]["content"]: Task.from_json(r["info"]["task_json"]) for r in rows}
    assert len(tasks) == 2
    with serve_policy(make_policy(tasks, domain)) as base_url:
        oracle = run_eval(env, base_url, "oracle", monkeypatch)
        rude = run_eval(env, base_url, "rude", monkeypatch)
    verdicts = {}
    for name, outputs in (("oracle", oracle), ("rude", rude)):
        assert len(outputs) == 2
        for out in outputs:
            assert out.get("error") is None, out.get("error")
            trajectory = Trajectory.model_validate_json(out[TRAJECTORY_KEY])
            verdict = gate_verdict(trajectory, domain, CHECKS)
            assert out["reward"] == (1.0 if verdict.kept else 0.0)
            failed = {r.reason for r in verdict.reasons}
            for reason in gate_reasons(CHECKS):
                assert out["metrics"][f"reason/{reason}"] == float(reason in failed)
            verdicts.setdefault(name, []).append(verdict)
    assert all(v.kept for v in verdicts["oracle"])  # a pass and ...
    assert not any(v.kept for v in verdicts["rude"])  # ... a policy failure, both seen
    assert all(
        "policy.confirm_before_write" in {r.reason for r in v.reasons} for v in verdicts["rude"]
    )


def test_user_turns_come_back_as_user_messages(env, monkeypatch):
    """The simulated user speaks in `env_response` (never as assistant tokens) and ends the
    rollout: the last message is the user's, and every tool result answers a tool call."""
    domain = env.env_cls.domain
    rows = env.get_eval_dataset().to_list()
    tasks = {r["prompt"][-1]["content"]: Task.from_json(r["info"]["task_json"]) for r in rows}
    with serve_policy(make_policy(tasks, domain)) as base_url:
        (out, _) = run_eval(env, base_url, "oracle", monkeypatch)
    roles = [m["role"] for m in out["completion"]]
    assert roles[-1] == "user" and "assistant" in roles and "tool" in roles
    assert out["is_completed"]


def test_tools_are_the_domain_tools(env):
    names = {t.name for t in env.tool_defs}
    assert names == {s.name for s in env.env_cls.domain.toolbox.specs}


def test_the_docs_example_runs(env, monkeypatch, capsys):
    """docs/guides/verifiers.md's example, as written, against the scripted model."""
    (code,) = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)
    domain = env.env_cls.domain
    rows = env.get_eval_dataset().to_list()
    tasks = {r["prompt"][-1]["content"]: Task.from_json(r["info"]["task_json"]) for r in rows}
    with serve_policy(make_policy(tasks, domain)) as base_url:
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "stub")
        monkeypatch.setenv("MODEL", "oracle")
        exec(compile(code, str(PAGE), "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert sorted(printed) == sorted(f"{t.id} 1.0 []" for t in tasks.values())
