"""Closings state each expected output about the object its own sub-goal asked about.

Retail world 7 asks the status of one pending order and a reroute of another pending order:
the latest result holding "pending" is the reroute's order, so a closing that takes the latest
result told the user the wrong order's status (12 of 125 order-status answers over 600 tasks).
"""

from __future__ import annotations

import asyncio
import re

import pytest

from trajforge.generators.agent import OracleAgent, oracle_closing
from trajforge.generators.blueprint_plan import closing_draft, execute_skeleton
from trajforge.generators.domain_kit import Opening, Plan, SubGoal, act
from trajforge.generators.domain_options import options_of
from trajforge.generators.domains.retail import RetailDomain
from trajforge.generators.personas import sample_persona
from trajforge.generators.phrasing import NO_PHRASING
from trajforge.generators.rollout import run_rollout
from trajforge.generators.user import ScriptedUser
from trajforge.schemas import Task

SEED = 7


@pytest.fixture(scope="module")
def retail() -> RetailDomain:
    return RetailDomain()


@pytest.fixture(scope="module")
def task(retail: RetailDomain) -> Task:
    return retail.synthesize_task(sample_persona(SEED), SEED)


def _asked(task: Task) -> str:
    """The order the user asks the state of (the order-status sub-goal's known info)."""
    label = next(k for k in task.scenario.known_info if k.startswith("order to ask about"))
    return re.search(r"#W\d+", label).group(0)


def _other_pending(task: Task, asked: str) -> str:
    opened = {a.arguments.get("order_id") for a in task.gold_actions} - {asked, None}
    return next(iter(opened))


def test_the_world_holds_the_ambiguity(task: Task) -> None:
    """The case the other tests rely on: two orders in the gold plan, both pending, the
    asked-about one read first (so "the latest result" is the other one)."""
    asked = _asked(task)
    assert "pending" in task.expected_outputs
    other = _other_pending(task, asked)
    reads = [a.arguments["order_id"] for a in task.gold_actions if a.name == "get_order_details"]
    assert reads.index(asked) < reads.index(other)


def _status_sentence(text: str) -> str:
    return next(s for s in re.split(r"(?<=\.) ", text) if s.endswith("pending."))


@pytest.mark.parametrize("phrased", [False, True])
def test_blueprint_closing_names_the_asked_about_order(task, retail, phrased) -> None:
    _, calls = execute_skeleton(task, retail)
    phrasing = options_of(retail).phrasing if phrased else NO_PHRASING
    said = _status_sentence(closing_draft(task, calls, phrasing))
    assert _asked(task) in said
    assert _other_pending(task, _asked(task)) not in said


def test_oracle_closing_names_the_asked_about_order(task, retail, provenance) -> None:
    user = ScriptedUser(task)
    trajectory = asyncio.run(
        run_rollout(task, retail, OracleAgent(task), user, seed=1, provenance=provenance)
    )
    final = [m.content for m in trajectory.messages if m.role == "assistant" and m.content][-1]
    said = _status_sentence(final)
    assert _asked(task) in said
    assert _other_pending(task, _asked(task)) not in said


def test_a_record_without_sources_keeps_the_latest_result(task: Task, retail: RetailDomain):
    """Older records (and domains that build no sub-goals) load and close as before."""
    old = Task.model_validate_json(
        task.model_copy(update={"expected_sources": ()}).model_dump_json()
    )
    _, calls = execute_skeleton(old, retail)
    assert _other_pending(task, _asked(task)) in _status_sentence(closing_draft(old, calls))
    assert oracle_closing(old) == oracle_closing(task)  # no results: the fallback sentences


def test_sources_stay_out_of_the_task_id(task: Task) -> None:
    assert task.expected_sources
    bare = task.model_dump(exclude={"expected_sources"})
    assert Task.compute_id(**bare) == task.id == Task.compute_id(**task.model_dump())


def test_sources_that_do_not_fit_the_task_are_refused(task: Task) -> None:
    extra = [[0] for _ in range(len(task.expected_outputs) + 1)]
    with pytest.raises(ValueError, match="one tuple of gold action indices per expected output"):
        Task.model_validate({**task.model_dump(), "expected_sources": extra})
    far = [[len(task.gold_actions)] for _ in task.expected_outputs]
    with pytest.raises(ValueError, match="use indices 0.."):
        Task.model_validate({**task.model_dump(), "expected_sources": far})


def test_plan_sources_are_each_outputs_sub_goal_actions() -> None:
    def goal(claim: str, n: int, outputs: tuple[str, ...]) -> SubGoal:
        actions = tuple(act("look", id=f"{claim}{i}") for i in range(n))
        return SubGoal("t", claim, actions, "ask", "ask", expected_outputs=outputs)

    opening = Opening(actions=(act("login"),))
    plan = Plan("u", opening, (goal("a", 2, ("x", "y")), goal("b", 1, ()), goal("c", 2, ("z",))))
    assert plan.output_sources == ((1, 2), (1, 2), (4, 5))
