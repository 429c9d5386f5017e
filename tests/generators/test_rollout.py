import asyncio
import contextlib

import pytest

from trajforge.generators.agent import AgentTurn, LLMAgent, OracleAgent, SampledTokens
from trajforge.generators.llm.scripted import ScriptedLLM
from trajforge.generators.rollout import run_rollout
from trajforge.generators.tooling import state_hash
from trajforge.generators.user import LLMUser, ScriptedUser, UserTurn
from trajforge.schemas import LLMError, Message, Rejected, ToolCall


def rollout(task, domain, agent, user, provenance, **kw):
    return asyncio.run(run_rollout(task, domain, agent, user, seed=1, provenance=provenance, **kw))


def assert_valid_tool_use(messages):
    """Every assistant tool call is answered by tool messages with matching ids, in order."""
    pending = []
    for m in messages:
        if m.role == "tool":
            assert pending and m.tool_call_id == pending.pop(0)
        else:
            assert not pending, f"unanswered tool calls {pending}"
            pending = [c.id for c in m.tool_calls]
    assert not pending


def test_oracle_rollout_reaches_gold_state_and_user_stop(toy_task, toy_domain, provenance):
    traj = rollout(toy_task, toy_domain, OracleAgent(toy_task), ScriptedUser(toy_task), provenance)
    assert traj.termination == "user_stop"
    assert traj.final_state_hash == toy_task.gold_final_hash
    assert (
        traj.messages[0].role == "system" and toy_domain.policy.strip() in traj.messages[0].content
    )
    assert traj.messages[1].role == "user"
    assert [s.call.name for s in traj.steps] == ["get_account", "deposit"]
    assert traj.steps[1].mutating and any("balance" in d.path for d in traj.steps[1].state_diff)
    assert_valid_tool_use(traj.messages)
    assert traj.mode == "rollout" and traj.id != "pending"


def test_malformed_tool_calls_become_error_observations(toy_task, toy_domain, provenance):
    bad_json = ToolCall(id="c1", name="deposit", parse_error="Expecting value", raw_arguments="{")
    unknown = ToolCall(id="c2", name="delete_everything", arguments={})
    wrong_type = ToolCall(
        id="c3", name="deposit", arguments={"account_id": "#A1001", "amount": "lots"}
    )
    good = [
        ToolCall(id="c4", name="get_account", arguments={"account_id": "#A1001"}),
        ToolCall(id="c5", name="deposit", arguments={"account_id": "#A1001", "amount": 25.5}),
    ]
    agent_llm = ScriptedLLM(
        replies=[
            Message(role="assistant", tool_calls=(bad_json, unknown)),
            Message(role="assistant", tool_calls=(wrong_type,)),
            Message(role="assistant", tool_calls=tuple(good)),
            "Done: your balance is now $125.50. Anything else?",
        ]
    )
    traj = rollout(
        toy_task, toy_domain, LLMAgent(agent_llm, "teacher"), ScriptedUser(toy_task), provenance
    )
    assert traj.termination == "user_stop"
    errors = [s.error for s in traj.steps[:3]]
    assert all(e and e.startswith("Error:") for e in errors)
    assert "could not parse" in errors[0] and "unknown tool" in errors[1]
    assert "invalid arguments" in errors[2]
    assert traj.final_state_hash == toy_task.gold_final_hash
    assert_valid_tool_use(traj.messages)
    assert traj.cost.llm_calls == 4


def test_agent_never_sees_gold_and_seeds_are_derived(toy_task, toy_domain, provenance):
    llm = ScriptedLLM(replies=["What is your account id?", "All done. Anything else?"])
    rollout(toy_task, toy_domain, LLMAgent(llm, "t"), ScriptedUser(toy_task), provenance)
    text = " ".join(r.model_dump_json() for r in llm.requests)
    assert '"amount":25.5' not in text  # no gold arguments anywhere in the agent's requests
    assert "125.50" not in text
    assert len({r.seed for r in llm.requests}) == 2


class SilentAgent:
    async def act(self, messages, tools, seed):
        return AgentTurn(Message(role="assistant", content="  "))


class ChattyUser:
    async def reply(self, conversation, seed):
        return UserTurn(Message(role="user", content="hello?"))


