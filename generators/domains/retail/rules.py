"""Retail's `policy.md` as checkable rules (see generators/policy_rules.py for what each means).

Kept next to policy.md so an edit to one is reviewed with the other: authenticate by email or
name+zip first; act only for that user (reads included); confirm each write with its details;
one write per confirmation; statuses from "Order statuses and allowed actions"; one tool call
at a time; transfer only when nothing else is allowed.
"""

from __future__ import annotations

from trajforge.generators.domains.retail.data_model import ORDER_STATUSES
from trajforge.generators.policy_rules import ClaimTypes, PolicyRules, StatusRule

_PENDING = StatusRule(object_arg="order_id", allowed=("pending",))
_DELIVERED = StatusRule(object_arg="order_id", allowed=("delivered",))

RETAIL_RULES = PolicyRules(
    auth_tools=("find_user_id_by_email", "find_user_id_by_name_zip"),
    public_tools=("get_product_details", "list_all_product_types", "calculate"),
    owner_field="user_id",
    confirm_details=("order_id", "address1"),
    status_rules={
        "cancel_pending_order": _PENDING,
        "modify_pending_order_items": _PENDING,
        "modify_pending_order_address": _PENDING,
        "modify_pending_order_payment": _PENDING,
        "return_delivered_order_items": _DELIVERED,
        "exchange_delivered_order_items": _DELIVERED,
    },
    transfer_tool="transfer_to_human_agents",
)

#: What retail claims are about: orders (by `#W...` id), their statuses, street addresses.
RETAIL_CLAIMS = ClaimTypes(
    object_pattern=r"#W\d{7}",
    object_key="order_id",
    statuses=ORDER_STATUSES,
    addresses=True,  # full and abbreviated street types, by the value grammar
    description_fields=("name",),  # "the Coffee Maker I returned" -> the order holding it
)
