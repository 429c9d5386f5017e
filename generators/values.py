"""Values in text: the one definition of what a fact-carrying value is and when text states it.

Blueprint verbalisation (required entities kept, none invented), the blueprint plan (which call
needs which known-info value), the outcome verifier (expected outputs communicated) and the
shortcut filters (was this value seen before it was used?) all ask about values in text. They
share these helpers, so `54.2`, `54.20` and `$54.20` agree everywhere:

- `leaf_strings`: every scalar leaf of a JSON-like value (tool-call arguments), as text.
- `mentions_value(text, value)`: the one "states the value" rule (numbers by value, other
  values as whole tokens), and `states_value`, its form for matching call arguments.
- `entity_tokens` / `is_grounded`: id/amount/email-like tokens a writer could invent.
- `extract_values`: the normalised values (emails, dates, amounts, tokens with digits) the
  shortcut filters compare across messages, tool results and arguments.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from typing import Any

_WS = re.compile(r"\s+")


@functools.lru_cache(maxsize=4096)
def normalise(text: str) -> str:
    """NFKC, lower case, collapsed whitespace: the form every comparison uses.

    Cached: several filters normalise the same messages and tool outputs of a trajectory."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", text)).strip().lower()


def leaf_strings(value: Any) -> Iterator[str]:
    """Every scalar leaf of a JSON-like value, as text (bools and None carry no fact)."""
    if isinstance(value, dict):
        for v in value.values():
            yield from leaf_strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from leaf_strings(v)
    elif value is not None and not isinstance(value, bool):
        yield str(value)


# ---------------------------------------------------------------------------------------------
# Numbers

_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
#: A number standing as a token of its own: not part of an id (`#A1001`) or a longer number.
_WHOLE_NUMBER = re.compile(r"(?<![\w.,])(-?)\$?(\d[\d,]*(?:\.\d+)?)(?!\w|[.,]\d)")
_PLAIN_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def as_number(text: str) -> Decimal | None:
    """The value of an amount-like string ("$1,054.20" -> 1054.20), or None if not a number."""
    cleaned = text.strip().lstrip("$").replace(",", "")
    if not _PLAIN_NUMBER.fullmatch(cleaned):
        return None
    try:
        return Decimal(cleaned)
    except InvalidOperation:
        return None


def numbers_in(text: str) -> set[Decimal]:
    """Every number written in `text`, by value (commas and currency signs ignored)."""
    found = set()
    for match in _NUMBER.findall(text):
        value = as_number(match)
        if value is not None:
            found.add(value)
    return found


def whole_numbers_in(text: str) -> set[Decimal]:
    """Numbers that stand as tokens of their own in `text` (none from inside ids), by value."""
    found = set()
    for sign, digits in _WHOLE_NUMBER.findall(text):
        value = as_number(sign + digits)
        if value is not None:
            found.add(value)
    return found


def mentions_value(text: str, value: str) -> bool:
    """The one "states the value" rule: does `text` state `value`? (An empty value always is.)

    - A numeric value compares by value with the numbers that stand alone in `text`: `150.0` is
      stated by "150 dollars", `54.2` by "$54.20."; a number inside an id or a longer number is
      not that number (`1001` is not stated by `#A1001`, `54.2` not by `54.21`).
    - Any other value must occur as a whole token, case-insensitively and with whitespace
      collapsed: `#W12` is not stated by `#W123`, `Ann Lee` is stated by "ann  lee's order".
    """
    value = _squash(value)
    if not value:
        return True
    number = as_number(value)
    if number is not None:
        return number in _whole_numbers(text)
    return whole_token_in(value, _squash(text))


def whole_token_in(token: str, text: str) -> bool:
    r"""`re.search(rf"(?<!\w){re.escape(token)}(?!\w)", text)` without a regex per token.

    The blueprint plan and the filters ask this of thousands of distinct values per build: a
    pattern each overflowed `re`'s cache, so most calls compiled one. A word character is what
    `\w` matches (`str.isalnum()` or `_`, checked over every code point in the tests).
    """
    start = text.find(token)
    while start >= 0:
        end = start + len(token)
        if (start == 0 or not _is_word(text[start - 1])) and (
            end == len(text) or not _is_word(text[end])
        ):
            return True
        start = text.find(token, start + 1)
    return False


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def states_value(text: str, token: str) -> bool:
    """`mentions_value` for matching call arguments: tokens under 2 characters never count (a
    quantity `1` or a flag `y` would match innocent text)."""
    return len(token.strip()) >= 2 and mentions_value(text, token)


