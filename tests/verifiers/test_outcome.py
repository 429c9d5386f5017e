"""Outcome verifier on the retail domain, with reference (oracle) trajectories."""

import asyncio

import pytest

from trajforge.generators.agent import OracleAgent
from trajforge.generators.domains import get_domain
from trajforge.generators.personas import sample_persona
from trajforge.generators.rollout import run_rollout
from trajforge.generators.tooling import TaskRejected
from trajforge.generators.user import ScriptedUser
from trajforge.generators.values import mentions_value
from trajforge.schemas import Message, Provenance
from trajforge.verifiers.outcome import (
    OutcomeGate,
    about_another_object,
    judge_outcome,
    missing_outputs,
    output_objects,
    verify_outcome,
)
from trajforge.verifiers.protocol import FilterContext

PROVENANCE = Provenance(models={"agent": "oracle", "user": "scripted"}, seeds={})


@pytest.fixture(scope="module")
def retail():
    return get_domain("retail")


@pytest.fixture(scope="module")
def task(retail):
    """A retail task with a mutating gold action and at least one expected output."""
    for seed in range(50):
        try:
            candidate = retail.synthesize_task(sample_persona(seed), seed)
        except TaskRejected:
            continue
        writes = [a for a in candidate.gold_actions if retail.toolbox.spec(a.name).mutates_state]
        if writes and candidate.expected_outputs:
            return candidate
    pytest.fail("no retail task with a write action and expected outputs in 50 seeds")


@pytest.fixture(scope="module")
def oracle_trajectory(task, retail):
    return asyncio.run(
        run_rollout(
            task, retail, OracleAgent(task), ScriptedUser(task), seed=0, provenance=PROVENANCE
        )
    )


def replace_message(trajectory, index, message):
    messages = list(trajectory.messages)
    messages[index] = message
    return trajectory.model_copy(update={"messages": tuple(messages)})


def test_oracle_trajectory_replays_to_gold_and_passes(oracle_trajectory, retail, task):
    result, reason = judge_outcome(oracle_trajectory, retail)
    assert result.passed, result.reason
    assert result.actual_hash == result.expected_hash == task.gold_final_hash
    assert oracle_trajectory.final_state_hash == task.gold_final_hash
    assert result.reason == "passed" and reason is None


def test_changed_mutating_arguments_break_state_match(oracle_trajectory, retail):
    index, message = next(
        (i, m)
        for i, m in enumerate(oracle_trajectory.messages)
        if m.tool_calls and retail.toolbox.spec(m.tool_calls[0].name).mutates_state
    )
    call = message.tool_calls[0]
    key = next(k for k, v in call.arguments.items() if isinstance(v, str) and v)
    changed = call.model_copy(update={"arguments": {**call.arguments, key: "#W0000000"}})
    broken = replace_message(
        oracle_trajectory, index, message.model_copy(update={"tool_calls": (changed,)})
    )
    result, reason = judge_outcome(broken, retail)
    assert not result.passed and not result.state_match
    assert "state_mismatch" in result.reason and reason == "state_mismatch"
    assert "corrupt_trajectory" in result.reason  # recorded hash no longer matches the replay


def test_missing_expected_output_fails_with_reason(oracle_trajectory, retail, task):
    last_agent = max(
        i for i, m in enumerate(oracle_trajectory.messages) if m.role == "assistant" and m.content
    )
    silent = replace_message(
        oracle_trajectory, last_agent, Message(role="assistant", content="All done. Anything else?")
    )
    result, reason = judge_outcome(silent, retail)
    assert result.state_match and result.termination_ok and not result.outputs_communicated
    assert not result.passed and set(result.missing_outputs) == set(task.expected_outputs)
    assert "outputs_not_communicated" in result.reason
    assert reason == "outputs_not_communicated"


