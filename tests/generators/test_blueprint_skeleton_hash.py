"""Skeleton and plan fast paths: the final check hashes the last write's dump (the same
verdict as hashing the state); `info_slots` stops at the first matching call (the same slots)."""

from __future__ import annotations

import pytest

from trajforge.generators.blueprint_plan import (
    _linked,
    _search_start,
    _shows,
    execute_skeleton,
    info_slots,
    needs_info,
)
from trajforge.generators.domains.retail.domain import RetailDomain
from trajforge.generators.personas import sample_persona
from trajforge.generators.tooling import TaskRejected, state_hash
from trajforge.schemas import Rejected, derive_seed


def _retail_tasks(domain: RetailDomain, count: int, build: int = 7):
    tasks = []
    for index in range(count):
        persona = sample_persona(derive_seed(build, index, "persona"))
        try:
            seed = derive_seed(build, index, "synthesize", 0)
            tasks.append(domain.synthesize_task(persona, seed))
        except TaskRejected:
            continue
    return tasks


def test_final_hash_from_the_last_write_equals_the_state_hash() -> None:
    domain = RetailDomain()
    tasks = _retail_tasks(domain, 14)
    ends = {"write": 0, "read": 0}
    for task in tasks:
        state, calls = execute_skeleton(task, domain)  # raises if the check disagreed
        assert state_hash(state) == task.gold_final_hash
        last = calls[-1].execution
        ends["write" if last.mutating else "read"] += 1
        if last.mutating:
            assert last.state_after is not None
    assert ends["write"] >= 3 and ends["read"] >= 1, ends  # both paths were taken


@pytest.mark.parametrize("ending", ["write", "read"])
def test_a_wrong_final_hash_is_still_rejected(ending: str) -> None:
    domain = RetailDomain()
    for task in _retail_tasks(domain, 14):
        _, calls = execute_skeleton(task, domain)
        if calls[-1].execution.mutating == (ending == "write"):
            wrong = task.model_copy(update={"gold_final_hash": "0" * 64})
            with pytest.raises(Rejected, match="gold_final_hash"):
                execute_skeleton(wrong, domain)
            return
    pytest.fail(f"no task whose plan ends with a {ending}")


def _eager_slots(known_info: dict[str, str], calls) -> list[int]:
    """`info_slots` as it was: every needing and linked call listed, then the first taken."""
    slots: list[int] = []
    for label, value in known_info.items():
        needing = [i for i, item in enumerate(calls) if needs_info(item.call, value)]
        linked = [i for i, item in enumerate(calls) if _linked(item.call, label, value)]
        if needing:
            slots.append(needing[0])
        elif linked:
            slots.append(min(linked[0] + 1, len(calls)))
        elif not slots:
            slots.append(0)
        else:
            after = slots[-1]
            shown = [
                i
                for i in range(after, len(calls))
                if not calls[i].execution.mutating and _shows(calls[i], value)
            ]
            slots.append(_search_start(calls, shown[0], after) if shown else after)
    return slots


def test_info_slots_stops_at_the_first_call_with_the_same_slots() -> None:
    domain = RetailDomain()
    for build in (7, 8):
        for task in _retail_tasks(domain, 14, build):
            _, calls = execute_skeleton(task, domain)
            known = dict(task.scenario.known_info)
            assert info_slots(known, calls) == _eager_slots(known, calls)
