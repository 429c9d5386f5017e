"""Tasks: what the simulated user wants, grounded in a seeded world state, with a gold plan."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, StringConstraints

from trajforge.schemas.base import SCHEMA_VERSION, Record
from trajforge.schemas.persona import Persona
from trajforge.schemas.tools import Actor, _actor_field

#: Task types are declared by each domain (its `DomainVocabulary.task_types`, a closed set that
#: synthesis and task verification check); the schema only fixes their shape, so a new domain
#: needs no schema change.
TASK_TYPE_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"
TaskType = Annotated[str, StringConstraints(pattern=TASK_TYPE_PATTERN)]


class IntentCoordinates(Record):
    """Where a task sits in the persona x domain x task type x complexity grid."""

    persona_id: str
    domain: str
    task_types: tuple[TaskType, ...]  # one per sub-goal, in order
    complexity: int = Field(ge=1, le=5)


class UserScenario(Record):
    """What the simulated user knows, does not know, and was told to do."""

    reason_for_contact: str
    known_info: dict[str, str]  # label -> value the user may reveal when asked
    unknown_info: tuple[str, ...]  # things the user does not know and must not invent
    instructions: str


class StatePatch(Record):
    """A change applied to the seeded state before the task starts (path, JSON value)."""

    path: str
    value: Any


class InitialState(Record):
    seed: int
    patches: tuple[StatePatch, ...] = ()


class GoldAction(Record):
    """One step of the gold plan. `actor="user"`: a step the simulated user takes on its own
    tools when the agent asks (dual-control domains); the agent cannot make that call."""

    name: str
    arguments: dict[str, Any]
    actor: Actor = _actor_field()


class TaskVerification(Record):
    checks_run: tuple[str, ...]
    checks_passed: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return set(self.checks_run) == set(self.checks_passed)


class Task(Record):
    id: str
    schema_version: int = SCHEMA_VERSION
    domain: str
    intent: IntentCoordinates
    persona: Persona
    scenario: UserScenario
    initial_state: InitialState
    gold_actions: tuple[GoldAction, ...]
    expected_outputs: tuple[str, ...] = ()  # values the agent must tell the user
    gold_final_hash: str
    verification: TaskVerification | None = None

    ID_EXCLUDE = frozenset({"verification", "schema_version"})
