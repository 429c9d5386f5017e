"""One wheel venv and one worker pool for every remote-worker test of a session (building the
wheel and starting the pool cost ~20 s)."""

from __future__ import annotations

import pytest

from tests.remote.wheel_env import build_dists, stage_copy_set, wheel_venv
from tests.remote.worker_pool import WorkerPool


@pytest.fixture(scope="session")
def wheel_python(tmp_path_factory):
    root = tmp_path_factory.mktemp("wheel")
    wheel, _ = build_dists(stage_copy_set(root / "src"), root / "dist")
    return wheel_venv(wheel, root / "venv")


@pytest.fixture(scope="session")
def worker_pool(wheel_python, tmp_path_factory):
    pool = WorkerPool(wheel_python, tmp_path_factory.mktemp("pool"))
    yield pool
    pool.stop()
