"""The plain-data world generator (`world.generate_world`) against the object-built generator it
replaced (`reference_retail_world`): the same data, key order included, for many seeds, so
every task id and state hash stays as it was."""

from __future__ import annotations

import json

from trajforge.generators.domains.retail.data_model import generate_state, random_address
from trajforge.generators.domains.retail.world import (
    N_ORDERS,
    N_PRODUCTS,
    N_USERS,
    address_data,
    generate_world,
)

from .reference_retail_world import random_address as reference_address
from .reference_retail_world import reference_state

SEEDS = (*range(40), 977, 40_001, 123_456_789, 2**62 + 5)


def test_plain_world_is_the_object_built_world_byte_for_byte() -> None:
    for seed in SEEDS:
        reference = reference_state(seed, N_USERS, N_PRODUCTS, N_ORDERS)
        # json.dumps keeps key order: the data is the dump, not just an equal mapping.
        assert json.dumps(generate_world(seed)) == json.dumps(reference.model_dump(mode="json"))
        assert generate_state(seed).model_dump_json() == reference.model_dump_json()


def test_other_world_sizes_follow_the_same_draws() -> None:
    for seed in (3, 8):
        for size in ((5, 4, 9), (30, 12, 60)):  # smaller, and the size before the default's cut
            assert generate_world(seed, *size) == reference_state(seed, *size).model_dump(
                mode="json"
            )


def test_default_world_size() -> None:
    """The size every task id depends on; changing it changes every retail task."""
    world = generate_world(3)
    assert (len(world["users"]), len(world["products"]), len(world["orders"])) == (15, 12, 30)


def test_random_address_draws_as_before() -> None:
    import random

    for seed in range(20):
        ours, theirs = random.Random(seed), random.Random(seed)
        assert random_address(ours) == reference_address(theirs)
        assert ours.random() == theirs.random()  # same number of draws
        assert address_data(random.Random(seed)) == random_address(random.Random(seed)).model_dump()


def test_order_statuses_have_one_source():
    """The state's `OrderStatus`, the claim checker's statuses and the world's status draw name
    the same statuses, in the same order (`ORDER_STATUSES` is the one list)."""
    from trajforge.generators.domains.retail.data_model import ORDER_STATUSES
    from trajforge.generators.domains.retail.rules import RETAIL_CLAIMS
    from trajforge.generators.domains.retail.world import ORDER_STATUS_WEIGHTS

    assert RETAIL_CLAIMS.statuses == ORDER_STATUSES
    assert tuple(s for s, _ in ORDER_STATUS_WEIGHTS) == ORDER_STATUSES
