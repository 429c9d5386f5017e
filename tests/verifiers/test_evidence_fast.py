"""`Evidence`'s fast paths equal the plain checks they replaced: amounts made by two seen
amounts (bisection vs all pairs) and whole-token values (str.find vs one regex per value)."""

from __future__ import annotations

import random
import re

from trajforge.verifiers.text import Evidence, makes_by_two


def pairwise(target: float, seen: list[float]) -> bool:
    return any(
        abs(a + b - target) < 0.005 or abs(a - b - target) < 0.005 for a in seen for b in seen
    )


def test_amount_made_by_two_matches_the_pairwise_check():
    rng = random.Random(7)
    found = 0
    for _ in range(3000):
        seen = [
            round(rng.uniform(-300, 300), rng.choice((0, 1, 2))) for _ in range(rng.randint(0, 12))
        ]
        if seen and rng.random() < 0.5:  # often a real sum or difference
            a, b = rng.choice(seen), rng.choice(seen)
            target = round(rng.choice((a + b, a - b)), 2)
        else:
            target = round(rng.uniform(-600, 600), 2)
        target += rng.choice((0.0, 0.0, 0.004, -0.004, 0.0051, 0.006))  # near the tolerance
        expected = pairwise(target, seen)
        assert makes_by_two(target, seen) == expected, (target, seen)
        found += expected
    assert 300 < found < 2700  # both answers are exercised


def test_amounts_among_long_ids_match_the_pairwise_check():
    """Pairs with a number past 1e9 (an id read as a number) are checked plainly, the rest
    by bisection: together the same answer as every pair checked plainly."""
    rng = random.Random(11)
    found = 0
    for _ in range(2000):
        seen = [round(rng.uniform(-300, 300), 2) for _ in range(rng.randint(0, 10))]
        seen += [float(rng.choice((1, -1)) * rng.randint(10**9, 10**13)) for _ in range(3)]
        seen += [float(10**9 - rng.randint(1, 700)), float(10**9 + rng.randint(0, 700))]
        rng.shuffle(seen)
        a, b = rng.choice(seen), rng.choice(seen)
        target = rng.choice((round(a + b, 2), round(a - b, 2), round(rng.uniform(-600, 600), 2)))
        target += rng.choice((0.0, 0.004, 0.0051, 0.3))
        expected = pairwise(target, seen)
        assert makes_by_two(target, seen) == expected, (target, seen)
        found += expected
    assert 200 < found < 1800


def test_huge_numbers_take_the_plain_check():
    seen = [1234567890123.0, 7.0]
    assert makes_by_two(1234567890130.0, seen) == pairwise(1234567890130.0, seen) is True


def test_whole_token_support_matches_the_regex():
    evidence = Evidence()
    texts = ["Order #W1234567 shipped", "card credit_card_9 on file", "zip 02139, near_1"]
    for text in texts:
        evidence.add(text)
    for value in ("w1234567", "#w123", "credit_card_9", "card_9", "02139", "near_1", "1"):
        pattern = re.compile(rf"(?<![\w]){re.escape(value)}(?![\w])")
        plain = value in evidence._values or any(pattern.search(t) for t in evidence._texts)
        assert evidence.supports(value) == plain, value
