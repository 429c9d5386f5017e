"""Fixtures for the verifier tests; the builders live in trajectory_builders.py."""

import pytest
from trajectory_builders import Trajectory, cancel_convo, make_task


@pytest.fixture
def good_trajectory() -> Trajectory:
    return cancel_convo().build(make_task(expected_outputs=("54.90",)))
