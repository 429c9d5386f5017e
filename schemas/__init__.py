"""Typed records passed between stages (pydantic v2, frozen, extra="forbid")."""

from schemas.base import SCHEMA_VERSION, Record, canonical_json, content_hash, derive_seed
from schemas.dataset import DatasetRecord, Split
from schemas.dead_letter import DeadLetter
from schemas.judgement import (
    AxisScore,
    CriterionResult,
    JudgeAxis,
    Judgement,
    Rejected,
    Rejection,
    RejectionReason,
    Stage,
)
from schemas.llm import (
    ChatRequest,
    ChatResponse,
    LLMClient,
    LLMError,
    SamplingParams,
    Usage,
)
from schemas.persona import Persona, TraitVector
from schemas.task import (
    GoldAction,
    InitialState,
    IntentCoordinates,
    StatePatch,
    Task,
    TaskType,
    TaskVerification,
    UserScenario,
)
from schemas.tools import Message, ToolCall, ToolKind, ToolSpec
from schemas.trajectory import (
    Cost,
    DiffEntry,
    GenerationMode,
    OutcomeResult,
    Provenance,
    Signatures,
    StepRecord,
    TerminationReason,
    Trajectory,
)

__all__ = [
    "SCHEMA_VERSION",
    "Record",
    "canonical_json",
    "content_hash",
    "derive_seed",
    "DatasetRecord",
    "DeadLetter",
    "Split",
    "AxisScore",
    "CriterionResult",
    "JudgeAxis",
    "Judgement",
    "Rejected",
    "Rejection",
    "RejectionReason",
    "Stage",
    "ChatRequest",
    "ChatResponse",
    "LLMClient",
    "LLMError",
    "SamplingParams",
    "Usage",
    "Persona",
    "TraitVector",
    "GoldAction",
    "InitialState",
    "IntentCoordinates",
    "StatePatch",
    "Task",
    "TaskType",
    "TaskVerification",
    "UserScenario",
    "Message",
    "ToolCall",
    "ToolKind",
    "ToolSpec",
    "Cost",
    "DiffEntry",
    "GenerationMode",
    "OutcomeResult",
    "Provenance",
    "Signatures",
    "StepRecord",
    "TerminationReason",
    "Trajectory",
]
