"""canonical_json has one text per value whichever encoder writes it (orjson or the stdlib)."""

from __future__ import annotations

import enum
import json
import random

import pytest

from trajforge.generators.domains import get_domain
from trajforge.schemas import InitialState, base, canonical_json


def reference(value) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


TRICKY = [
    {"b": 1, "a": {"é": 1, "z": 2, "Z": 3, "😀": [True, None, -0.0]}},
    [1e-05, 1e-7, 5e-324, 1e16, 1.5e300, 0.1, 123456789.123, 54.2],
    [float("nan"), float("inf"), -float("inf")],
    {"s": '\x00\x1f\x7f\u2028"\\\n\t'},
    {"big": 2**70, "small": -(2**63)},
    {1: "int key", "x": 2},
    {"lone": "\ud800"},
]


@pytest.mark.parametrize("value", TRICKY)
def test_tricky_values_match_the_stdlib(value):
    try:
        expected = reference(value)
    except (TypeError, ValueError):
        pytest.skip("not serialisable by the reference either")
    assert canonical_json(value) == expected


def test_random_floats_match_the_stdlib():
    rng = random.Random(0)
    values = [rng.uniform(-1, 1) * 10 ** rng.uniform(-30, 30) for _ in range(20000)]
    assert canonical_json(values) == reference(values)


def test_floats_over_the_whole_double_range_match_the_stdlib_one_by_one():
    """One float per value, so a float orjson spells differently cannot hide behind another
    that already sent the whole list to the reference encoder."""
    rng = random.Random(1)
    values = [rng.uniform(-1, 1) * 10 ** rng.uniform(-323, 307) for _ in range(20000)]
    values += [10.0**k for k in range(-323, 308)] + [9.999e-5, 1e-4, 9.999999999999998e15, 1e16]
    values += [5e-324, 2.2250738585072014e-308, 1.7976931348623157e308]
    for v in values:
        assert canonical_json({"x": [v]}) == reference({"x": [v]}), v


class Colour(str, enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Word(str):
    pass


NAN_AND_FRIENDS = [
    {"a": [1, {"b": float("nan")}], "c": None},
    {"a": None, "b": [float("-inf")]},
    {"s": "NaN and Infinity as text", "n": None},
    {"s": "re-1, e-5 and 0.00001 as text", "v": 1.5},
    {"e": Colour.RED, "i": Level.HIGH, "t": (1, "x")},
    {"w": Word("sub"), "f": 1.5},
    {"k": {Colour.RED: 1}},
    {"big": 2**63, "neg": -(2**63) - 1},
    [True, False, 0, 1, 0.0, -0.0, 1.0],
]


@pytest.mark.parametrize("value", NAN_AND_FRIENDS)
def test_fast_path_matches_the_reference_and_the_node_by_node_rule(value):
    """The C-level proof (`_fast_bytes`) gives the stdlib's bytes whenever it answers (text
    that spells NaN or a small float only costs the reference encoder)."""
    expected = reference(value).encode()
    fast = base._fast_bytes(value)
    assert fast is None or fast == expected
    assert base.canonical_bytes(value) == expected


def test_world_states_take_the_fast_path_and_match(monkeypatch):
    if base.orjson is None:
        pytest.skip("orjson not installed")
    domain = get_domain("retail")
    dumps = [domain.initial_state(InitialState(seed=s)).model_dump(mode="json") for s in range(5)]
    assert all(base._orjson_safe(d) for d in dumps)
    assert all(base._fast_bytes(d) is not None for d in dumps)
    fast = [canonical_json(d) for d in dumps]
    monkeypatch.setattr(base, "orjson", None)
    assert fast == [canonical_json(d) for d in dumps] == [reference(d) for d in dumps]
