"""The retail world fast path: initial states built from cached plain data with path-copied
patches must be exactly the states the slow path (generate, dump, patch, validate) builds, and
never share mutable objects with each other or with the cache."""

from __future__ import annotations

import functools
import random

from trajforge.generators.domain_kit import best_plan
from trajforge.generators.domain_kit.replay import patch_in_place
from trajforge.generators.domains.retail.data_model import generate_state
from trajforge.generators.domains.retail.domain import RetailDomain
from trajforge.generators.domains.retail.tasks import RetailTaskSpace
from trajforge.generators.personas import sample_persona
from trajforge.generators.tooling import apply_patches, state_hash
from trajforge.schemas import InitialState, StatePatch

NAME = {"first_name": "Ada", "last_name": "Quill"}


def _patches(state) -> tuple[StatePatch, ...]:
    user_id = sorted(state.users)[3]
    order_id = sorted(state.orders)[0]
    return (
        StatePatch(path=f"users.{user_id}.name", value=NAME),
        StatePatch(path=f"users.{user_id}.email", value="ada.quill@example.com"),
        StatePatch(path=f"orders.{order_id}.items.0.price", value=12.5),
    )


def test_fast_initial_state_is_the_slow_one_byte_for_byte() -> None:
    domain = RetailDomain()
    for seed in (0, 1, 17, 40_001):
        slow = generate_state(seed)
        assert domain.initial_state(InitialState(seed=seed)).model_dump_json() == (
            slow.model_dump_json()
        )
        patches = _patches(slow)
        fast = domain.initial_state(InitialState(seed=seed, patches=patches))
        reference = apply_patches(slow, patches)
        assert fast.model_dump_json() == reference.model_dump_json()
        assert state_hash(fast) == state_hash(reference)
        assert state_hash(fast) != state_hash(slow)


def test_initial_states_share_nothing_mutable() -> None:
    domain = RetailDomain()
    base = generate_state(5)
    init = InitialState(seed=5, patches=_patches(base))
    first = domain.initial_state(init)
    before = state_hash(domain.initial_state(init))
    user_id = sorted(base.users)[3]
    first.users[user_id].name.first_name = "Changed"
    first.users[user_id].payment_methods.clear()
    next(iter(first.orders.values())).items[0].options["size"] = "XXL"
    assert state_hash(domain.initial_state(init)) == before
    assert state_hash(domain.initial_state(InitialState(seed=5))) == state_hash(base)
    assert domain.initial_state(init).users[user_id].name.first_name == "Ada"


def test_plan_search_with_fresh_states_is_the_copying_one() -> None:
    """Working copies from the domain's `initial_state` (synthesis's fast path) give exactly
    the plans that JSON-round-trip copies give, and leave the searched state untouched."""
    domain, space = RetailDomain(), RetailTaskSpace()
    for seed in range(12):
        world = InitialState(seed=seed)
        state = domain.initial_state(world)
        before = state_hash(state)
        for complexity in (1, 3):
            copied = best_plan(space, domain.toolbox, state, complexity, random.Random(seed))
            fresh = functools.partial(domain.initial_state, world)
            searched = best_plan(
                space, domain.toolbox, state, complexity, random.Random(seed), fresh
            )
            assert copied == searched
        assert state_hash(state) == before


def test_patching_in_place_is_the_patched_initial_state() -> None:
    """`patch_in_place` (synthesis's persona patches on the searched world) gives the state
    `initial_state` builds with those patches, for the personas' name/email patches of retail
    and toy; paths it cannot validate by a field are refused with the state untouched."""
    from trajforge.generators.domains.toy.domain import ToyDomain
    from trajforge.generators.domains.toy.tasks import ToyTaskSpace

    for domain, space in ((RetailDomain(), RetailTaskSpace()), (ToyDomain(), ToyTaskSpace())):
        for seed in range(6):
            state = domain.initial_state(InitialState(seed=seed))
            actor = space.actors(state)[seed % 3]
            patches = space.become(state, actor, sample_persona(seed))
            assert patch_in_place(state, patches)
            expected = domain.initial_state(InitialState(seed=seed, patches=patches))
            assert state.model_dump_json() == expected.model_dump_json()
    state = RetailDomain().initial_state(InitialState(seed=5))
    before = state.model_dump_json()
    order_id = sorted(state.orders)[0]
    for refused in (
        (StatePatch(path=f"orders.{order_id}.items.0", value={}),),  # a list slot
        (StatePatch(path="users.nobody.email", value="x@example.com"),),
        (StatePatch(path=f"orders.{order_id}.model_dump.x", value=1),),
        (
            StatePatch(path=f"orders.{order_id}.address", value={}),
            StatePatch(path=f"orders.{order_id}.address.zip", value="00000"),
        ),
    ):
        assert not patch_in_place(state, refused)
        assert state.model_dump_json() == before
