"""Outcome verifier on the retail domain, with reference (oracle) trajectories."""

import asyncio

import pytest

from trajforge.generators.agent import OracleAgent
from trajforge.generators.domains import get_domain
from trajforge.generators.personas import sample_persona
from trajforge.generators.rollout import run_rollout
from trajforge.generators.tooling import TaskRejected
from trajforge.generators.user import ScriptedUser
from trajforge.schemas import Message, Provenance
from trajforge.verifiers.outcome import OutcomeGate, judge_outcome, verify_outcome
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
