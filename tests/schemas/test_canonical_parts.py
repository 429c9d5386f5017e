"""`CanonicalParts` gives `canonical_bytes` of every version of a dumped state, byte for byte."""

from __future__ import annotations

import copy
import random

import pytest

from tests.schemas.test_canonical import NAN_AND_FRIENDS, TRICKY
from trajforge.generators.domains import get_domain
from trajforge.schemas import InitialState, base
from trajforge.schemas.base import CanonicalParts, canonical_bytes


def _nested(value):
    """`value` as a field, as an entry among others, and as a whole entry collection."""
    return {
        "z_field": value,
        "entries": {"b": value, "a": {"x": 1.5, "n": None}, "é": [value, None]},
        "plain": 3,
        "empty": {},
    }


@pytest.mark.parametrize("value", TRICKY + NAN_AND_FRIENDS)
def test_tricky_parts_join_to_the_whole_canonical_bytes(value):
    for whole in (value, _nested(value), {"only": {"one": value}}):
        try:
            expected = canonical_bytes(whole)
        except (TypeError, ValueError):
            continue  # the whole refuses too: nothing to compare
        assert CanonicalParts().bytes_of(whole) == expected


def test_many_doubtful_parts_with_one_nan_among_them():
    """The batched NaN proof fails over the lot; each part is then proved on its own."""
    entries = {f"k{i}": {"v": None, "f": 1.25} for i in range(10)}
    entries["k7"] = {"v": None, "f": float("nan")}
    whole = {"entries": entries, "other": {"x": None}}
    assert CanonicalParts().bytes_of(whole) == canonical_bytes(whole)
    assert b"NaN" in canonical_bytes(whole)


def _random_value(rng: random.Random, depth: int):
    kind = rng.randrange(9 if depth else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([0.1, 1e-5, 2.5, float("nan"), 1e16, -0.0, 3.0])
    if kind == 2:
        return rng.randint(-(2**65), 2**65)
    if kind == 3:
        return rng.choice(["a", "é\u2028", "NaN", "0.00001", "", "\x7f"])
    if kind in (4, 5):
        return rng.choice([True, False, 17])
    if kind in (6, 7):
        keys = rng.sample(["a", "b", "é", "Z", "k1", "k10", "#W1"], rng.randint(0, 4))
        return {k: _random_value(rng, depth - 1) for k in keys}
    return [_random_value(rng, depth - 1) for _ in range(rng.randint(0, 3))]


def _random_state(rng: random.Random) -> dict:
    return {
        f"f{i}": {f"e{j}": _random_value(rng, 2) for j in range(rng.randint(0, 6))}
        if rng.random() < 0.8
        else _random_value(rng, 2)
        for i in range(rng.randint(1, 4))
    }


def test_random_version_chains_match_canonical_bytes():
    """Versions made copy-on-write (only the containers on the changed path are new), as
    `patched_dump` makes them, and whole new dumps in between."""
    rng = random.Random(3)
    for _ in range(300):
        state = _random_state(rng)
        parts = CanonicalParts()
        for _ in range(6):
            assert parts.bytes_of(state) == canonical_bytes(state)
            state = dict(state)
            field = rng.choice(list(state))
            if isinstance(state[field], dict) and state[field] and rng.random() < 0.8:
                entries = dict(state[field])
                key = rng.choice(list(entries))
                if rng.random() < 0.2:
                    del entries[key]
                else:
                    entries[key] = _random_value(rng, 2)
                if rng.random() < 0.2:
                    entries["new"] = _random_value(rng, 1)
                state[field] = entries
            elif rng.random() < 0.1:
                state = copy.deepcopy(state)
            else:
                state[field] = _random_value(rng, 2)


def test_a_new_version_proves_only_its_new_parts(monkeypatch):
    domain = get_domain("retail")
    dumped = domain.initial_state(InitialState(seed=4)).model_dump(mode="json")
    parts = CanonicalParts()
    parts.bytes_of(dumped)
    proved = []
    real = base._proved_bytes
    monkeypatch.setattr(base, "_proved_bytes", lambda p: proved.append(len(p)) or real(p))
    order_id = next(iter(dumped["orders"]))
    order = {**dumped["orders"][order_id], "status": "cancelled"}
    version = {**dumped, "orders": {**dumped["orders"], order_id: order}}
    assert parts.bytes_of(version) == canonical_bytes(version)
    assert proved == [1]


def test_deeper_layouts_and_shared_collections():
    """Three levels laid out part by part, and one collection object reached twice."""
    shared = {"x": {"y": [1, None], "z": {}}, "w": 2.5}
    whole = {"a": {"b": shared, "c": {"d": {"e": None}}}, "f": shared}
    parts = CanonicalParts(depth=3)
    assert parts.bytes_of(whole) == canonical_bytes(whole)
    version = {**whole, "a": {**whole["a"], "c": {"d": {"e": 1e-7}}}}
    assert parts.bytes_of(version) == canonical_bytes(version)
