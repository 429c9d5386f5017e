"""`trajforge eval` verifies attempts by the outcome check AND the domain's policy rules, counts
failing attempts per typed reason, and can play the user with an LLM (`--user llm`)."""

from __future__ import annotations

import json

import pytest

from trajforge.finetune.agents import user_factory
from trajforge.finetune.evaluate import EvalConfig, _attempt, fresh_tasks
from trajforge.generators.agent import AgentTurn, OracleAgent
from trajforge.generators.domains import get_domain
from trajforge.generators.llm.concurrency import run_all
from trajforge.pipelines.cli import main
from trajforge.schemas import Message, ToolCall


class HastyOracle:
    """The gold plan without asking first: it reaches the gold state, but writes with no
    confirmation turn (what the outcome check alone cannot see)."""

    def __init__(self, task):
        self._task = task
        self._oracle = OracleAgent(task)

    async def act(self, messages, tools, seed):
        turn = await self._oracle.act(messages, tools, seed)
        issued = sum(len(m.tool_calls) for m in messages if m.role == "assistant")
        if turn.message.tool_calls or issued >= len(self._task.gold_actions):
            return turn
        action = self._task.gold_actions[issued]  # the oracle asked for a yes: skip that
        call = ToolCall(id=f"call_{issued}", name=action.name, arguments=action.arguments)
        return AgentTurn(Message(role="assistant", content=None, tool_calls=(call,)))


@pytest.fixture(scope="module")
def write_task():
    domain = get_domain("retail")
    tasks, _ = fresh_tasks(domain, "eval", 0, 6)
    writes = {s.name for s in domain.toolbox.specs if s.mutates_state}
    return next(t for t in tasks if any(a.name in writes for a in t.gold_actions))


def _run(agent, task):
    domain, cfg = get_domain("retail"), EvalConfig()
    work = _attempt(task, 0, domain, agent, user_factory(None), cfg, "test")
    return run_all([work], 1)[0]


def test_policy_breaking_agent_fails_with_the_rule_while_the_oracle_passes(write_task):
    oracle = _run(OracleAgent(write_task), write_task)
    assert oracle.passed and oracle.failures == ()
    hasty = _run(HastyOracle(write_task), write_task)
    assert not hasty.passed
    assert "policy.confirm_before_write" in hasty.failures
    assert "state_mismatch" not in hasty.failures  # the gold state was reached


def test_eval_reports_failing_attempts_per_reason(tmp_path, capsys):
    out = tmp_path / "eval.json"
    argv = ["eval", "--model", "oracle", "--model", "scripted:rollout_dry_run",
            "--domain", "retail", "--num-tasks", "2", "--k", "2", "--json", str(out)]  # fmt: skip
    assert main(argv) == 0
    oracle, wrong = json.loads(out.read_text())
    assert oracle["failures"] == {} and oracle["user"] == "scripted"
    attempts = wrong["overall"]["attempts"]
    assert wrong["failures"] and max(wrong["failures"].values()) <= attempts
    assert "state_mismatch" in wrong["failures"]
    for task in wrong["tasks"]:
        assert task["failures"] and all(n <= task["attempts"] for n in task["failures"].values())
    printed = capsys.readouterr().out
    assert "failing attempts by reason, scripted:rollout_dry_run" in printed
    assert "state_mismatch" in printed


def test_eval_with_an_llm_user(tmp_path):
    """`--user llm` runs the LLM user (here the scripted backend's echo responder, which
    parrots the agent): the oracle never gets a yes or a goodbye, and the report says why."""
    out = tmp_path / "eval.json"
    argv = ["eval", "--model", "oracle", "--user", "llm", "--user-model", "scripted:echo",
            "--domain", "retail", "--num-tasks", "2", "--max-turns", "4", "--json", str(out)]  # fmt: skip
    assert main(argv) == 0
    (report,) = json.loads(out.read_text())
    assert report["user"] == "llm:scripted:echo"
    assert report["overall"]["pass_hat"]["1"] < 1.0 and report["failures"]


def test_eval_refuses_the_oracle_as_user():
    with pytest.raises(ValueError, match="the oracle is an agent, not a user"):
        EvalConfig(user="llm", user_model="oracle")
    with pytest.raises(ValueError, match="expected oracle, scripted:RESPONDER"):
        EvalConfig(user="llm", user_model="not-a-model")
