"""Text normalisation and value extraction shared by the filters and dedup.

The shortcut filters all ask the same question: "did this value appear somewhere before?". They
need one definition of what a *value* is (ids, emails, amounts, dates, zips: tokens that carry
facts, not prose) and one normalisation, so that `#W1234567`, `54.90` and `54.9` compare equal
wherever they occur (agent text, tool JSON, user turns).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Iterator
from typing import Any

from trajforge.schemas import Message, Trajectory

_EMAIL = re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)+")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?\b")
_AMOUNT = re.compile(
    r"(?<![\w.])\$?\d{1,3}(?:,\d{3})+(?:\.\d{2})?(?![\w])|(?<![\w.])\$?\d+\.\d{2}(?![\d])"
)
_TOKEN = re.compile(r"#?[A-Za-z0-9_][A-Za-z0-9_\-]*")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
# Short numbers, ranges and counted units are prose ("2 items", "3rd", "24h", "5-7 days"),
# not facts to look up.
_PROSE_NUMBER = re.compile(
    r"^\d{1,3}(?:st|nd|rd|th|s|am|pm|h|x|min|mins|days?)?(?:-\d{1,3}(?:st|nd|rd|th|s|am|pm|h)?)*$",
    re.IGNORECASE,
)
_WS = re.compile(r"\s+")


def normalise(text: str) -> str:
    """NFKC, lower case, collapsed whitespace: the form every comparison uses."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", text)).strip().lower()


def _amount_key(raw: str) -> str:
    """`$1,234.50` -> `1234.5`: amounts compare as numbers, whatever their formatting."""
    return _float_key(float(raw.replace("$", "").replace(",", "")))


def _float_key(value: float) -> str:
    return repr(round(value, 2))


def extract_values(text: str) -> set[str]:
    """Fact-carrying values in `text`, normalised: emails, dates, amounts, tokens with digits.

    Amounts come back as `amount:<float>` so `54.90` in prose matches `54.9` in tool JSON.
    Tokens with digits cover ids (`#W1234567`, `credit_card_123`, `sara_doe_1234`), item ids
    and zip codes; short bare numbers (quantities, ordinals) are ignored as prose.
    """
    values: set[str] = set()
    rest = text
    for pattern, key in ((_EMAIL, str.lower), (_DATE, str.lower), (_AMOUNT, _amount_key)):
        for m in pattern.finditer(rest):
            values.add(("amount:" if pattern is _AMOUNT else "") + key(m.group(0)))
        rest = pattern.sub(" ", rest)
    for m in _TOKEN.finditer(rest):
        token = m.group(0).strip("-_")
        if any(c.isdigit() for c in token) and not _PROSE_NUMBER.match(token.lstrip("#")):
            values.add(token.lower())
    return values


def leaf_strings(value: Any) -> Iterator[str]:
    """Every scalar leaf of a JSON-like value, as text (tool-call arguments are nested dicts)."""
    if isinstance(value, dict):
        for v in value.values():
            yield from leaf_strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from leaf_strings(v)
    elif value is not None and not isinstance(value, bool):
        yield str(value)


def argument_values(arguments: dict[str, Any]) -> set[str]:
    """Values passed in tool-call arguments (numbers too: an amount argument is a fact)."""
    values: set[str] = set()
    for leaf in leaf_strings(arguments):
        values |= extract_values(leaf)
        if isinstance(leaf, str) and re.fullmatch(r"-?\d+\.\d+", leaf):
            values.add("amount:" + _float_key(float(leaf)))
    return values


class Evidence:
    """What a speaker had seen so far: normalised text plus the values and numbers in it.

    `supports(value)` is true when the value occurs verbatim, or is an amount equal to one seen,
    or to the sum/difference of two seen amounts (agents legitimately total a refund).
    """

    def __init__(self) -> None:
        self._texts: list[str] = []
        self._values: set[str] = set()
        self._numbers: set[str] = set()

    def add(self, text: str | None) -> None:
        if not text:
            return
        self._texts.append(normalise(text))
        self._values |= extract_values(text)
        self._numbers |= {_float_key(float(n)) for n in _NUMBER.findall(text)}

    def supports(self, value: str) -> bool:
        if value in self._values:
            return True
        if value.startswith("amount:"):
            return self._supports_amount(value.removeprefix("amount:"))
        # Whole-token occurrence: `w1234567` is supported by `#W1234567`, `#w123` is not.
        pattern = re.compile(rf"(?<![\w]){re.escape(value)}(?![\w])")
        return any(pattern.search(t) for t in self._texts)

    def _supports_amount(self, key: str) -> bool:
        if key in self._numbers:
            return True
        target = float(key)
        seen = [float(n) for n in self._numbers]
        if len(seen) > 400:  # keep the pairwise check bounded on very long conversations
            return False
        return any(
            abs(a + b - target) < 0.005 or abs(a - b - target) < 0.005 for a in seen for b in seen
        )


def message_text(message: Message) -> str:
    """A message as the text a reader sees: content plus its tool calls (name and arguments)."""
    parts = [message.content or ""]
    parts += [f"{c.name}({json.dumps(c.arguments, sort_keys=True)})" for c in message.tool_calls]
    return " ".join(p for p in parts if p)


def conversation_text(trajectory: Trajectory, roles: Iterable[str] | None = None) -> str:
    """The whole conversation as one normalised text (`role: text` lines), for hashing and dedup.

    The system prompt is left out by default: it is shared by every trajectory of a domain and
    would make unrelated conversations look alike.
    """
    keep = set(roles) if roles is not None else {"user", "assistant", "tool"}
    lines = [f"{m.role}: {message_text(m)}" for m in trajectory.messages if m.role in keep]
    return normalise("\n".join(lines))
