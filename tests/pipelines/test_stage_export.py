"""The exported row's tool list, computed once per domain, is the one built for every row."""

from __future__ import annotations

import json

import pytest

from trajforge.generators.domains import DOMAIN_PATHS, get_domain
from trajforge.pipelines.stages import tools_json


@pytest.mark.parametrize("name", list(DOMAIN_PATHS))
def test_tools_json_is_the_per_row_json_and_cached_per_domain(name):
    domain, other = get_domain(name), get_domain(name)
    fresh = json.dumps([s.openai_schema() for s in domain.toolbox.specs], sort_keys=True)
    assert tools_json(domain) == fresh
    assert tools_json(domain) is tools_json(domain)  # the second call reads the cache
    assert tools_json(other) == fresh  # another instance of the domain gets its own entry


def test_per_object_values_follow_the_object_not_its_id():
    from trajforge.pipelines.config import BuildConfig
    from trajforge.pipelines.stages import per_object

    base = {
        "name": "a",
        "domain": "toy",
        "num_tasks": 1,
        "seed": 1,
        "mode": "blueprint",
        "roles": {"agent": {"kind": "scripted", "responder": "blueprint"}},
    }
    first = BuildConfig.model_validate(base)
    second = BuildConfig.model_validate({**base, "num_tasks": 2})
    calls = []

    def config_hash(config):
        calls.append(config)
        return config.config_hash()

    assert per_object("test_hash", first, config_hash) == first.config_hash()
    assert per_object("test_hash", first, config_hash) == first.config_hash()
    assert per_object("test_hash", second, config_hash) == second.config_hash()
    assert calls == [first, second]  # once per object


def test_per_object_memo_is_bounded(monkeypatch):
    from trajforge.pipelines import stages

    monkeypatch.setattr(stages, "_PER_OBJECT", {})
    objects = [object() for _ in range(stages.PER_OBJECT_LIMIT * 2 + 1)]
    values = [stages.per_object("test_id", o, id) for o in objects]
    assert values == [id(o) for o in objects]
    assert len(stages._PER_OBJECT) <= stages.PER_OBJECT_LIMIT
