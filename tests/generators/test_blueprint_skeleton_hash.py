"""The skeleton's final check hashes the last write's dump: the same verdict as hashing the state."""

from __future__ import annotations

import pytest

from trajforge.generators.blueprint_plan import execute_skeleton
from trajforge.generators.domains.retail.domain import RetailDomain
from trajforge.generators.personas import sample_persona
from trajforge.generators.tooling import TaskRejected, state_hash
from trajforge.schemas import Rejected, derive_seed


def _retail_tasks(domain: RetailDomain, count: int):
    tasks = []
    for index in range(count):
        persona = sample_persona(derive_seed(7, index, "persona"))
        try:
            tasks.append(domain.synthesize_task(persona, derive_seed(7, index, "synthesize", 0)))
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
