"""Plan search: pick a leading task type, then an actor who can do it, then more sub-goals.

Every domain that synthesizes tasks from its state faces the same search: task types should be
balanced (so the leading type is drawn uniformly), a task should reach the sampled complexity
when some actor allows it, and later sub-goals must see the effects of earlier ones (a gift card
spent by one is not spent again by the next). The domain supplies a `TaskSpace`; the search and
the replay on a working copy live here once.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from pydantic import BaseModel

from trajforge.generators.domain_kit.goals import Opening, SubGoal, SubGoalBuilder
from trajforge.generators.domain_kit.replay import copy_state, run_actions
from trajforge.generators.tooling import LiveDump, Toolbox
from trajforge.schemas import GoldAction, Persona, StatePatch

S = TypeVar("S", bound=BaseModel)

#: The claims of a plan with no sub-goal yet (one frozenset, not one per actor tried).
_NOTHING_CLAIMED: frozenset[str] = frozenset()


class TaskSpace(Protocol[S]):
    """What a domain gives the planner: its sub-goal builders, its actors, their opening."""

    #: Task type -> builder; the keys are the domain's declared task types, in a fixed order.
    builders: Mapping[str, SubGoalBuilder]

    def actors(self, state: S) -> Sequence[str]:
        """Ids of who may contact the agent (users, accounts), in a stable order."""
        ...

    def opening(self, state: S, actor: str, rng: random.Random) -> Opening:
        """The actions and known info every conversation of `actor` starts with."""
        ...

    def become(self, state: S, actor: str, persona: Persona) -> tuple[StatePatch, ...]:
        """Patches that make `actor` the persona in the world (its name, its email), so the
        user who speaks is the sampled persona; they must leave every sub-goal feasible."""
        ...


@dataclass(frozen=True)
class Plan(Generic[S]):
    """A feasible task: who asks, how they open, and their sub-goals in order."""

    actor: str
    opening: Opening
    goals: tuple[SubGoal, ...]

    @property
    def actions(self) -> tuple[GoldAction, ...]:
        """The whole gold plan: the opening's actions, then each sub-goal's."""
        return self.opening.actions + tuple(a for g in self.goals for a in g.actions)

    @property
    def output_sources(self) -> tuple[tuple[int, ...], ...]:
        """Per expected output (in `Task.expected_outputs` order), the indices in `actions` of
        its sub-goal's actions: the calls whose results show it (`Task.expected_sources`)."""
        sources: list[tuple[int, ...]] = []
        start = len(self.opening.actions)
        for goal in self.goals:
            span = tuple(range(start, start + len(goal.actions)))
            sources.extend(span for _ in goal.expected_outputs)
            start += len(goal.actions)
        return tuple(sources)


def plan_actor(
    space: TaskSpace,
    toolbox: Toolbox,
    state: BaseModel,
    actor: str,
    types: Sequence[str],
    complexity: int,
    rng: random.Random,
    fresh: Callable[[], BaseModel] | None = None,
    undoable: bool | None = None,
) -> Plan | None:
    """Up to `complexity` feasible sub-goals for one actor, the first of type `types[0]`.

    Each sub-goal is executed before the next is built, so later ones see earlier effects.
    None when the first type is infeasible for this actor. When every write tool declares what
    it touches, the sub-goals run on `state` itself and every write is undone afterwards (from
    the entries it dumped before the call), so `state` is handed back as it came, without a
    working copy (a validation of the whole world per actor tried). Otherwise on a working
    copy: `fresh` makes it (a new state equal to `state`, sharing nothing with it), by
    default a JSON round trip of `state`. `undoable`: whether the writes can be undone on
    `state` itself, when the caller has decided it already (`best_plan`: once per search,
    not once per actor tried); None decides it here.
    """
    if undoable is None:
        undoable = toolbox.declares_touches and LiveDump.SHARE
    first = space.builders[types[0]](state, actor, rng, _NOTHING_CLAIMED)
    if first is None:  # decided on the untouched state: the opening is assumed read-only
        return None
    opening = space.opening(state, actor, rng)
    if undoable:
        # never hashed: each write dumps only the entries it touches, and is undone at the end
        live = LiveDump(hold=False, journal=True, observe=False)
        try:
            return _grow(space, toolbox, state, actor, types, complexity, rng, first, opening, live)
        finally:
            live.undo_all(state)
    work = fresh() if fresh is not None else state
    if work is state:  # no factory, or one breaking the fresh-object contract: copy
        work = copy_state(state)
    live = LiveDump(hold=False, observe=False)
    return _grow(space, toolbox, work, actor, types, complexity, rng, first, opening, live)


def _grow(
    space: TaskSpace,
    toolbox: Toolbox,
    work: BaseModel,
    actor: str,
    types: Sequence[str],
    complexity: int,
    rng: random.Random,
    first: SubGoal,
    opening: Opening,
    live: LiveDump,
) -> Plan | None:
    """Run the opening and the first sub-goal on `work`, then add feasible sub-goals."""
    if not (
        run_actions(toolbox, work, opening.actions, live)
        and run_actions(toolbox, work, first.actions, live)
    ):
        return None
    goals: list[SubGoal] = [first]
    claimed = frozenset((first.claim,))  # grows with `goals`, not rebuilt per type tried
    for task_type in types[1:]:
        if len(goals) == complexity:
            break
        goal = space.builders[task_type](work, actor, rng, claimed)
        # A failed sub-goal is dropped; its reads changed nothing and a failed write is undone.
        if goal is not None and run_actions(toolbox, work, goal.actions, live):
            goals.append(goal)
            claimed = claimed | {goal.claim}
    return Plan(actor, opening, tuple(goals))


def best_plan(
    space: TaskSpace,
    toolbox: Toolbox,
    state: BaseModel,
    complexity: int,
    rng: random.Random,
    fresh: Callable[[], BaseModel] | None = None,
) -> Plan | None:
    """Pick the leading task type uniformly (so types are balanced), then an actor who can do it.

    The first actor reaching `complexity` sub-goals wins, else the one with the most. A leading
    type no actor can do (no delivered orders at all, say) passes to the next type. `fresh`:
    see `plan_actor`.
    """
    undoable = toolbox.declares_touches and LiveDump.SHARE
    leading = list(space.builders)
    rng.shuffle(leading)
    actors = list(space.actors(state))
    rng.shuffle(actors)
    for first in leading:
        rest = [t for t in space.builders if t != first]
        best: Plan | None = None
        for actor in actors:
            rng.shuffle(rest)
            types = [first, *rest]
            plan = plan_actor(space, toolbox, state, actor, types, complexity, rng, fresh, undoable)
            if plan is not None and (best is None or len(plan.goals) > len(best.goals)):
                best = plan
            if best is not None and len(best.goals) == complexity:
                return best
        if best is not None:
            return best
    return None
