"""The fast paths of `bare_turns` (issue 30) decide as the plain computations do: the quick
bound is difflib's own `quick_ratio`, and `repeats` agrees with comparing `ratio()` alone."""

from __future__ import annotations

import difflib
import random

from trajforge.generators import bare_turns

WORDS = [
    "the",
    "order",
    "ship",
    "refund",
    "item",
    "card",
    "return",
    "your",
    "my",
    "please",
    "é",
    "ü",
    "2",
    "42",
    "#W1",
    "a",
    "an",
]


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randrange(0, 14)))


def test_quick_ratio_is_difflibs():
    rng = random.Random(3)
    for _ in range(2000):
        a, b = sentence(rng) or "x", sentence(rng) or "y"
        assert bare_turns._quick_ratio(a, b) == difflib.SequenceMatcher(None, a, b).quick_ratio()


def test_repeats_agrees_with_ratio_alone():
    rng = random.Random(4)
    for _ in range(3000):
        a = sentence(rng)
        b = a if rng.random() < 0.2 else sentence(rng)
        if rng.random() < 0.3 and a:  # a one-word edit of a long turn
            words = a.split()
            words[rng.randrange(len(words))] = rng.choice(WORDS)
            b = " ".join(words)
        x, y = bare_turns._plain(a), bare_turns._plain(b)
        plain = bool(x and y) and (
            x == y or len(x.split()) >= 6 and difflib.SequenceMatcher(None, x, y).ratio() >= 0.9
        )
        assert bare_turns.repeats(a, b or None) == (plain and bool(b)), (a, b)
