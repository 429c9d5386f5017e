"""The toy bank's `policy.md` as checkable rules (see generators/policy_rules.py).

Kept next to policy.md so an edit to one is reviewed with the other: identify the user by the
email lookup first; act only on the account that lookup returned (reads included); confirm each
deposit with its account and amount; deposit only into an open account; one tool call at a
time; transfer only when the request is outside the tools. With these the framework's own test
domain exercises the policy filter too (the noisy teacher's faults are caught on toy builds).
"""

from __future__ import annotations

from trajforge.generators.policy_rules import PolicyRules, StatusRule

TOY_RULES = PolicyRules(
    auth_tools=("find_account_by_email",),
    owner_field="account_id",
    confirm_details=("account_id", "amount"),
    status_rules={"deposit": StatusRule(object_arg="account_id", allowed=("open",))},
    transfer_tool="transfer_to_human_agents",
)
