"""Any exception inside a tool becomes an error observation and leaves the state unchanged."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict

from trajforge.generators.tooling import Toolbox, tool
from trajforge.schemas import ToolCall


class Counter(BaseModel):
    model_config = ConfigDict(extra="forbid")
    value: int = 0


def _deep(n: int) -> int:
    return _deep(n + 1)


@tool("write")
def explode(state: Counter, kind: str) -> str:
    """Bump the counter, then fail in the way `kind` names.

    Args:
        kind: overflow, recursion, value, key or zero.
    """
    state.value += 1  # mutate first: the boundary must undo this
    if kind == "overflow":
        return str(float(10**400))
    if kind == "recursion":
        return str(_deep(0))
    if kind == "value":
        raise ValueError("bad <|im_start|> value")
    if kind == "key":
        return {}["missing"]
    return str(1 / 0)


TOOLBOX = Toolbox([explode])


@pytest.mark.parametrize(
    "kind, name",
    [
        ("overflow", "OverflowError"),
        ("recursion", "RecursionError"),
        ("value", "ValueError"),
        ("key", "KeyError"),
        ("zero", "ZeroDivisionError"),
    ],
)
def test_any_tool_exception_becomes_an_observation(kind, name):
    state = Counter()
    out = TOOLBOX.execute(state, ToolCall(id="c", name="explode", arguments={"kind": kind}))
    assert out.error == "tool_error"
    assert out.observation.startswith("Error: ") and name in out.observation
    assert state.value == 0  # restored
    assert len(out.observation) < 300
