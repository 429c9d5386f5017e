"""Fixtures over the shipped toy domain (tests/toy_domain.py)."""

from __future__ import annotations

import pytest

from tests.toy_domain import TOY, make_task
from trajforge.generators.domains.toy import ToyDomain
from trajforge.schemas import Provenance, Task


@pytest.fixture
def toy_domain() -> ToyDomain:
    return TOY


@pytest.fixture
def toy_task() -> Task:
    return make_task()


@pytest.fixture
def provenance() -> Provenance:
    return Provenance(models={"agent": "scripted", "user": "scripted"}, seeds={"rollout": 1})
