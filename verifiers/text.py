"""Evidence and conversation text for the filters and dedup.

The shortcut filters all ask the same question: "did this value appear somewhere before?".
What a *value* is (ids, emails, amounts, dates, zips: tokens that carry facts, not prose) and
the one normalisation live in `generators.values`, shared with blueprint verbalisation, so that
`#W1234567`, `54.90` and `54.9` compare equal wherever they occur (agent text, tool JSON, user
turns). This module adds what only the verifiers need: values passed as tool arguments, the
running `Evidence` of a speaker, and a conversation as one normalised text.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterable
from typing import Any

from trajforge.generators.values import (
    amount_key,
    extract_values,
    leaf_strings,
    normalise,
    whole_token_in,
)
from trajforge.schemas import Message, Trajectory

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def argument_values(arguments: dict[str, Any]) -> set[str]:
    """Values passed in tool-call arguments (numbers too: an amount argument is a fact)."""
    values: set[str] = set()
    for leaf in leaf_strings(arguments):
        values |= extract_values(leaf)
        if isinstance(leaf, str) and re.fullmatch(r"-?\d+\.\d+", leaf):
            values.add("amount:" + amount_key(leaf))
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
        numbers = [float(n) for n in _NUMBER.findall(text)]
        # An amount said without its sign ("a refund of $7.70") is the -7.7 a tool returned.
        self._numbers |= {amount_key(abs(n)) for n in numbers} | {amount_key(n) for n in numbers}

    def supports(self, value: str) -> bool:
        if value in self._values:
            return True
        if value.startswith("amount:"):
            return self._supports_amount(value.removeprefix("amount:"))
        # Whole-token occurrence: `w1234567` is supported by `#W1234567`, `#w123` is not.
        return any(whole_token_in(value, t) for t in self._texts)

    def _supports_amount(self, key: str) -> bool:
        if key in self._numbers:
            return True
        seen = [float(n) for n in self._numbers]
        if len(seen) > 400:  # keep the pairwise check bounded on very long conversations
            return False
        return makes_by_two(float(key), seen)


#: Beyond this magnitude float sums lose the cent, and the search below could miss a pair the
#: plain pairwise check finds; pairs with such a number (long ids read as numbers) take the
#: plain check.
_EXACT_BELOW = 1e9


def _pairwise(target: float, firsts: list[float], seconds: list[float]) -> bool:
    return any(
        abs(a + b - target) < 0.005 or abs(a - b - target) < 0.005 for a in firsts for b in seconds
    )


def makes_by_two(target: float, seen: list[float]) -> bool:
    """`any(|a + b - target| < 0.005 or |a - b - target| < 0.005 for a, b in seen x seen)`,
    in n log n instead of n^2: for each `a`, only the `b` within 0.006 of `target - a` or of
    `a - target` can satisfy it (the extra 0.001 covers float rounding), found by bisection in
    the sorted values, and each candidate is checked with the plain predicate. Pairs with a
    number past `_EXACT_BELOW` are checked plainly, the others still by bisection (one long id
    in a conversation made every pair plain: ~1% of a blueprint build's CPU, issue 30)."""
    if abs(target) >= _EXACT_BELOW:
        return _pairwise(target, seen, seen)
    big = [x for x in seen if abs(x) >= _EXACT_BELOW]
    if big:
        small = [x for x in seen if not abs(x) >= _EXACT_BELOW]
        return (
            _pairwise(target, big, seen)
            or _pairwise(target, small, big)
            or makes_by_two(target, small)
        )
    ordered = sorted(seen)
    for a in seen:
        for centre in (target - a, a - target):
            i = bisect.bisect_left(ordered, centre - 0.006)
            while i < len(ordered) and ordered[i] <= centre + 0.006:
                b = ordered[i]
                if abs(a + b - target) < 0.005 or abs(a - b - target) < 0.005:
                    return True
                i += 1
    return False


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
