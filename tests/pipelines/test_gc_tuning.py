"""Build processes collect garbage less often (pipelines/gc_tuning.py); a process that chose
its own thresholds keeps them."""

from __future__ import annotations

import gc

import pytest

from trajforge.pipelines.gc_tuning import BUILD_THRESHOLDS, tune_gc


@pytest.fixture
def thresholds():
    saved = gc.get_threshold()
    yield
    gc.set_threshold(*saved)


def test_defaults_become_build_thresholds(thresholds):
    gc.set_threshold(700, 10, 10)
    assert tune_gc() is True
    assert gc.get_threshold() == BUILD_THRESHOLDS


def test_own_thresholds_are_kept(thresholds):
    gc.set_threshold(1234, 5, 6)
    assert tune_gc() is False
    assert gc.get_threshold() == (1234, 5, 6)


def test_young_cycles_are_still_collected(thresholds):
    """A rejection's exception holds its traceback, whose frame holds the exception: the young
    collections that still run free such cycles without a full collection."""
    tune_gc()
    gc.collect()

    class Node:
        pass

    def cycle():
        a, b = Node(), Node()
        a.other, b.other = b, a

    before = gc.get_count()
    for _ in range(100_000):
        cycle()
    alive = sum(isinstance(o, Node) for o in gc.get_objects())
    assert alive < 20_000, (before, gc.get_count(), alive)
