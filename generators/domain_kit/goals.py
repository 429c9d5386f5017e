"""What a domain's sub-goal builders return: one grounded wish with its gold actions."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from trajforge.schemas import GoldAction

S = TypeVar("S", bound=BaseModel)


@dataclass(frozen=True)
class SubGoal:
    """One thing the user wants, grounded in the state, with the actions that achieve it.

    `claim` names what the sub-goal touches (an order id, "user_address"): the planner never
    gives one task two sub-goals with the same claim, so they cannot undo each other.
    """

    task_type: str  # one of the domain's declared task types
    claim: str
    actions: tuple[GoldAction, ...]
    request: str  # the instruction line for the simulated user
    reason: str  # a phrase for reason_for_contact ("cancel an order")
    known_info: dict[str, str] = field(default_factory=dict)
    unknown_info: tuple[str, ...] = ()
    expected_outputs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Opening:
    """What starts every conversation of one actor, before any sub-goal (e.g. authentication):
    the gold actions the agent takes and the info the user gives for them."""

    actions: tuple[GoldAction, ...] = ()
    known_info: dict[str, str] = field(default_factory=dict)


#: (state, actor id, rng, claims already taken) -> a feasible sub-goal, or None.
SubGoalBuilder = Callable[[S, str, random.Random, frozenset[str]], "SubGoal | None"]


def act(name: str, **arguments: Any) -> GoldAction:
    """A gold action, written like the call it stands for: `act("get_order", order_id=...)`."""
    return GoldAction(name=name, arguments=arguments)
