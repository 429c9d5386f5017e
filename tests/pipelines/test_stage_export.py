"""The exported row's tool list and the provenance's config hash, made once per build's
resources (`StageResources`), are the ones computed afresh for every row."""

from __future__ import annotations

import json

import pytest

from trajforge.generators.domains import DOMAIN_PATHS
from trajforge.pipelines.config import BuildConfig
from trajforge.pipelines.resources import StageResources


def _config(domain: str, **changes) -> BuildConfig:
    base = {
        "name": "a",
        "domain": domain,
        "num_tasks": 1,
        "seed": 1,
        "mode": "blueprint",
        "roles": {"agent": {"kind": "scripted", "responder": "blueprint"}},
    }
    return BuildConfig.model_validate({**base, **changes})


@pytest.mark.parametrize("name", list(DOMAIN_PATHS))
def test_tools_json_is_the_per_row_json_made_in_setup(name):
    res = StageResources(_config(name), run_dir="unused")
    res.setup()
    domain = res.domain_for(name)
    fresh = json.dumps([s.openai_schema() for s in domain.toolbox.specs], sort_keys=True)
    assert res.tools_json_for(name) == fresh
    assert res.tools_json_for(name) is res.tools_json_for(name)  # made once, in setup


def test_tools_json_of_an_unknown_domain_names_the_build_s_domains():
    res = StageResources(_config("toy"), run_dir="unused")
    res.setup()
    with pytest.raises(KeyError, match="'retail' is not part of this build; it has: toy"):
        res.tools_json_for("retail")


def test_config_hash_is_the_config_s_and_not_pickled():
    """Once per resources object, each config its own hash; a worker's copy computes its own."""
    first = StageResources(_config("toy"), run_dir="unused")
    second = StageResources(_config("toy", num_tasks=2), run_dir="unused")
    assert first.config_hash == first.config.config_hash()
    assert first.config_hash is first.config_hash  # the second read is the attribute
    assert second.config_hash == second.config.config_hash() != first.config_hash
    assert "config_hash" not in first.__getstate__()
