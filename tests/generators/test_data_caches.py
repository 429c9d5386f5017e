"""The generation caches released before the shards are written (issue 30): each listed name
is a cached function, releasing empties them, and nothing is imported to clear it."""

from __future__ import annotations

import importlib
import sys

import pytest

from trajforge.generators import data_caches


@pytest.mark.parametrize("module_name", sorted(data_caches.CACHES))
def test_every_entry_names_a_cached_function(module_name):
    module = importlib.import_module(module_name)
    for name in data_caches.CACHES[module_name]:
        cached = getattr(module, name)
        assert callable(cached.cache_clear) and cached.cache_info().maxsize, (module_name, name)


def test_release_empties_the_loaded_caches():
    from trajforge.generators import values
    from trajforge.schemas import base

    values.normalise("Some  Text")
    base._key_bytes("some_key")
    assert values.normalise.cache_info().currsize and base._key_bytes.cache_info().currsize
    assert data_caches.release_generation_caches() >= 2
    assert values.normalise.cache_info().currsize == 0
    assert base._key_bytes.cache_info().currsize == 0
    assert values.normalise("Some  Text") == values.normalise.__wrapped__("Some  Text")


def test_modules_not_imported_are_left_alone(monkeypatch):
    name = "trajforge.generators.domains.search.tasks"
    monkeypatch.delitem(sys.modules, name, raising=False)
    data_caches.release_generation_caches()
    assert name not in sys.modules
