"""Every domain's write tools against their `touches` declarations, byte for byte.

A write that mutates an entry it did not declare would leave a stale entry in the held dump
(and so a wrong diff and state hash). Each domain's writes run here in chains of random calls
(valid and invalid arguments, failing calls included) on many generated worlds, once through
the incremental path (the held dump patched at the declared entries, the diff over them, the
hash from `CanonicalParts`) and once through the reference (whole dumps around every call,
`content_hash`), and everything must be identical: observation, error, diff (order included),
the held dump (key order included), the hash, and the previous version's dump untouched.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
from collections.abc import Callable
from typing import Any

import pytest

from trajforge.generators.domains import get_domain
from trajforge.generators.execute_options import ExecuteOptions
from trajforge.schemas import InitialState, ToolCall, content_hash
from trajforge.schemas.base import CanonicalParts

Arguments = Callable[[Any, random.Random], dict[str, Any]]


def _pick(rng: random.Random, values: list[Any], bogus: Any, p_bogus: float = 0.15) -> Any:
    return bogus if not values or rng.random() < p_bogus else rng.choice(values)


def _retail_order(state: Any, rng: random.Random):
    """An order, pending or delivered ones more often (most writes need one of those)."""
    orders = list(state.orders.values())
    wanted = [o for o in orders if o.status in ("pending", "delivered")]
    return rng.choice(wanted if wanted and rng.random() < 0.7 else orders)


def _retail_arguments(name: str, state: Any, rng: random.Random) -> dict[str, Any]:
    """Arguments for a retail write: mostly drawn from the state, sometimes wrong."""
    order = _retail_order(state, rng)
    items = [i.item_id for i in order.items]
    old = rng.sample(items, rng.randint(1, len(items))) if rng.random() < 0.9 else []
    if rng.random() < 0.1:
        old = [*old, "0000000000"]
    new = []
    for item_id in old:
        line = next((i for i in order.items if i.item_id == item_id), None)
        variants = list(state.products[line.product_id].variants) if line else []
        new.append(_pick(rng, variants, "1111111111"))
    if rng.random() < 0.1:
        new = new[:-1]
    own = list(state.users[order.user_id].payment_methods)
    every = [pm for u in state.users.values() for pm in u.payment_methods]
    payment = _pick(rng, own if rng.random() < 0.8 else every, "paypal_0")
    address = {
        "address1": f"{rng.randint(1, 99)} Elm St",
        "address2": rng.choice(["", "Apt 2"]),
        "city": "Fairhaven",
        "state_code": "WA",
        "country": "USA",
        "zip": f"{rng.randint(10000, 99999)}",
    }
    order_id = order.order_id if rng.random() < 0.9 else "#W0000000"
    user_id = _pick(rng, list(state.users), "nobody_1")
    by_tool: dict[str, dict[str, Any]] = {
        "cancel_pending_order": {
            "order_id": order_id,
            "reason": rng.choice(["no longer needed", "ordered by mistake"]),
        },
        "modify_pending_order_items": {
            "order_id": order_id,
            "item_ids": old,
            "new_item_ids": new,
            "payment_method_id": payment,
        },
        "modify_pending_order_address": {"order_id": order_id, **address},
        "modify_pending_order_payment": {"order_id": order_id, "payment_method_id": payment},
        "modify_user_address": {"user_id": user_id, **address},
        "return_delivered_order_items": {
            "order_id": order_id,
            "item_ids": old,
            "payment_method_id": payment,
        },
        "exchange_delivered_order_items": {
            "order_id": order_id,
            "item_ids": old,
            "new_item_ids": new,
            "payment_method_id": payment,
        },
        "transfer_to_human_agents": {"summary": "help"},
    }
    return by_tool[name]


def _toy_arguments(name: str, state: Any, rng: random.Random) -> dict[str, Any]:
    if name == "transfer_to_human_agents":
        return {"summary": "help"}
    amount = rng.choice([12.5, 0.01, 99.99, 0, -5, 1e-5, 7])
    return {"account_id": _pick(rng, list(state.accounts), "#A9999"), "amount": amount}


def _search_arguments(name: str, state: Any, rng: random.Random) -> dict[str, Any]:
    if name == "answer":
        return {"text": rng.choice(["The Velmora Press.", "", "  ", "Ann Lee", "1999"])}
    return {"summary": "help"}


ARGUMENTS = {"retail": _retail_arguments, "toy": _toy_arguments, "search": _search_arguments}


def _reference_hash(dumped: dict[str, Any]) -> str:
    return content_hash(dumped)


@pytest.mark.parametrize("name", ["retail", "toy", "search"])
def test_incremental_writes_equal_whole_dumps(name):
    domain = get_domain(name)
    toolbox = domain.toolbox
    writes = [s.name for s in toolbox.specs if s.mutates_state]
    assert writes and all(toolbox._touches[w] is not None for w in writes), "declare touches"
    rng = random.Random(14)
    ran: dict[str, set[bool]] = {w: set() for w in writes}
    worlds = 25 if name == "retail" else 40
    for seed in range(worlds):
        init = InitialState(seed=seed)
        fast, slow = domain.initial_state(init), domain.initial_state(init)
        outlined = domain.initial_state(init)
        held = fast.model_dump(mode="json")
        parts = CanonicalParts()
        assert hashlib.sha256(parts.bytes_of(held)).hexdigest() == _reference_hash(held)
        for step in range(12):
            tool_name = rng.choice(writes)
            call = ToolCall(
                id=f"c{step}", name=tool_name, arguments=ARGUMENTS[name](tool_name, slow, rng)
            )
            kept = copy.deepcopy(held)
            quick = toolbox.execute(fast, call, held)
            whole = toolbox.execute(slow, call, None, ExecuteOptions(incremental=False))
            lean = toolbox.execute(outlined, call, None, ExecuteOptions(hold=False))
            assert (lean.observation, lean.error, lean.diff) == (
                whole.observation,
                whole.error,
                whole.diff,
            ), call
            assert lean.state_after is None
            assert json.dumps(outlined.model_dump(mode="json")) == json.dumps(
                slow.model_dump(mode="json")
            ), f"{call}: the outlined write (or its undo) left another state"
            assert held == kept, f"{call}: the previous version's dump was changed"
            assert (quick.observation, quick.error, quick.mutating) == (
                whole.observation,
                whole.error,
                whole.mutating,
            )
            assert quick.diff == whole.diff, call
            assert json.dumps(quick.state_after) == json.dumps(whole.state_after), call
            assert json.dumps(quick.state_after) == json.dumps(fast.model_dump(mode="json"))
            held = quick.state_after
            assert hashlib.sha256(parts.bytes_of(held)).hexdigest() == _reference_hash(
                whole.state_after
            )
            ran[tool_name].add(quick.error is None)
    # every write ran, and every one that can fail did fail somewhere and succeed somewhere
    assert all(outcomes for outcomes in ran.values()), ran
    assert sum(len(o) == 2 for o in ran.values()) >= len(writes) - 1, ran
