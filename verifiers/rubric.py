"""Judge rubrics: per axis, atomic yes/no criteria ("yes" is always the good answer).

The built-in `RUBRIC` grades six axes. A team can grade with its own rubric without forking:
`quality.judge.settings.rubric: mypkg.rubrics:RUBRIC` names a mapping of the same shape
(axis -> ((criterion id, question), ...)) in the user's package. It is validated (snake_case ids,
at least one criterion per axis, ids unique per axis) when the config loads and resolved once
per process; the user's package must be installed on the workers too.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated

from pydantic import Field, StringConstraints, TypeAdapter, ValidationError

from trajforge.generators.plugins import PluginError, load_object

#: axis -> ((criterion id, yes/no question), ...)
Rubric = Mapping[str, tuple[tuple[str, str], ...]]

_Id = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,47}$")]
_Question = Annotated[str, StringConstraints(min_length=1)]
_RUBRIC_SHAPE = TypeAdapter(
    dict[_Id, Annotated[tuple[tuple[_Id, _Question], ...], Field(min_length=1)]]
)

#: The rubric: per axis, (criterion id, yes/no question). "yes" is always the good answer.
RUBRIC: Rubric = MappingProxyType(
    {
        "task_success": (
            ("goal_achieved", "Was the user's goal, as stated in the scenario, fully achieved?"),
            ("outputs_told", "Did the agent tell the user every value the user needed?"),
            ("user_confirmed_end", "Did the conversation end with the user's need resolved?"),
        ),
        "policy_compliance": (
            ("policy_followed", "Did every agent action comply with the domain policy?"),
            (
                "confirmation_before_write",
                "Did the agent get explicit user confirmation before each state-changing action?",
            ),
            (
                "identity_checked",
                "Did the agent authenticate the user when the policy requires it?",
            ),
        ),
        "grounding": (
            (
                "facts_supported",
                "Is every fact the agent states supported by a tool result or the user?",
            ),
            ("no_invented_ids", "Did the agent avoid inventing ids, amounts or dates?"),
            ("actions_truthful", "Does the agent only claim actions that tool results confirm?"),
        ),
        "tool_use": (
            ("right_tools", "Did the agent call the right tools for the task?"),
            ("right_arguments", "Were all tool-call arguments correct?"),
            ("no_needless_calls", "Did the agent avoid needless or redundant tool calls?"),
        ),
        "efficiency": (
            ("few_turns", "Was the task solved without unnecessary turns or repeated questions?"),
            ("concise", "Were the agent's messages concise and to the point?"),
        ),
        "user_fidelity": (
            ("stayed_in_role", "Did the user stay in its own role (never acting as the agent)?"),
            (
                "revealed_only_allowed",
                "Did the user reveal only information its scenario allows and invent nothing?",
            ),
            ("followed_instructions", "Did the user follow its scenario instructions?"),
            (
                "lived_only_its_scenario",
                "Did the user state only facts and events its scenario and persona contain (no "
                "answer the agent had to look up, no past event or detail made up)?",
            ),
        ),
    }
)


def validate_rubric(value: object) -> Rubric:
    """A read-only rubric from a mapping of the documented shape; ValueError says what is off."""
    try:
        axes = _RUBRIC_SHAPE.validate_python(value)
    except ValidationError as err:
        where = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
        raise ValueError(
            f"not a rubric (axis -> ((criterion_id, question), ...)): {where}"
        ) from None
    for axis, criteria in axes.items():
        ids = [cid for cid, _ in criteria]
        if len(set(ids)) != len(ids):
            raise ValueError(f"axis {axis!r} repeats a criterion id: {ids}")
    return MappingProxyType(axes)


@functools.lru_cache(maxsize=32)
def load_rubric(path: str | None) -> Rubric:
    """The built-in rubric (`path` None) or the one at `package.module:NAME`."""
    if path is None:
        return RUBRIC
    try:
        return validate_rubric(load_object(path))
    except PluginError as err:
        raise ValueError(str(err)) from None
