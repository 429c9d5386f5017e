"""The plan search on the state itself (writes undone afterwards) finds the plans the working
copies found, and hands the state back byte for byte as it came."""

from __future__ import annotations

import json
import random

import pytest

from trajforge.generators.domain_kit import best_plan
from trajforge.generators.domains import get_domain
from trajforge.generators.domains.retail.tasks import RetailTaskSpace
from trajforge.generators.domains.toy.tasks import ToyTaskSpace
from trajforge.generators.tooling import LiveDump
from trajforge.schemas import InitialState

SPACES = {"retail": RetailTaskSpace, "toy": ToyTaskSpace}


def _search(domain, space, seed: int, complexity: int):
    state = domain.initial_state(InitialState(seed=seed))
    before = json.dumps(state.model_dump(mode="json"))
    plan = best_plan(space, domain.toolbox, state, complexity, random.Random(seed))
    return plan, before, json.dumps(state.model_dump(mode="json"))


@pytest.mark.parametrize("name", ["retail", "toy"])
def test_plans_on_the_state_equal_plans_on_copies(name, monkeypatch):
    domain = get_domain(name)
    assert domain.toolbox.declares_touches
    space = SPACES[name]()
    found = 0
    for seed in range(40):
        complexity = 1 + seed % 4
        plan, before, after = _search(domain, space, seed, complexity)
        assert after == before, f"seed {seed}: the search left the state changed"
        with monkeypatch.context() as patch:
            patch.setattr(LiveDump, "SHARE", False)  # working copies, whole dumps
            reference, _, _ = _search(domain, space, seed, complexity)
        assert plan == reference, seed
        found += plan is not None and len(plan.goals) > 1
    assert found >= 10  # plans with several sub-goals (and so writes) were searched
