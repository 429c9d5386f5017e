"""The phone domain's `policy.md` as checkable rules (see generators/policy_rules.py).

The generic rules: identify the caller by the email lookup first; act only on the line
that lookup returned; confirm each line change with its line id; change only active lines; one
tool call at a time; transfer only when the request is outside the tools. And one of dual
control's own: never tell the customer they did something on their phone that they never did
(`policy.claimed_user_action`, run inside the policy filter; the user's calls are recorded
apart, so none of the generic rules ever counts them as the agent's).
"""

from __future__ import annotations

from trajforge.generators.domains.phone.user_tools import USER_TOOLS
from trajforge.generators.policy_rules import PolicyRules, StatusRule, TrajectoryCheck
from trajforge.generators.user_tools import unperformed_claims
from trajforge.schemas import Trajectory

_ACTIVE = StatusRule(object_arg="line_id", allowed=("active",))

PHONE_RULES = PolicyRules(
    auth_tools=("find_line_by_email",),
    owner_field="line_id",
    confirm_details=("line_id",),
    status_rules={
        name: _ACTIVE for name in ("reset_registration", "lift_data_bar", "enable_roaming")
    },
    transfer_tool="transfer_to_human_agents",
)


def _claimed_user_actions(trajectory: Trajectory) -> list[str]:
    return unperformed_claims(trajectory, USER_TOOLS)


PHONE_CHECKS = (
    TrajectoryCheck(
        extends="policy", reason="policy.claimed_user_action", problems=_claimed_user_actions
    ),
)
