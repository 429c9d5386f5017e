"""Gold replay: run gold actions through the toolbox on a copy, exactly as the outcome check will.

Synthesis must compute the gold final state the same way verification and the outcome check
do (through `Toolbox.execute`, the one error boundary), or a task could carry a hash no agent can
reach. These helpers are that one way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from pydantic import BaseModel

from trajforge.generators.tooling import Toolbox, state_hash
from trajforge.schemas import GoldAction, ToolCall

S = TypeVar("S", bound=BaseModel)


def copy_state(state: S) -> S:
    """An independent copy; a JSON round trip is about 3x faster than a pydantic deep copy."""
    return type(state).model_validate_json(state.model_dump_json())


def run_actions(toolbox: Toolbox, state: BaseModel, actions: Sequence[GoldAction]) -> bool:
    """Execute actions in place; False at the first error (the caller discards the copy)."""
    for i, action in enumerate(actions):
        call = ToolCall(id=f"gold_{i}", name=action.name, arguments=action.arguments)
        if toolbox.execute(state, call).error is not None:
            return False
    return True


def gold_final_hash(
    toolbox: Toolbox, initial: BaseModel, actions: Sequence[GoldAction]
) -> str | None:
    """Hash after replaying the gold plan on a copy of `initial` (None if any action fails)."""
    state = copy_state(initial)
    return state_hash(state) if run_actions(toolbox, state, actions) else None