class TalkingAgent:
    async def act(self, messages, tools, seed):
        return AgentTurn(Message(role="assistant", content="Tell me more."))


class LoopingAgent:
    async def act(self, messages, tools, seed):
        call = ToolCall(id="x", name="get_account", arguments={"account_id": "#A1001"})
        return AgentTurn(Message(role="assistant", tool_calls=(call,)))


def test_terminations(toy_task, toy_domain, provenance):
    assert rollout(toy_task, toy_domain, SilentAgent(), ChattyUser(), provenance).termination == (
        "agent_error"
    )
    traj = rollout(toy_task, toy_domain, TalkingAgent(), ChattyUser(), provenance, max_turns=3)
    assert traj.termination == "max_turns" and sum(m.role == "user" for m in traj.messages) == 3
    traj = rollout(toy_task, toy_domain, LoopingAgent(), ChattyUser(), provenance, max_steps=5)
    assert traj.termination == "max_steps" and len(traj.steps) == 5
    assert len({s.call.id for s in traj.steps}) == 5  # repeated ids made unique
    assert_valid_tool_use(traj.messages)


class FloodingAgent:
    """500 tool calls in one turn."""

    async def act(self, messages, tools, seed):
        calls = tuple(
            ToolCall(id=f"c{i}", name="get_account", arguments={"account_id": "#A1001"})
            for i in range(500)
        )
        return AgentTurn(Message(role="assistant", tool_calls=calls))


def test_calls_past_the_step_limit_collapse_to_one_message(toy_task, toy_domain, provenance):
    traj = rollout(toy_task, toy_domain, FloodingAgent(), ChattyUser(), provenance, max_steps=6)
    assert traj.termination == "max_steps" and len(traj.steps) == 6
    limit = [m for m in traj.messages if "step limit" in (m.content or "")]
    assert len(limit) == 1 and "493 further calls of this turn dropped" in limit[0].content
    assert_valid_tool_use(traj.messages)


def test_transfer_tool_ends_rollout(toy_task, toy_domain, provenance):
    call = ToolCall(id="t", name="transfer_to_human_agents", arguments={"summary": "help"})
    llm = ScriptedLLM(replies=[Message(role="assistant", tool_calls=(call,))])
    traj = rollout(toy_task, toy_domain, LLMAgent(llm, "t"), ScriptedUser(toy_task), provenance)
    assert traj.termination == "transfer"
    assert traj.final_state_hash == state_hash(toy_domain.initial_state(toy_task.initial_state))


def test_llm_error_propagates(toy_task, toy_domain, provenance):
    llm = ScriptedLLM(replies=[])
    with pytest.raises(LLMError):
        rollout(toy_task, toy_domain, LLMAgent(llm, "t"), ScriptedUser(toy_task), provenance)


def test_persistent_user_role_confusion_is_rejected(toy_task, toy_domain, provenance):
    user = LLMUser(ScriptedLLM(replies=["How can I help?", "How may I assist you?"]), "u", toy_task)
    with pytest.raises(Rejected) as err:
        rollout(toy_task, toy_domain, OracleAgent(toy_task), user, provenance)
    assert err.value.reason == "role_confusion"


def test_dry_run_responder_drives_both_sides(toy_task, toy_domain, provenance):
    from trajforge.generators.llm.responders import RESPONDERS
    from trajforge.verifiers.outcome import verify_outcome

    llm = ScriptedLLM(responder=RESPONDERS["rollout_dry_run"])
    user = LLMUser(llm, "u", toy_task)
    traj = rollout(toy_task, toy_domain, LLMAgent(llm, "a"), user, provenance)
    assert traj.termination == "user_stop"
    assert traj.messages[1].content == toy_task.scenario.reason_for_contact
    result = verify_outcome(traj, toy_domain)
    assert not result.passed and not result.state_match and result.termination_ok


class Recorder:
    """A RolloutObserver that keeps what it is told."""

    def __init__(self):
        self.seen = []

    def on_message(self, message, turn):
        self.seen.append((message, turn))


