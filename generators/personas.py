"""Personas: seeded, fictional users with a structured trait vector and prose composed from it.

The trait vector is what coverage is counted over, so every one of its dimensions is sampled;
the prose (background, communication style) is composed from the traits so the simulated user's
behaviour follows the numbers rather than contradicting them. `persona_grid` spreads personas
evenly over every level of every dimension (a Latin-hypercube design), which uniform sampling
only does on average.
"""

from __future__ import annotations

import random
from typing import get_args

from trajforge.schemas import Persona, TraitVector
from trajforge.schemas.persona import EmotionalState, Level

LEVELS: tuple[Level, ...] = get_args(Level)
EMOTIONS: tuple[EmotionalState, ...] = get_args(EmotionalState)

#: Every sampled dimension of TraitVector with its closed set of values (language is fixed).
TRAIT_LEVELS: dict[str, tuple[str, ...]] = {
    name: EMOTIONS if name == "emotional_state" else LEVELS
    for name in TraitVector.model_fields
    if name != "language"
}

FIRST_NAMES = (
    "Aino", "Bram", "Celeste", "Dario", "Esme", "Fenna", "Gideon", "Hana", "Ilya", "Joss", "Kalani",
    "Lior", "Marisol", "Nuno", "Odile", "Pavel", "Rhea", "Soren", "Talia", "Ulric", "Vida", "Wilf",
    "Yara", "Zev",
)  # fmt: skip
LAST_NAMES = (
    "Arkwright", "Belmonte", "Carrow", "Delacroix-Finn", "Eberly", "Fairweather", "Galloway",
    "Holm", "Ingersoll", "Jurado", "Kestrel", "Lachance", "Marlowe", "Nakagawa", "Oyelaran",
    "Pemberton", "Quarles", "Rasmussen", "Sutcliffe", "Thorne",
)  # fmt: skip
OCCUPATIONS = (
    "a night-shift nurse", "a retired schoolteacher", "a freelance graphic designer",
    "a university student", "a small-bakery owner", "a long-haul truck driver",
    "a software tester", "a stay-at-home parent of three", "a hospital administrator",
    "a wedding photographer", "a bicycle mechanic", "a paralegal",
)  # fmt: skip
SITUATIONS = (
    "shops online mostly late in the evening",
    "is moving to a new apartment soon",
    "buys gifts for a large family",
    "is on a tight monthly budget",
    "travels often for work",
    "recently started shopping online",
    "keeps careful records of every purchase",
    "shares the account's orders with a partner",
)

_VERBOSITY = {
    "very_low": "answers in a few words",
    "low": "keeps messages short",
    "medium": "writes a sentence or two at a time",
    "high": "explains at length",
    "very_high": "writes long, rambling messages with side stories",
}
_FORMALITY = {
    "very_low": "very casual, uses slang",
    "low": "casual",
    "medium": "neutral in tone",
    "high": "polite and formal",
    "very_high": "stiffly formal",
}
_PATIENCE = {
    "very_low": "gets irritated at any delay",
    "low": "wants things done quickly",
    "medium": "tolerates a few questions",
    "high": "is patient",
    "very_high": "is endlessly patient",
}
_TECH = {
    "very_low": "does not know technical terms such as 'item id'",
    "low": "is unsure about online-shopping jargon",
    "medium": "is comfortable with everyday apps",
    "high": "is at ease with technical details",
    "very_high": "is an expert who notices any inconsistency",
}
_RECALL = {
    "very_low": "often misremembers details and says so when unsure, never inventing facts",
    "low": "is sometimes vague about details",
    "medium": "remembers most details",
    "high": "remembers details accurately",
    "very_high": "has every detail at hand",
}
_ASSERTIVE = {
    "very_low": "gives in easily",
    "low": "rarely pushes back",
    "medium": "states what they want clearly",
    "high": "insists on what they want",
    "very_high": "is pushy and repeats demands",
}
_EMOTION = {
    "calm": "calm",
    "anxious": "anxious and seeks reassurance",
    "frustrated": "frustrated by earlier problems",
    "angry": "angry about the situation",
    "cheerful": "cheerful and friendly",
    "confused": "a little confused about what to ask for",
}


def describe_traits(traits: TraitVector) -> str:
    """Communication style in prose, composed from the traits (what the user simulator reads)."""
    parts = [
        f"Is {_EMOTION[traits.emotional_state]}",
        _VERBOSITY[traits.verbosity],
        _FORMALITY[traits.formality],
        _PATIENCE[traits.patience],
        _ASSERTIVE[traits.assertiveness],
        _TECH[traits.tech_literacy],
        _RECALL[traits.recall_accuracy],
    ]
    if traits.time_pressure in ("high", "very_high"):
        parts.append("is in a hurry")
    if traits.trust_in_agent in ("very_low", "low"):
        parts.append("double-checks what the agent says")
    if traits.decisiveness in ("very_low", "low"):
        parts.append("hesitates before confirming")
    if traits.politeness in ("very_low", "low"):
        parts.append("can be curt")
    if traits.detail_orientation in ("high", "very_high"):
        parts.append("asks for exact amounts and details")
    return "; ".join(parts) + "."


def _persona(rng: random.Random, traits: TraitVector) -> Persona:
    name = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
    background = f"{name} is {rng.choice(OCCUPATIONS)} who {rng.choice(SITUATIONS)}."
    return Persona.create(
        name=name,
        traits=traits,
        background=background,
        communication_style=describe_traits(traits),
    )


def sample_persona(seed: int) -> Persona:
    """A persona with every trait dimension drawn uniformly; the same seed gives the same one."""
    rng = random.Random(seed)
    traits = TraitVector(**{dim: rng.choice(values) for dim, values in TRAIT_LEVELS.items()})
    return _persona(rng, traits)


def persona_grid(n: int, seed: int) -> tuple[Persona, ...]:
    """`n` personas where each level of each dimension appears floor(n/L) or ceil(n/L) times.

    Each dimension gets its own shuffled, balanced column of levels (a Latin-hypercube design),
    so coverage of every single trait level is guaranteed while combinations stay varied.
    """
    rng = random.Random(seed)
    columns: dict[str, list[str]] = {}
    for dim, values in TRAIT_LEVELS.items():
        column = [values[i % len(values)] for i in range(n)]
        rng.shuffle(column)
        columns[dim] = column
    return tuple(
        _persona(rng, TraitVector(**{dim: columns[dim][i] for dim in TRAIT_LEVELS}))
        for i in range(n)
    )