def test_bad_termination_and_corrupt_hash(oracle_trajectory, retail):
    cut = oracle_trajectory.model_copy(update={"termination": "max_turns"})
    result = verify_outcome(cut, retail)
    assert not result.passed and not result.termination_ok and "bad_termination" in result.reason
    corrupt = oracle_trajectory.model_copy(update={"final_state_hash": "0" * 64})
    result = verify_outcome(corrupt, retail)
    assert not result.passed and result.state_match and "corrupt_trajectory" in result.reason
    assert judge_outcome(cut, retail).rejection == "bad_termination"
    assert judge_outcome(corrupt, retail).rejection == "state_mismatch"  # decided, not parsed


def test_the_outcome_gate_judges_a_failed_attached_outcome_again(oracle_trajectory, retail):
    """A failed outcome's typed reason is decided by judging, never read back from its text:
    an attached failed outcome with a misleading text still gets the judged reason."""
    silent = oracle_trajectory.model_copy(update={"termination": "max_turns"})
    attached, _ = judge_outcome(silent, retail)
    misleading = attached.model_copy(update={"reason": "corrupt_task: made up"})
    checked = silent.model_copy(update={"outcome": misleading})
    result = OutcomeGate().check(checked, FilterContext(domain=retail))
    assert not result.passed and result.reason == "bad_termination"


def test_numbers_are_normalised(oracle_trajectory, retail, task):
    numeric = [o for o in task.expected_outputs if o.replace(".", "").isdigit() and "." in o]
    if not numeric:
        pytest.skip("task has no amount among its expected outputs")
    last_agent = max(
        i for i, m in enumerate(oracle_trajectory.messages) if m.role == "assistant" and m.content
    )
    text = "; ".join(
        f"${float(o):,.1f}"
        if o in numeric and o.endswith("0")
        else (f"${o}" if o in numeric else o)
        for o in task.expected_outputs
    )
    reworded = replace_message(
        oracle_trajectory, last_agent, Message(role="assistant", content=text)
    )
    assert verify_outcome(reworded, retail).outputs_communicated


@pytest.fixture(scope="module")
def two_orders(retail):
    """An oracle trajectory whose expected output `index` comes from one order while another
    order of the user was read too, and its closing's sentence stating it names its order."""
    for seed in range(60):
        try:
            task = retail.synthesize_task(sample_persona(seed), seed)
        except TaskRejected:
            continue
        t = asyncio.run(
            run_rollout(task, retail, OracleAgent(task), ScriptedUser(task), seed=0,
                        provenance=PROVENANCE)
        )  # fmt: skip
        closing = max(i for i, m in enumerate(t.messages) if m.role == "assistant" and m.content)
        for index, value in enumerate(task.expected_outputs):
            objects = output_objects(t, index)
            own = [o for o in sorted(objects.own) if o.startswith("#W")]
            text = t.messages[closing].content
            if objects.others and own and own[0] in text and mentions_value(text, value):
                return t, closing, index, own[0], sorted(objects.others)[0]
    pytest.fail("no retail task with an output from one of two orders in 60 seeds")


def test_an_output_stated_about_another_object_is_not_told(two_orders, retail):
    """ "Order #W2 is pending" when the user asked about #W1 states a true value about the wrong
    order (the closing defect fixed in `agent_voice.answer`): not told. Stated with no id, or
    about both orders, it is."""
    t, closing, index, own, other = two_orders
    value = t.task.expected_outputs[index]
    assert missing_outputs(t) == ()

    def closed_with(text: str):
        return replace_message(t, closing, Message(role="assistant", content=text))

    swapped = closed_with(t.messages[closing].content.replace(own, other))
    assert value in missing_outputs(swapped)
    assert judge_outcome(swapped, retail).rejection == "outputs_not_communicated"
    assert value not in missing_outputs(closed_with(f"It comes to {value}. Anything else?"))
    both = closed_with(f"For order {own} and order {other}: {value}.")
    assert value not in missing_outputs(both)
    assert about_another_object(f"Order {other}: {value}.", value, output_objects(t, index))
