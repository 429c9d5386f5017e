"""Tasks: what the simulated user wants, grounded in a seeded world state, with a gold plan."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, StringConstraints, model_validator

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
    #: Per expected output, the indices of the gold actions of the sub-goal that asked for it
    #: (whose results show it). Closings state each output about the object those calls read,
    #: not the latest result that happens to hold the same value (two pending orders). Empty:
    #: not recorded (older records, domains that build tasks without sub-goals); closings then
    #: take the latest result holding the value.
    expected_sources: tuple[tuple[int, ...], ...] = ()
    gold_final_hash: str
    verification: TaskVerification | None = None

    #: `expected_sources` is an annotation derived from how the gold plan was assembled, not
    #: part of what the task is: leaving it out of the id keeps every task's id (and so every
    #: id-seeded phrasing choice) the same whether or not a record carries it.
    ID_EXCLUDE = frozenset({"verification", "schema_version", "expected_sources"})

    @model_validator(mode="after")
    def _sources_fit(self) -> Task:
        """`expected_sources` names one group of gold action indices per expected output."""
        if not self.expected_sources:
            return self
        if len(self.expected_sources) != len(self.expected_outputs):
            raise ValueError(
                f"expected_sources has {len(self.expected_sources)} entries for "
                f"{len(self.expected_outputs)} expected_outputs: give one tuple of gold action "
                "indices per expected output, or leave expected_sources empty"
            )
        bad = [i for group in self.expected_sources for i in group]
        bad = [i for i in bad if not 0 <= i < len(self.gold_actions)]
        if bad:
            raise ValueError(
                f"expected_sources names gold action indices {bad}, but the task has "
                f"{len(self.gold_actions)} gold_actions: use indices 0..{len(self.gold_actions) - 1}"
            )
        return self