class TokenOracle:
    """The oracle, with fake sampled tokens attached to each turn (one per message character)."""

    def __init__(self, task):
        self._oracle = OracleAgent(task)

    async def act(self, messages, tools, seed):
        turn = await self._oracle.act(messages, tools, seed)
        n = len(turn.message.content or "") + len(turn.message.tool_calls)
        return AgentTurn(turn.message, sampled=SampledTokens(tuple(range(n)), (-0.5,) * n))


def test_observer_sees_every_message_in_order_with_agent_turns(toy_task, toy_domain, provenance):
    recorder = Recorder()
    traj = rollout(
        toy_task,
        toy_domain,
        TokenOracle(toy_task),
        ScriptedUser(toy_task),
        provenance,
        observer=recorder,
    )
    assert tuple(m for m, _ in recorder.seen) == traj.messages
    for message, turn in recorder.seen:
        assert (turn is not None) == (message.role == "assistant")
        if turn is not None:
            assert turn.sampled is not None and len(turn.sampled.token_ids) > 0
            assert turn.message.content == message.content


def test_sampled_tokens_need_one_logprob_per_token():
    with pytest.raises(ValueError, match="one log-probability per sampled token"):
        SampledTokens((1, 2, 3), (-0.1,))


def _retail_tasks(count):
    from trajforge.generators.domains import get_domain
    from trajforge.generators.personas import sample_persona
    from trajforge.generators.tooling import TaskRejected

    domain = get_domain("retail")
    tasks, seed = [], 0
    while len(tasks) < count:
        with contextlib.suppress(TaskRejected):
            tasks.append(domain.synthesize_task(sample_persona(seed), seed))
        seed += 1
    return domain, tasks


class ClumsyOracle:
    """The gold plan, with a failing write (unknown id) and a repeated read before each gold
    call, so shared dumps must survive restores and reads between writes."""

    def __init__(self, task):
        self.calls = []
        for i, action in enumerate(task.gold_actions):
            bad = {k: ("#NOPE" if isinstance(v, str) else v) for k, v in action.arguments.items()}
            self.calls += [
                ToolCall(id=f"bad{i}", name=action.name, arguments=bad),
                ToolCall(id=f"ok{i}", name=action.name, arguments=action.arguments),
            ]

    async def act(self, messages, tools, seed):
        done = sum(m.role == "tool" for m in messages)
        if done >= len(self.calls):
            return AgentTurn(Message(role="assistant", content="All done. Anything else?"))
        return AgentTurn(Message(role="assistant", tool_calls=(self.calls[done],)))


class ReadOnlyAgent:
    """Reads the first gold action's target, then answers: no write ever runs."""

    def __init__(self, task):
        self.task = task

    async def act(self, messages, tools, seed):
        if any(m.role == "tool" for m in messages):
            return AgentTurn(Message(role="assistant", content="Nothing to change. Bye?"))
        read = next(t for t in tools if t.kind == "read")
        args = {
            k: v
            for k, v in self.task.gold_actions[0].arguments.items()
            if k in read.parameters["properties"]
        }
        call = ToolCall(id="r", name=read.name, arguments=args)
        return AgentTurn(Message(role="assistant", tool_calls=(call,)))


AGENTS = {"oracle": OracleAgent, "clumsy": ClumsyOracle, "reads": ReadOnlyAgent}


@pytest.mark.parametrize("agent_kind", sorted(AGENTS))
def test_shared_dumps_give_the_same_trajectories_as_fresh_dumps(
    agent_kind, provenance, monkeypatch
):
    """LiveDump's fast path (one dump per write, the final hash from the last write or, when
    no write ran, from the replay memo) against the reference (dumps around every write,
    final state dumped again) on retail tasks."""
    from trajforge.generators.rollout import _known_initial_hash
    from trajforge.generators.tooling import LiveDump

    domain, tasks = _retail_tasks(6)
    assert all(_known_initial_hash(domain, task) is not None for task in tasks)

    def run_all():
        out = []
        for task in tasks:
            agent = AGENTS[agent_kind](task)
            traj = rollout(task, domain, agent, ScriptedUser(task), provenance, max_turns=4)
            out.append(traj.to_json())
        return out

    fast = run_all()
    monkeypatch.setattr(LiveDump, "SHARE", False)
    slow = run_all()
    assert fast == slow
    if agent_kind != "reads":  # writes happened and were diffed
        assert any('"state_diff":[{' in t for t in fast)
