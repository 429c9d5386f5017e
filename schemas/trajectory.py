"""Trajectories: one conversation between a simulated user and an agent over a tool simulator."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from trajforge.schemas.base import SCHEMA_VERSION, Record
from trajforge.schemas.difficulty import Difficulty
from trajforge.schemas.judgement import Judgement
from trajforge.schemas.sanitize import SafeText
from trajforge.schemas.task import Task
from trajforge.schemas.tools import Message, ToolCall

GenerationMode = Literal["rollout", "blueprint"]
TerminationReason = Literal[
    "user_stop",  # the user said ###STOP###
    "transfer",  # the agent transferred to a human (###TRANSFER###)
    "out_of_scope",  # the user said ###OUT-OF-SCOPE###
    "max_turns",
    "max_steps",
    "agent_error",  # the agent produced nothing usable repeatedly
    "llm_error",  # the LLM backend failed after retries
    "blueprint_complete",
]


class DiffEntry(Record):
    """One changed leaf of the world state: dotted path, value before, value after."""

    path: str
    before: Any = None
    after: Any = None


class StepRecord(Record):
    """One tool execution: what was called, what came back (or the error), what changed."""

    index: int
    turn: int
    call: ToolCall
    result: SafeText | None = None  # JSON text shown to the agent when the call succeeded
    error: SafeText | None = None  # "Error: ..." shown to the agent when it failed
    state_diff: tuple[DiffEntry, ...] = ()
    mutating: bool = False  # the tool is a write tool (whether or not it changed anything)


class Cost(Record):
    llm_calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0

    def __add__(self, other: Cost) -> Cost:
        return Cost(
            llm_calls=self.llm_calls + other.llm_calls,
            cached_calls=self.cached_calls + other.cached_calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            latency_s=self.latency_s + other.latency_s,
        )


#: The faults a noisy teacher (generators/noisy_teacher.py) can inject, one per class of
#: imperfect-teacher behaviour the quality gate is meant to catch.
FaultClass = Literal[
    "skip_confirmation",  # a write without asking the user first
    "act_after_refusal",  # a write right after the user declined it
    "other_users_record",  # a read of a record that belongs to another user
    "invented_value",  # the closing states an amount no tool or user turn showed
    "repeated_calls",  # the same read call made several times in a row
    "no_report",  # the closing reports neither the writes nor the requested outputs
]


class InjectedFault(Record):
    """One fault a noisy teacher injected on purpose: its class, the index the faulty message
    got in the conversation, and what it did (so a benchmark counts what the gate caught)."""

    fault: FaultClass
    message_index: int = Field(ge=0)
    detail: str = ""


class Provenance(Record):
    """Where a trajectory came from. Never holds API keys or endpoints' secrets.

    `injected_faults` is filled only by a noisy teacher (`rollout.agent: noisy`); an optional
    field with an empty default, so records written before it still load (schema_version 1)."""

    models: dict[str, str]  # role -> model name ("agent", "user", "judge", ...)
    seeds: dict[str, int]
    config_hash: str = ""
    trajforge_version: str = ""
    injected_faults: tuple[InjectedFault, ...] = ()


class OutcomeResult(Record):
    """Programmatic verdict of the outcome verifier, per component."""

    passed: bool
    state_match: bool
    outputs_communicated: bool
    termination_ok: bool
    expected_hash: str
    actual_hash: str
    missing_outputs: tuple[str, ...] = ()
    reason: str


class Signatures(Record):
    """Shortcut-resistance signatures of a trajectory (filled by verifiers)."""

    solving_tool_calls: int
    solving_tokens: int
    answer_hit_turns: dict[str, int] = Field(default_factory=dict)
    evidence_before_answer: bool = True


class VerbalisationStats(Record):
    """Blueprint mode: how many utterances the LLM wrote vs kept as their grounded drafts."""

    model_written: int = 0
    templated: int = 0


class Trajectory(Record):
    id: str
    schema_version: int = SCHEMA_VERSION
    task: Task
    mode: GenerationMode
    messages: tuple[Message, ...]
    steps: tuple[StepRecord, ...]
    termination: TerminationReason
    final_state_hash: str
    outcome: OutcomeResult | None = None
    judgements: tuple[Judgement, ...] = ()
    signatures: Signatures | None = None
    cost: Cost = Cost()
    provenance: Provenance
    verbalisation: VerbalisationStats | None = None  # blueprint mode only
    difficulty: Difficulty | None = None  # rollout.attempts > 1: the task's pass rate
    #: Dual-control domains: the simulated user's executions of its own tools (their calls
    #: have actor "user"; `index` counts these alone). Kept apart from `steps`, which are the
    #: agent's actions every filter and policy rule reads; left out of the JSON when empty.
    user_steps: tuple[StepRecord, ...] = Field(default=(), exclude_if=lambda v: not v)

    ID_EXCLUDE = frozenset(
        {
            "outcome",
            "judgements",
            "signatures",
            "cost",
            "schema_version",
            "provenance",
            "verbalisation",
            "difficulty",
        }
    )

    def tool_calls(self) -> list[ToolCall]:
        """The agent's tool calls, in order (a user's own tool calls are not among them)."""
        return [c for m in self.messages if m.role == "assistant" for c in m.tool_calls]

    def world_calls(self) -> list[ToolCall]:
        """Every call that ran on the world, both actors', in the order they ran: what the
        outcome check replays (the same as `tool_calls` where the user has no tools)."""
        return [
            c
            for m in self.messages
            if m.role == "assistant" or (m.role == "user" and m.by_user_tools)
            for c in m.tool_calls
        ]
