"""Finished runs shared by the dataset-product tests (views, card, publish, show, report).

Built once per session on the scripted backend: `built_run` keeps rows in train and golden
and has judge scores; `empty_run` keeps nothing (a rollout whose agent solves no task).
"""

import sys

import pytest

from trajforge.pipelines import allocators
from trajforge.pipelines.cli import main

BUILT = """
name: products
domain: retail
num_tasks: 12
seed: 3
mode: blueprint
roles:
  agent: {kind: scripted, responder: blueprint}
  judge: {kind: scripted, responder: judge_approves}
quality: {judge: {enabled: true}}
concurrency: {max_in_flight: 8}
output:
  num_shards: 2
  splits: {train: 0.75, validation: 0.0, golden: 0.25}
"""

EMPTY = """
name: empty
domain: retail
num_tasks: 3
mode: rollout
roles:
  agent: {kind: scripted, responder: rollout_dry_run}
"""


def _build(tmp_path_factory, name: str, config: str, expected_exit: int = 0):
    base = tmp_path_factory.mktemp(name)
    (base / "build.yaml").write_text(config)
    out = base / "run"
    code = main(
        ["build", "--config", str(base / "build.yaml"), "--output", str(out), "--no-progress"]
    )
    assert code == expected_exit
    return out


@pytest.fixture(scope="session", autouse=True)
def fresh_datasets_cache(tmp_path_factory):
    """`load_dataset(local_dir)` caches by the directory's name and file names, so two runs
    both called `run` would share a cache entry; every session gets its own cache."""
    import datasets

    old = datasets.config.HF_DATASETS_CACHE
    datasets.config.HF_DATASETS_CACHE = tmp_path_factory.mktemp("hf-datasets-cache")
    yield
    datasets.config.HF_DATASETS_CACHE = old


@pytest.fixture(scope="session")
def built_run(tmp_path_factory):
    return _build(tmp_path_factory, "built", BUILT)


@pytest.fixture(scope="session")
def empty_run(tmp_path_factory):
    """A build that keeps nothing fails (exit 1, no _SUCCESS) but still writes its manifest,
    card and report, so a user can see why."""
    out = _build(tmp_path_factory, "empty", EMPTY, expected_exit=1)
    assert not (out / "_SUCCESS").exists()
    return out


@pytest.fixture
def off_linux(monkeypatch):
    """This process seen as macOS: no glibc (`allocators.glibc`, whose cached handle is
    cleared before and after)."""
    allocators.glibc.cache_clear()
    monkeypatch.setattr(sys, "platform", "darwin")
    yield
    allocators.glibc.cache_clear()
