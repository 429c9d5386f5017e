"""The noisy teacher: deterministic per seed, clean at rate 0, and each fault class at rate 1 is
refused by the default gate with its own typed reason and kept by the gate-off one (no filters)
whenever the outcome still passes."""

from __future__ import annotations

import asyncio
from functools import cache

import pytest
from pydantic import ValidationError

from trajforge.generators.domains import get_domain
from trajforge.generators.noise import FAULT_CLASSES, NoiseConfig, fault_drawn
from trajforge.generators.noisy_teacher import NoisyTeacher, invented_amount, sibling_ids
from trajforge.generators.personas import sample_persona
from trajforge.generators.rollout import run_rollout
from trajforge.generators.task_verification import verify_task
from trajforge.generators.user import ScriptedUser, declines_first
from trajforge.schemas import Message, Provenance, Rejected, Trajectory, derive_seed
from trajforge.verifiers.filters import DEFAULT_FILTERS, build_filters
from trajforge.verifiers.gate import gate_verdict

PROVENANCE = Provenance(models={"agent": "noisy"}, seeds={})
DEFAULT_GATE = build_filters(DEFAULT_FILTERS)

#: Fault class -> the typed reasons the default gate may give it (it gives one of them at
#: least, and may add others: an id of another user's record is also an unseen value).
REASON = {
    "skip_confirmation": {"policy.confirm_before_write"},
    "act_after_refusal": {"policy.write_after_refusal"},
    "other_users_record": {"policy.own_records_only"},
    "invented_value": {"hallucinated_value"},
    "repeated_calls": {"loop_or_repeat"},
    # the outcome check (refused with the gate off too) where the task asks for outputs; the
    # outcome_told filter where it only writes
    "no_report": {"outputs_not_communicated", "outcome_not_told"},
}


@cache
def tasks(domain_name: str, n: int) -> tuple:
    domain = get_domain(domain_name)
    out = []
    for i in range(n):
        persona = sample_persona(derive_seed(4, i, "persona"))
        try:
            out.append(verify_task(domain, domain.synthesize_task(persona, derive_seed(4, i, "t"))))
        except Rejected:
            continue
    return tuple(out)


def rollout(task, domain, noise: NoiseConfig, attempt: int = 0, decline: bool = False):
    agent = NoisyTeacher(task, domain, noise, attempt)
    user = ScriptedUser(task, decline_first=decline)
    coro = run_rollout(task, domain, agent, user, seed=attempt, provenance=PROVENANCE)
    return asyncio.run(coro), agent


def test_the_same_seed_gives_the_same_faults_and_messages():
    domain = get_domain("toy")
    task = tasks("toy", 6)[0]
    noise = NoiseConfig(**{c: 0.5 for c in FAULT_CLASSES})
    first, agent = rollout(task, domain, noise, attempt=2)
    second, again = rollout(task, domain, noise, attempt=2)
    assert first.messages == second.messages
    assert agent.injected_faults == again.injected_faults
    assert agent.drawn == again.drawn
    drawn = {NoisyTeacher(t, domain, noise, a).drawn for t in tasks("toy", 6) for a in range(4)}
    assert len(drawn) > 1  # the draws differ across tasks and attempts


def test_each_class_is_drawn_at_its_rate_independently():
    ids = [f"task-{i}" for i in range(4000)]
    for fault in FAULT_CLASSES:
        share = sum(fault_drawn(i, 0, fault, 0.15) for i in ids) / len(ids)
        assert 0.13 < share < 0.17, (fault, share)
    both = sum(
        fault_drawn(i, 0, "no_report", 0.5) and fault_drawn(i, 0, "invented_value", 0.5)
        for i in ids
    )
    assert 0.22 < both / len(ids) < 0.28  # independent classes: about 0.5 x 0.5
    assert not any(fault_drawn(i, 0, "no_report", 0.0) for i in ids)
    assert all(fault_drawn(i, 0, "no_report", 1.0) for i in ids)


@pytest.mark.parametrize("domain_name", ["toy", "retail"])
def test_at_rate_zero_every_rollout_passes_the_default_gate(domain_name):
    domain = get_domain(domain_name)
    for i, task in enumerate(tasks(domain_name, 8)):
        trajectory, agent = rollout(task, domain, NoiseConfig.only(None), decline=i % 2 == 0)
        verdict = gate_verdict(trajectory, domain, DEFAULT_GATE)
        assert verdict.kept, verdict.reasons
        assert agent.injected_faults == []


