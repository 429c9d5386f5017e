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


def test_config_hash_follows_the_object_not_its_id():
    """Once per config object (the memo answers the second call), each config its own hash;
    the memo's bound and identity rule are tested with it in test_wire_memo.py."""
    from trajforge.pipelines.config import BuildConfig
    from trajforge.pipelines.stages import config_hash_of

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
    assert config_hash_of(first) == first.config_hash()
    assert config_hash_of(first) is config_hash_of(first)  # the second call reads the memo
    assert config_hash_of(second) == second.config_hash() != first.config_hash()