@functools.lru_cache(maxsize=4096)
def _squash(text: str) -> str:
    """Cached: the same tool outputs and known-info values are matched against many tokens."""
    return " ".join(text.lower().split())


@functools.lru_cache(maxsize=4096)
def _whole_numbers(text: str) -> frozenset[Decimal]:
    return frozenset(whole_numbers_in(text))


# ---------------------------------------------------------------------------------------------
# Entity-like tokens (what a writer could invent)

#: Tokens that look like facts a writer could invent: hash-prefixed ids (#W123), amounts with
#: cents, emails, and long digit runs (zip codes, card endings, account numbers).
ENTITY_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"#[A-Za-z]*\d+[A-Za-z0-9]*"),
    re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),
    re.compile(r"\$?\d[\d,]*\.\d\d\b"),
    re.compile(r"(?<![\w.])\d{5,}(?![\w.])"),
)


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
    number = as_number(token)
    return number is not None and number in _numbers(facts)


@functools.lru_cache(maxsize=1024)
def _numbers(facts: str) -> frozenset[Decimal]:
    """Cached: one utterance's facts text is checked for each of its tokens."""
    return frozenset(numbers_in(facts))


# ---------------------------------------------------------------------------------------------
# Normalised values (what the shortcut filters compare)

_EMAIL = re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)+")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?\b")
_AMOUNT = re.compile(
    r"(?<![\w.])\$?\d{1,3}(?:,\d{3})+(?:\.\d{2})?(?![\w])|(?<![\w.])\$?\d+\.\d{2}(?![\d])"
)
_TOKEN = re.compile(r"#?[A-Za-z0-9_][A-Za-z0-9_\-]*")
#: The `_TOKEN` matches that hold a digit, and only those: a token is a maximal run of
#: `[A-Za-z0-9_-]`, so the lookahead sees exactly its own characters, and a run without a digit
#: has no suffix with one (no token is skipped or split). Long tool outputs are mostly words:
#: the regex skips them instead of a Python loop testing each one.
_TOKEN_WITH_DIGIT = re.compile(r"#?(?=[A-Za-z0-9_\-]*[0-9])[A-Za-z0-9_][A-Za-z0-9_\-]*")
# Short numbers, ranges and counted units are prose ("2 items", "3rd", "24h", "5-7 days"),
# not facts to look up.
_PROSE_NUMBER = re.compile(
    r"^\d{1,3}(?:st|nd|rd|th|s|am|pm|h|x|min|mins|days?)?(?:-\d{1,3}(?:st|nd|rd|th|s|am|pm|h)?)*$",
    re.IGNORECASE,
)


def amount_key(value: float | Decimal | str) -> str:
    """`$1,234.50` -> `1234.5`: amounts compare as numbers, whatever their formatting."""
    if isinstance(value, str):
        value = float(value.replace("$", "").replace(",", ""))
    return repr(round(float(value), 2))


def extract_values(text: str) -> set[str]:
    """Fact-carrying values in `text`, normalised: emails, dates, amounts, tokens with digits.

    Amounts come back as `amount:<float>` so `54.90` in prose matches `54.9` in tool JSON.
    Tokens with digits cover ids (`#W1234567`, `credit_card_123`, `sara_doe_1234`), item ids
    and zip codes; short bare numbers (quantities, ordinals) are ignored as prose.
    """
    return set(_extract_values(text))  # a fresh set: callers add to it


@functools.lru_cache(maxsize=8192)
def _extract_values(text: str) -> frozenset[str]:
    """Several filters read the same messages (a tool output is evidence for the signatures,
    the hallucination and the grounding checks): each text is scanned once."""
    values: set[str] = set()
    rest = text
    for pattern, key in ((_EMAIL, str.lower), (_DATE, str.lower), (_AMOUNT, amount_key)):
        found = False
        for m in pattern.finditer(rest):
            found = True
            values.add(("amount:" if pattern is _AMOUNT else "") + key(m.group(0)))
        if found:  # nothing found, nothing to blank (the blanking was a fifth of its CPU)
            rest = pattern.sub(" ", rest)
    for token in _TOKEN_WITH_DIGIT.findall(rest):
        token = token.strip("-_")  # strips no digit: the token still holds one
        if not _PROSE_NUMBER.match(token.lstrip("#")):
            values.add(token.lower())
    return frozenset(values)
