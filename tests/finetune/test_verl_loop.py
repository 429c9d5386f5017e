"""The verl agent loop on CPU with a stub token server: rewards equal `trajforge eval`'s gate
verdicts on the same trajectories, and only the model's own tokens are trained (mask 1)."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.finetune.chat_policy_stub import scripted_agent_turn
from tests.finetune.conftest import trained_spans
from trajforge.finetune.environments import environment_trajectory
from trajforge.finetune.evaluate import CHECKS
from trajforge.finetune.families import get_family
from trajforge.finetune.tiny import train_tokenizer
from trajforge.finetune.verl_loop import (
    TrajforgeAgentLoop,
    VerlLoopConfig,
    task_json_of,
    verl_rows,
)
from trajforge.generators.domains import get_domain
from trajforge.generators.personas import sample_persona
from trajforge.generators.task_verification import verify_task
from trajforge.generators.user_tools import agent_view
from trajforge.schemas import Message, Task
from trajforge.verifiers.gate import gate_verdict

FAMILY = get_family("qwen2.5")


@pytest.fixture(scope="module")
def tokenizer():
    corpus = ['<tool_call>\n{"name": "get_order", "arguments": {}}\n</tool_call>'] * 4
    return train_tokenizer(corpus, FAMILY, vocab_size=600)


class StubServer:
    """verl's server manager for one loop: the scripted agent's next turn (on the
    environment's conversation, as the agent sees it) as Hermes text, then token ids."""

    def __init__(self, tokenizer, policy: str, task: Task, domain):
        self.tokenizer, self.policy, self.task, self.domain = tokenizer, policy, task, domain
        self.loop: TrajforgeAgentLoop | None = None
        self.generated: list[list[int]] = []

    async def generate(self, request_id, *, prompt_ids, sampling_params):
        assert self.loop is not None and self.loop.env is not None
        seen = agent_view(environment_trajectory(self.loop.env).messages)
        turn = scripted_agent_turn(self.policy, self.task, self.domain, list(seen))
        ids = self.tokenizer.encode(_text(turn) + FAMILY.end_of_turn, add_special_tokens=False)
        self.generated.append(ids)
        return type("Out", (), {"token_ids": ids, "log_probs": [-0.25] * len(ids)})()


def _text(turn: Message) -> str:
    if not turn.tool_calls:
        return turn.content or ""
    (call,) = turn.tool_calls
    body = json.dumps({"name": call.name, "arguments": dict(call.arguments)})
    return f"<tool_call>\n{body}\n</tool_call>"


def _tasks(name: str, n: int = 2):
    domain = get_domain(name)
    tasks = [verify_task(domain, domain.synthesize_task(sample_persona(i), i)) for i in range(n)]
    return domain, tasks


def _run(tokenizer, domain, task, policy: str):
    server = StubServer(tokenizer, policy, task, domain)
    config = VerlLoopConfig(domain=domain.name, response_length=1_000_000)  # byte-sized vocab
    loop = TrajforgeAgentLoop(server, tokenizer, config, domain)
    server.loop = loop
    (row,) = verl_rows(domain, [task])
    out = asyncio.run(loop.run({"temperature": 1.0}, **row))
    return out, loop, server


@pytest.mark.parametrize("name", ["retail", "phone"])
def test_rewards_equal_the_eval_gate(tokenizer, name):
    domain, tasks = _tasks(name)
    seen = {}
    for task in tasks:
        for policy in ("oracle", "rude"):
            out, loop, _ = _run(tokenizer, domain, task, policy)
            verdict = gate_verdict(environment_trajectory(loop.env), domain, CHECKS)
            assert out.reward_score == (1.0 if verdict.kept else 0.0)
            assert out.extra_fields["trajforge_reasons"] == [r.reason for r in verdict.reasons]
            seen[(task.id, policy)] = verdict.kept
    assert all(seen[(t.id, "oracle")] for t in tasks)
    assert not any(seen[(t.id, "rude")] for t in tasks)


def test_only_the_models_tokens_are_trained(tokenizer):
    domain, (task, *_) = _tasks("phone", 1)
    out, loop, server = _run(tokenizer, domain, task, "oracle")
    assert len(out.response_ids) == len(out.response_mask) == len(out.response_logprobs)
    # the trained spans are exactly the sampled turns, in order, never re-encoded
    assert trained_spans(out.response_ids, out.response_mask) == server.generated
    untrained = tokenizer.decode(
        [t for t, m in zip(out.response_ids, out.response_mask, strict=True) if not m]
    )
    trajectory = environment_trajectory(loop.env)
    replies = [m.content for m in trajectory.messages if m.role == "user" and m.content][1:-1]
    assert replies and all(reply in untrained for reply in replies)
    # a dual-control user's own tool calls ran (state) but never reached the model
    assert trajectory.user_steps
    for step in trajectory.user_steps:
        assert step.call.name not in tokenizer.decode(out.prompt_ids + out.response_ids)
    assert out.reward_score == 1.0


def test_a_row_without_its_task_is_named():
    with pytest.raises(ValueError, match="extra_info.task_json"):
        task_json_of({"extra_info": {}})


def test_the_response_budget_ends_the_rollout(tokenizer):
    domain, (task, *_) = _tasks("retail", 1)
    server = StubServer(tokenizer, "oracle", task, domain)
    loop = TrajforgeAgentLoop(server, tokenizer, VerlLoopConfig(response_length=300), domain)
    server.loop = loop
    out = asyncio.run(loop.run({}, **verl_rows(domain, [task])[0]))
    assert len(out.response_ids) == len(out.response_mask) <= 300
    verdict = gate_verdict(environment_trajectory(loop.env), domain, CHECKS)
    assert out.reward_score == 0.0 and not verdict.kept


def test_the_docs_rows_example_runs(tmp_path, monkeypatch, capsys):
    """docs/guides/verl.md's dataset example, as written."""
    import re
    from pathlib import Path

    import pandas as pd

    page = Path(__file__).resolve().parents[2] / "docs/guides/verl.md"
    code = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(page), "exec"), {})
    assert capsys.readouterr().out.strip() == "4 trajforge"
    frame = pd.read_parquet(tmp_path / "phone_train.parquet")
    assert task_json_of(frame.iloc[0].to_dict())  # the loop finds the task in a read row
