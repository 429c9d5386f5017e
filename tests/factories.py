"""Shared test data: one baseline persona trait vector for hand-built personas."""

from trajforge.schemas import TraitVector

TRAITS = dict(
    patience="low",
    verbosity="low",
    tech_literacy="high",
    assertiveness="medium",
    formality="low",
    emotional_state="calm",
    detail_orientation="high",
    recall_accuracy="high",
    politeness="medium",
    decisiveness="high",
    trust_in_agent="medium",
    time_pressure="low",
)


def traits(**overrides: str) -> TraitVector:
    return TraitVector(**{**TRAITS, **overrides})
