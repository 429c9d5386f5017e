"""The toy domain on the kit: deterministic worlds, real tools, verified tasks of both types."""

from collections import Counter

import pytest

from trajforge.generators.domain_kit import best_plan, gold_final_hash, plan_actor
from trajforge.generators.domains import get_domain
from trajforge.generators.domains.toy.data_model import generate_state
from trajforge.generators.domains.toy.tasks import SUBGOAL_BUILDERS, ToyTaskSpace
from trajforge.generators.personas import sample_persona
from trajforge.generators.task_verification import verify_task
from trajforge.generators.tooling import TaskRejected, state_hash
from trajforge.schemas import GoldAction, InitialState, ToolCall

TOY = get_domain("toy")


def test_world_is_deterministic_per_seed():
    assert state_hash(generate_state(3)) == state_hash(generate_state(3))
    assert state_hash(generate_state(3)) != state_hash(generate_state(4))


def test_deposit_into_frozen_account_is_an_error_observation():
    state = TOY.initial_state(InitialState(seed=0))
    state.accounts["#A1001"].status = "frozen"
    call = ToolCall(id="c", name="deposit", arguments={"account_id": "#A1001", "amount": 5})
    result = TOY.toolbox.execute(state, call)
    assert result.error == "tool_error" and "frozen" in result.observation and not result.diff


@pytest.fixture(scope="module")
def tasks():
    return [TOY.synthesize_task(sample_persona(i), i) for i in range(60)]


def test_tasks_verify_and_cover_every_declared_type(tasks):
    types = Counter(tt for t in tasks for tt in t.intent.task_types)
    assert set(types) == set(TOY.vocabulary.task_types)
    for task in tasks:
        assert verify_task(TOY, task).verification.passed
        assert task.domain == "toy" and task.intent.domain == "toy"


def test_synthesis_is_deterministic(tasks):
    assert TOY.synthesize_task(sample_persona(5), 5) == tasks[5]


def test_later_sub_goals_see_earlier_effects(tasks):
    """In a balance-then-deposit task the deposit's expected balance adds to the real one."""
    both = [t for t in tasks if t.intent.task_types == ("balance_inquiry", "deposit")]
    assert both
    for task in both:
        before, after = (float(o) for o in task.expected_outputs)
        amount = next(a.arguments["amount"] for a in task.gold_actions if a.name == "deposit")
        assert after == pytest.approx(before + amount)


def test_kit_plan_search_and_gold_replay():
    state = TOY.initial_state(InitialState(seed=2))
    space = ToyTaskSpace()
    import random

    plan = best_plan(space, TOY.toolbox, state, 2, random.Random(0))
    assert plan is not None and plan.actions[0].name == "find_account_by_email"
    assert gold_final_hash(TOY.toolbox, state, plan.actions) is not None
    bad = (GoldAction(name="deposit", arguments={"account_id": "#nope", "amount": 1.0}),)
    assert gold_final_hash(TOY.toolbox, state, bad) is None
    for account in state.accounts.values():
        account.status = "frozen"
    actor = sorted(state.accounts)[0]
    assert plan_actor(space, TOY.toolbox, state, actor, ["deposit"], 1, random.Random(0)) is None
    assert list(SUBGOAL_BUILDERS) == list(TOY.vocabulary.task_types)


def test_no_feasible_task_is_a_typed_rejection(monkeypatch):
    frozen = TOY.initial_state(InitialState(seed=1))
    for account in frozen.accounts.values():
        account.status = "frozen"
    from trajforge.generators.domains.toy import tasks as toy_tasks

    only_deposit = ToyTaskSpace()
    only_deposit.builders = {"deposit": SUBGOAL_BUILDERS["deposit"]}
    recipe = toy_tasks.recipe(TOY.toolbox)
    from dataclasses import replace

    from trajforge.generators.domain_kit import synthesize

    with pytest.raises(TaskRejected) as err:
        synthesize(replace(recipe, space=only_deposit), lambda init: frozen, sample_persona(1), 1)
    assert err.value.reason == "no_feasible_task"
