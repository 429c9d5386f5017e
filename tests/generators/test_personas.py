"""Personas: deterministic per seed, every trait dimension sampled, even coverage from the grid."""

from __future__ import annotations

from collections import Counter

from trajforge.generators.personas import (
    TRAIT_LEVELS,
    describe_traits,
    persona_grid,
    sample_persona,
)
from trajforge.schemas import Persona, TraitVector


def test_sample_persona_is_deterministic_and_varies_with_seed():
    assert sample_persona(7) == sample_persona(7)
    assert len({sample_persona(s).id for s in range(50)}) == 50


def test_every_trait_dimension_is_sampled():
    assert set(TRAIT_LEVELS) == set(TraitVector.model_fields) - {"language"}
    seen: dict[str, set[str]] = {dim: set() for dim in TRAIT_LEVELS}
    for seed in range(300):
        traits = sample_persona(seed).traits
        for dim in TRAIT_LEVELS:
            seen[dim].add(getattr(traits, dim))
    assert seen == {dim: set(levels) for dim, levels in TRAIT_LEVELS.items()}


def test_persona_is_a_valid_record_with_prose_from_traits():
    p = sample_persona(11)
    assert Persona.from_json(p.to_json()) == p
    assert p.name in p.background
    assert p.communication_style == describe_traits(p.traits)


def test_communication_style_follows_traits():
    base = sample_persona(1).traits
    terse = base.model_copy(
        update={"verbosity": "very_low", "time_pressure": "very_high", "emotional_state": "angry"}
    )
    chatty = base.model_copy(
        update={"verbosity": "very_high", "time_pressure": "very_low", "emotional_state": "calm"}
    )
    assert "answers in a few words" in describe_traits(terse)
    assert "in a hurry" in describe_traits(terse) and "angry" in describe_traits(terse)
    assert "long, rambling" in describe_traits(chatty)
    assert "in a hurry" not in describe_traits(chatty)


def test_persona_grid_balances_every_level_of_every_dimension():
    grid = persona_grid(30, seed=4)
    assert grid == persona_grid(30, seed=4)
    assert len({p.id for p in grid}) == 30
    for dim, levels in TRAIT_LEVELS.items():
        counts = Counter(getattr(p.traits, dim) for p in grid)
        assert set(counts) == set(levels), dim
        assert max(counts.values()) - min(counts.values()) <= 1, (dim, counts)


def test_persona_grid_levels_are_not_locked_together():
    grid = persona_grid(25, seed=9)
    pairs = {(p.traits.patience, p.traits.verbosity) for p in grid}
    assert len(pairs) > 5  # independent shuffles per dimension, not one diagonal
