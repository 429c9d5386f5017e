"""The entity-preservation check of blueprint verbalisation.

Generated text must carry exact facts (ids, amounts, emails) and never invent new ones: a
rewrite is kept only if it states every required value and every id/amount/email-like token in
it is grounded in the facts the writer was given. What a value is and when text states it is
defined once, in `generators.values`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from trajforge.generators.values import entity_tokens, is_grounded, mentions_value


@dataclass(frozen=True)
class EntityCheck:
    """Verdict of the entity-preservation check for one utterance."""

    missing: tuple[str, ...]  # required values the text does not state
    invented: tuple[str, ...]  # entity-like tokens the text states that no fact contains

    @property
    def ok(self) -> bool:
        return not self.missing and not self.invented


def check_entities(text: str, required: Iterable[str], facts: Iterable[str]) -> EntityCheck:
    """Every required value is stated and every entity-like token is grounded in the facts."""
    required = tuple(required)
    facts_text = "\n".join([*facts, *required])
    missing = tuple(v for v in required if not mentions_value(text, v))
    invented = tuple(t for t in entity_tokens(text) if not is_grounded(t, facts_text))
    return EntityCheck(missing=missing, invented=invented)
