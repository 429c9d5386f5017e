"""canonical_json has one text per value whichever encoder writes it (orjson or the stdlib)."""

from __future__ import annotations

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


def test_world_states_take_the_fast_path_and_match(monkeypatch):
    if base.orjson is None:
        pytest.skip("orjson not installed")
    domain = get_domain("retail")
    dumps = [domain.initial_state(InitialState(seed=s)).model_dump(mode="json") for s in range(5)]
    assert all(base._orjson_safe(d) for d in dumps)
    fast = [canonical_json(d) for d in dumps]
    monkeypatch.setattr(base, "orjson", None)
    assert fast == [canonical_json(d) for d in dumps] == [reference(d) for d in dumps]
