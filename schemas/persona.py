"""Personas: who the simulated user is, as a structured trait vector plus prose."""

from __future__ import annotations

from typing import Literal

from trajforge.schemas.base import SCHEMA_VERSION, Record

Level = Literal["very_low", "low", "medium", "high", "very_high"]
EmotionalState = Literal["calm", "anxious", "frustrated", "angry", "cheerful", "confused"]
Language = Literal["en"]


class TraitVector(Record):
    """Named persona dimensions. Each is a closed set so coverage can be counted."""

    patience: Level
    verbosity: Level
    tech_literacy: Level
    assertiveness: Level
    formality: Level
    emotional_state: EmotionalState
    detail_orientation: Level
    recall_accuracy: Level  # honesty/accuracy of recall: low = misremembers, never invents
    politeness: Level
    decisiveness: Level
    trust_in_agent: Level
    time_pressure: Level
    language: Language = "en"


class Persona(Record):
    id: str
    schema_version: int = SCHEMA_VERSION
    name: str
    traits: TraitVector
    background: str
    communication_style: str
