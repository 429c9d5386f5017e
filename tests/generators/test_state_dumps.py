"""The incremental dump after a write and its diff equal the whole dump's and `state_diff`."""

from __future__ import annotations

import copy
import json
import random

from pydantic import BaseModel, ConfigDict

from trajforge.generators.state_dumps import patched_dump, state_diff, touched_diff


class Item(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    tags: list[str] = []
    price: float | None = None


class World(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: dict[str, Item]
    counts: dict[str, int]
    log: list[str] = []
    note: str | None = None


def _world() -> World:
    return World(
        items={"a": Item(name="A", tags=["x"]), "b": Item(name="B", price=2.5)},
        counts={"a": 1, "b": 0},
        log=["start"],
    )


def _check(world: World, mutate, paths) -> None:
    before = world.model_dump(mode="json")
    kept = copy.deepcopy(before)
    mutate(world)
    after = patched_dump(world, before, paths)
    assert before == kept, "the previous dump must stay as it was"
    assert json.dumps(after) == json.dumps(world.model_dump(mode="json"))
    assert touched_diff(before, after, paths) == state_diff(before, after)


def test_patched_dump_of_models_plain_values_and_fields():
    _check(_world(), lambda w: setattr(w.items["a"], "price", 9.0), [("items", "a")])
    _check(_world(), lambda w: w.counts.__setitem__("b", 5), [("counts", "b")])
    _check(_world(), lambda w: w.log.append("more"), [("log",)])
    _check(_world(), lambda w: setattr(w, "note", "n"), [("note",)])
    _check(_world(), lambda w: w.items.pop("a"), [("items", "a")])
    _check(_world(), lambda w: w.items.__setitem__("c", Item(name="C")), [("items", "c")])
    _check(_world(), lambda w: w.items["b"].tags.append("t"), [("items", "b", "tags")])
    _check(_world(), lambda w: None, [])
    _check(_world(), lambda w: None, [("items", "zz"), ("nothing",)])
    _check(  # a path listed twice, and one inside another
        _world(),
        lambda w: setattr(w.items["a"], "name", "Z"),
        [("items", "a"), ("items", "a"), ("items",), ("items", "a", "name")],
    )


def test_unpatchable_paths_ask_for_a_whole_dump():
    world = _world()
    before = world.model_dump(mode="json")
    assert patched_dump(world, before, [()]) is None
    assert patched_dump(world, before, [("log", "0")]) is None  # a list on the path


def test_int_keyed_entries_ask_for_a_whole_dump():
    class Ledger(BaseModel):
        rows: dict[int, Item]

    ledger = Ledger(rows={5: Item(name="five")})
    before = ledger.model_dump(mode="json")
    assert list(before["rows"]) == ["5"]
    ledger.rows[5].price = 1.0
    assert patched_dump(ledger, before, [("rows", "5")]) is None


def _value(rng: random.Random, depth: int):
    kind = rng.randrange(5 if depth else 3)
    if kind == 0:
        return rng.choice([None, 1, 2.5, "s", True])
    if kind == 1:
        return rng.choice([{}, [], ""])
    if kind == 2:
        return rng.randint(0, 3)
    if kind == 3:
        return {k: _value(rng, depth - 1) for k in rng.sample("abcd", rng.randint(0, 3))}
    return [_value(rng, depth - 1) for _ in range(rng.randint(0, 3))]


def test_touched_diff_equals_the_whole_diff_on_random_dumps():
    """Random nested dumps, one to three entries changed (set, removed, added, retyped,
    emptied) copy-on-write, and the changed paths (plus some unchanged ones) declared."""
    rng = random.Random(5)
    for _ in range(3000):
        before = {
            f: {k: _value(rng, 2) for k in rng.sample("pqrs", rng.randint(0, 4))}
            for f in rng.sample("FGH", rng.randint(1, 3))
        }
        after, paths = before, []
        for _ in range(rng.randint(1, 3)):
            field = rng.choice(list(before))
            if rng.random() < 0.2:
                after = {**after, field: _value(rng, 2)}
                paths.append((field,))
                continue
            entries = after[field] if isinstance(after[field], dict) else {}
            key = rng.choice("pqrst")
            entries = dict(entries)
            if key in entries and rng.random() < 0.3:
                del entries[key]
            else:
                entries[key] = _value(rng, 2)
            after = {**after, field: entries}
            paths.append((field, key))
        if rng.random() < 0.3:
            paths.append((rng.choice(list(before)), "untouched"))
        assert touched_diff(before, after, paths) == state_diff(before, after), (before, after)


def test_outlines_diff_like_whole_dumps_and_undo_a_failed_call():
    from trajforge.generators.state_dumps import outline, restore_outline

    world = _world()
    whole_before = world.model_dump(mode="json")
    paths = [("items", "a"), ("items", "c"), ("note",)]
    before = outline(world, paths)
    world.items["a"].price = 1.0
    world.items["c"] = Item(name="C")
    world.note = "changed"
    after = outline(world, paths)
    assert state_diff(before, after) == state_diff(whole_before, world.model_dump(mode="json"))
    untouched = world.items["b"]
    restore_outline(world, before)  # as if the call had failed after mutating
    assert json.dumps(world.model_dump(mode="json")) == json.dumps(whole_before)
    assert world.items["b"] is untouched  # entries off the paths keep their objects
    assert outline(world, [("counts", "a")]) is None  # a dict of plain values: whole dumps
    assert outline(world, [("items", "a", "name")]) is None
