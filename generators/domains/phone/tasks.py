"""Phone task synthesis on the domain kit: three faults, each fixed by both actors.

A task is the caller (the owner of the line whose phone is in hand) with one or two faults.
Each sub-goal's gold plan interleaves the agent's line change with the customer's own steps on
the phone (`actor="user"` gold actions): the kit plans, replays (through both toolboxes) and
assembles it like any other domain's; the oracle asks for the user's steps in words, and the
scripted user takes them.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from types import MappingProxyType

from trajforge.generators.domain_kit import (
    Opening,
    SubGoal,
    SubGoalBuilder,
    SynthesisRecipe,
    act,
    owner_instructions,
    owner_patches,
)
from trajforge.generators.domains.phone.data_model import PhoneState
from trajforge.generators.tooling import Toolbox
from trajforge.generators.vocabulary import DomainVocabulary, with_generic_verbs
from trajforge.schemas import GoldAction, Persona, StatePatch

DOMAIN_NAME = "phone"


def _user(name: str, **arguments) -> GoldAction:
    """A gold step the customer takes on their own phone."""
    return act(name, **arguments).model_copy(update={"actor": "user"})


def _no_service(state: PhoneState, line_id: str, rng: random.Random, claimed: frozenset[str]):
    line, device = state.lines[line_id], state.devices[line_id]
    if line.registration != "stale" or not device.airplane_mode or "service" in claimed:
        return None
    return SubGoal(
        task_type="no_service",
        claim="service",
        actions=(
            _user("set_airplane_mode", on=False),
            act("reset_registration", line_id=line_id),
            _user("restart_phone"),
        ),
        request="Your phone shows no signal at all. Get it working again, doing what the "
        "agent asks on your phone.",
        reason="get your phone's signal back",
    )


def _no_data(state: PhoneState, line_id: str, rng: random.Random, claimed: frozenset[str]):
    line, device = state.lines[line_id], state.devices[line_id]
    if not line.data_barred or device.mobile_data or "data" in claimed:
        return None
    return SubGoal(
        task_type="no_data",
        claim="data",
        actions=(act("lift_data_bar", line_id=line_id), _user("set_mobile_data", on=True)),
        request="Calls work but the internet on your phone does not. Get mobile data working, "
        "doing what the agent asks on your phone.",
        reason="get mobile data working",
    )


def _roaming(state: PhoneState, line_id: str, rng: random.Random, claimed: frozenset[str]):
    line, device = state.lines[line_id], state.devices[line_id]
    if line.roaming or device.data_roaming or "roaming" in claimed:
        return None
    return SubGoal(
        task_type="roaming",
        claim="roaming",
        actions=(act("enable_roaming", line_id=line_id), _user("set_data_roaming", on=True)),
        request="You are travelling abroad next week. Make sure your phone's data will work "
        "there, doing what the agent asks on your phone.",
        reason="use your phone's data abroad",
    )


#: Task type -> sub-goal builder; the keys are the phone domain's closed set of task types.
SUBGOAL_BUILDERS: MappingProxyType[str, SubGoalBuilder] = MappingProxyType(
    {"no_service": _no_service, "no_data": _no_data, "roaming": _roaming}
)

VOCABULARY = DomainVocabulary(
    task_types=tuple(SUBGOAL_BUILDERS),
    read_only_task_types=frozenset(),
    user_role="mobile customer",
    agent_role="phone support agent",
    action_verbs=with_generic_verbs(
        {
            "reset": ("reset_registration",),
            "lifted": ("lift_data_bar",),
            "enabled": ("enable_roaming",),
        }
    ),
)


class PhoneTaskSpace:
    """The caller is the owner of the line in hand; every conversation opens with the
    email lookup and a read of the line."""

    builders = SUBGOAL_BUILDERS

    def actors(self, state: PhoneState) -> Sequence[str]:
        return (state.in_hand,)

    def opening(self, state: PhoneState, actor: str, rng: random.Random) -> Opening:
        line = state.lines[actor]
        return Opening(
            (
                act("find_line_by_email", email=line.email),
                act("get_line", line_id=actor),
            ),
            {"name": line.owner, "email": line.email},
        )

    def become(self, state: PhoneState, actor: str, persona: Persona) -> tuple[StatePatch, ...]:
        """The line's owner renamed to the persona, with an email in that name."""
        return owner_patches("lines", actor, persona, "#L")


def recipe(toolbox: Toolbox) -> SynthesisRecipe:
    """The kit's inputs (`toolbox`: both actors' tools, so the gold plan replays whole)."""
    return SynthesisRecipe(
        domain=DOMAIN_NAME,
        vocabulary=VOCABULARY,
        space=PhoneTaskSpace(),
        toolbox=toolbox,
        instructions=owner_instructions("lines", VOCABULARY),
        complexities=(1, 2),
    )