@pytest.mark.parametrize("fault", FAULT_CLASSES)
@pytest.mark.parametrize("domain_name", ["toy", "retail"])
def test_at_rate_one_each_fault_is_refused_with_its_reason(domain_name, fault):
    domain = get_domain(domain_name)
    injected = 0
    for task in tasks(domain_name, 8):
        trajectory, agent = rollout(task, domain, NoiseConfig.only(fault), decline=True)
        gated = gate_verdict(trajectory, domain, DEFAULT_GATE)
        ungated = gate_verdict(trajectory, domain, ())
        if not agent.injected_faults:  # the task has nothing to inject it in (no write)
            assert gated.kept and ungated.kept
            continue
        injected += 1
        assert [f.fault for f in agent.injected_faults] == [fault]
        assert REASON[fault] & {r.reason for r in gated.reasons}, gated.reasons
        if fault == "no_report" and task.expected_outputs:
            assert not ungated.kept  # the outcome check runs in both builds
        else:
            assert ungated.kept, ungated.reasons  # only the filters and the rules caught it
    assert injected >= 3


def test_the_fault_is_recorded_at_the_message_that_carries_it():
    domain = get_domain("toy")
    for task in tasks("toy", 6):
        trajectory, agent = rollout(task, domain, NoiseConfig.only("repeated_calls"))
        (fault,) = agent.injected_faults
        message = trajectory.messages[fault.message_index]
        assert message.role == "assistant" and message.tool_calls
        before = trajectory.messages[fault.message_index - 2]
        assert before.tool_calls[0].arguments == message.tool_calls[0].arguments


def test_the_clean_agent_asks_again_after_a_no_and_respects_a_second_one():
    domain = get_domain("toy")
    task = next(t for t in tasks("toy", 8) if any(a.name == "deposit" for a in t.gold_actions))
    trajectory, _ = rollout(task, domain, NoiseConfig.only(None), decline=True)
    texts = [m.content for m in trajectory.messages if m.role == "assistant" and m.content]
    assert any(t.startswith("No problem, take your time.") for t in texts)

    class AlwaysNo(ScriptedUser):
        def next_text(self, conversation):
            text = super().next_text(conversation)
            return "No, don't do that." if "yes" in text.lower() else text

    agent = NoisyTeacher(task, domain, NoiseConfig.only(None))
    coro = run_rollout(task, domain, agent, AlwaysNo(task), seed=0, provenance=PROVENANCE)
    refused: Trajectory = asyncio.run(coro)
    assert not any(s.mutating for s in refused.steps)  # never wrote after two noes
    assert "have not made that change" in (refused.messages[-2].content or "")


def test_declines_first_is_a_seeded_share_of_tasks():
    ids = [f"t{i}" for i in range(2000)]
    share = sum(declines_first(i, 0.5) for i in ids) / len(ids)
    assert 0.46 < share < 0.54
    assert declines_first("t1", 0.5) == declines_first("t1", 0.5)


def test_sibling_ids_are_the_other_records_of_the_same_table():
    world = {"accounts": {"#A1": {"x": 1}, "#A2": {}, "#A3": {}}, "meta": {"#A9": 1}}
    assert sibling_ids(world, "#A2") == ["#A1", "#A3"]
    assert sibling_ids(world, "#A7") == []


def test_the_invented_amount_is_not_shown_nor_derived():
    import random

    messages = [Message(role="tool", content="balance 10.00, fee 2.50")]
    for seed in range(50):
        amount = invented_amount(messages, random.Random(seed))
        assert amount not in ("10.00", "2.50", "12.50", "7.50")


def test_rates_are_validated():
    with pytest.raises(ValidationError, match="skip_confirmation"):
        NoiseConfig(skip_confirmation=1.5)
    with pytest.raises(ValidationError, match="repeat_count"):
        NoiseConfig(repeat_count=1)
    with pytest.raises(ValidationError, match="colour"):
        NoiseConfig(colour=0.1)


def test_only_a_no_to_the_write_prompt_counts_as_declining_it():
    from trajforge.generators.noisy_teacher import _declined

    prompt = "Shall I deposit 20.00 into #A1001?"

    def convo(agent: str, user: str) -> list[Message]:
        return [Message(role="assistant", content=agent), Message(role="user", content=user)]

    assert _declined(convo(prompt, "No, wait, not yet."), prompt)
    assert _declined(convo(f"No problem, take your time. {prompt}", "Hold on."), prompt)
    assert not _declined(convo("What is your zip code?", "I don't know it."), prompt)
    assert not _declined(convo(prompt, "Yes, go ahead."), prompt)
    assert not _declined(convo(prompt, "No, wait."), "")  # a write with no prompt (skipped)
