"""The agent's tools: find and read a line, fix it on the carrier's side, hand over.

None of them can reach a customer's phone (`devices`): for that the agent must ask the
customer, who has tools of their own (`user_tools.py`). Each raises `ToolError` on a violated
precondition; the toolbox turns it into the "Error: ..." observation the agent sees.
"""

from __future__ import annotations

from trajforge.generators.domain_kit.touches import entry, nothing
from trajforge.generators.domains.phone.data_model import Line, PhoneState
from trajforge.generators.tooling import ToolError, tool


def _line(state: PhoneState, line_id: str) -> Line:
    line = state.lines.get(line_id)
    if line is None:
        raise ToolError(f"line {line_id} not found")
    return line


def _active(state: PhoneState, line_id: str) -> Line:
    line = _line(state, line_id)
    if line.status != "active":
        raise ToolError(f"line {line_id} is {line.status}")
    return line


@tool("read")
def find_line_by_email(state: PhoneState, email: str) -> str:
    """Find the id of the line registered to an email address.

    Args:
        email: The line owner's email, such as 'ana.costa7@example.com'.
    """
    for line in state.lines.values():
        if line.email.lower() == email.strip().lower():
            return line.line_id
    raise ToolError(f"no line with email {email}")


@tool("read")
def get_line(state: PhoneState, line_id: str) -> dict:
    """Look up a line: owner, email, number, status, registration, data bar and roaming.

    Args:
        line_id: The line id, such as '#L2001'.
    """
    return _line(state, line_id).model_dump()


@tool("write", touches=entry("lines", "line_id"))
def reset_registration(state: PhoneState, line_id: str) -> dict:
    """Reset an active line's network registration; the phone must restart to register again.

    Args:
        line_id: The line id.
    """
    line = _active(state, line_id)
    if line.registration == "ok":
        raise ToolError(f"line {line_id} is registered; nothing to reset")
    line.registration = "ok"
    return {"line_id": line_id, "registration": line.registration}


@tool("write", touches=entry("lines", "line_id"))
def lift_data_bar(state: PhoneState, line_id: str) -> dict:
    """Lift the mobile data bar on an active line.

    Args:
        line_id: The line id.
    """
    line = _active(state, line_id)
    if not line.data_barred:
        raise ToolError(f"line {line_id} has no data bar")
    line.data_barred = False
    return {"line_id": line_id, "data_barred": line.data_barred}


@tool("write", touches=entry("lines", "line_id"))
def enable_roaming(state: PhoneState, line_id: str) -> dict:
    """Allow roaming on an active line.

    Args:
        line_id: The line id.
    """
    line = _active(state, line_id)
    if line.roaming:
        raise ToolError(f"line {line_id} already has roaming")
    line.roaming = True
    return {"line_id": line_id, "roaming": line.roaming}


@tool("transfer", touches=nothing)
def transfer_to_human_agents(state: PhoneState, summary: str) -> str:
    """Hand the conversation to a human agent.

    Args:
        summary: Why the transfer is needed.
    """
    return "Transfer successful"


TOOLS = (
    find_line_by_email,
    get_line,
    reset_registration,
    lift_data_bar,
    enable_roaming,
    transfer_to_human_agents,
)
