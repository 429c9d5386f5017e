"""Entity matching shared by blueprint verbalisation and the outcome verifier.

Generated text must carry exact facts (ids, amounts, emails) and never invent new ones. Both the
blueprint entity-preservation check and the outcome verifier ask the same two questions, so they
share one definition: does a text mention a value (numbers compared by value, so "54.2",
"54.20" and "$54.20" agree), and which id/amount-like tokens in a text are not grounded in the
facts the writer was given.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

#: Tokens that look like facts a writer could invent: order-style ids (#W123), amounts with
#: cents, emails, and long digit runs (zip codes, card endings, account numbers).
ENTITY_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"#[A-Za-z]*\d+[A-Za-z0-9]*"),
    re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),
    re.compile(r"\$?\d[\d,]*\.\d\d\b"),
    re.compile(r"(?<![\w.])\d{5,}(?![\w.])"),
)

_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def _as_number(text: str) -> Decimal | None:
    """The value of an amount-like string ("$1,054.20" -> 1054.20), or None if not a number."""
    cleaned = text.strip().lstrip("$").replace(",", "")
    if not re.fullmatch(r"-?\d+(?:\.\d+)?", cleaned):
        return None
    try:
        return Decimal(cleaned)
    except InvalidOperation:
        return None


def numbers_in(text: str) -> set[Decimal]:
    """Every number written in `text`, by value (commas and currency signs ignored)."""
    found = set()
    for match in _NUMBER.findall(text):
        value = _as_number(match)
        if value is not None:
            found.add(value)
    return found


def _squash(text: str) -> str:
    return " ".join(text.lower().split())


def mentions_value(text: str, value: str) -> bool:
    """True if `text` states `value`: case-insensitive substring, or the same number by value."""
    if not value.strip():
        return True
    if _squash(value) in _squash(text):
        return True
    number = _as_number(value)
    return number is not None and number in numbers_in(text)


def entity_tokens(text: str) -> list[str]:
    """Id/amount/email-like tokens in `text`, in order of appearance, without duplicates."""
    spans: list[tuple[int, str]] = []
    for pattern in ENTITY_PATTERNS:
        spans.extend((m.start(), m.group(0).rstrip(".,")) for m in pattern.finditer(text))
    seen: dict[str, None] = {}
    for _, token in sorted(spans):
        seen.setdefault(token, None)
    return list(seen)


def is_grounded(token: str, facts: str) -> bool:
    """True if an entity-like token appears in the facts text (numbers compared by value)."""
    if _squash(token) in _squash(facts):
        return True
    number = _as_number(token)
    return number is not None and number in numbers_in(facts)


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
