"""The retail world generator makes exactly the reference generator's RNG calls (same methods,
equal arguments, same order) and gives its plain data on 300 seeds, so worlds, task ids and
state hashes stay as they were however the work around the draws is arranged."""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

import pytest
from pydantic import BaseModel

from trajforge.generators.domains.retail.world import N_ORDERS, N_PRODUCTS, N_USERS, generate_world

from .reference_retail_world import reference_state

#: The public draws of `random.Random` a generator may make (nested calls, such as `randint`
#: calling `randrange`, are recorded too: both generators go through the same methods).
DRAWS = ("randint", "randrange", "choice", "choices", "sample", "random", "uniform", "shuffle")


def _plain(value: Any) -> Any:
    """Arguments as comparable plain data (the reference samples product objects, the plain
    generator their dumps; tuples and lists of equal items are the same population)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class RecordingRandom(random.Random):
    """A `random.Random` that logs every public draw with its arguments."""

    def __init__(self, seed: Any = None) -> None:
        self.calls: list[tuple[str, Any, Any]] = []
        super().__init__(seed)


def _recorder(name: str):
    base = getattr(random.Random, name)

    def draw(self: RecordingRandom, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((name, _plain(args), _plain(kwargs)))
        return base(self, *args, **kwargs)

    return draw


for _name in DRAWS:
    setattr(RecordingRandom, _name, _recorder(_name))


def _draws(monkeypatch: pytest.MonkeyPatch, generate, seed: int) -> list[tuple[str, Any, Any]]:
    """The calls `generate(seed)` makes on the `random.Random` it creates."""
    made: list[RecordingRandom] = []

    def recording(seed: Any = None) -> RecordingRandom:
        made.append(RecordingRandom(seed))
        return made[-1]

    with monkeypatch.context() as patch:
        patch.setattr(random, "Random", recording)
        generate(seed)
    assert len(made) == 1
    return made[0].calls


def test_generation_makes_the_reference_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    for seed in (*range(12), 977, 2**62 + 5):
        ours = _draws(monkeypatch, generate_world, seed)
        theirs = _draws(
            monkeypatch, lambda s: reference_state(s, N_USERS, N_PRODUCTS, N_ORDERS), seed
        )
        assert len(ours) > 500
        assert ours == theirs


def test_the_recorder_sees_a_changed_draw(monkeypatch: pytest.MonkeyPatch) -> None:
    """The draw test can fail: an argument changed (a sorted list given unsorted) is seen."""

    def shuffled_ids(seed: int) -> None:
        rng = random.Random(seed)
        rng.choice(["b", "a"])

    def sorted_ids(seed: int) -> None:
        rng = random.Random(seed)
        rng.choice(sorted(["b", "a"]))

    assert _draws(monkeypatch, shuffled_ids, 1) != _draws(monkeypatch, sorted_ids, 1)


#: sha256 over `json.dumps` of the worlds of seeds 0-299 at the default size, as the reference
#: generator (and the plain-data generator before the draws were rearranged) made them.
WORLDS_0_300 = "8ce7819a6cf1e2cef80b641b19ec581b9aeb9d4294555b7a06d158129ad0dc4c"


def test_plain_data_of_300_seeds_is_the_reference() -> None:
    """The stored digest of 300 worlds (the reference takes ~15 ms a world to build, so it is
    compared directly on fewer seeds above and in test_retail_world_data.py)."""
    digest = hashlib.sha256()
    for seed in range(300):
        digest.update(json.dumps(generate_world(seed)).encode())
    assert digest.hexdigest() == WORLDS_0_300
    assert json.dumps(generate_world(299)) == json.dumps(
        reference_state(299, N_USERS, N_PRODUCTS, N_ORDERS).model_dump(mode="json")
    )


def test_worlds_share_no_mutable_data() -> None:
    """Tables made once per process (option combinations) are copied into each world."""
    first, second = generate_world(7), generate_world(8)

    def containers(node: Any, found: dict[int, Any]) -> dict[int, Any]:
        if isinstance(node, (dict, list)):
            found[id(node)] = node
            for child in node.values() if isinstance(node, dict) else node:
                containers(child, found)
        return found

    assert not containers(first, {}).keys() & containers(second, {}).keys()
    for product in first["products"].values():
        for variant in product["variants"].values():
            variant["options"]["color"] = "changed"
    assert "changed" not in json.dumps(generate_world(7))
