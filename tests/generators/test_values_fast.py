"""The regex-free and cached value matchers agree with the regex definitions they replace."""

from __future__ import annotations

import random
import re

import pytest

from trajforge.generators import values
from trajforge.generators.values import (
    _AMOUNT,
    _DATE,
    _EMAIL,
    _PROSE_NUMBER,
    _TOKEN,
    amount_key,
    extract_values,
    is_grounded,
    mentions_value,
    numbers_in,
    whole_numbers_in,
    whole_token_in,
)

ALPHABET = "ab w1_-.#$,@é²٣ Ä\t\n"  # word and non-word characters, Unicode digits included


def _regex_token_in(token: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(token)}(?!\w)", text) is not None


def _regex_mentions(text: str, value: str) -> bool:
    """`mentions_value` as it was: a compiled pattern per value, nothing cached."""
    value = " ".join(value.lower().split())
    if not value:
        return True
    number = values.as_number(value)
    if number is not None:
        return number in whole_numbers_in(text)
    return _regex_token_in(value, " ".join(text.lower().split()))


def _reference_extract(text: str) -> set[str]:
    """`extract_values` as it was, with `str.isdigit` over each token."""
    found: set[str] = set()
    rest = text
    for pattern, key in ((_EMAIL, str.lower), (_DATE, str.lower), (_AMOUNT, amount_key)):
        for m in pattern.finditer(rest):
            found.add(("amount:" if pattern is _AMOUNT else "") + key(m.group(0)))
        rest = pattern.sub(" ", rest)
    for m in _TOKEN.finditer(rest):
        token = m.group(0).strip("-_")
        if any(c.isdigit() for c in token) and not _PROSE_NUMBER.match(token.lstrip("#")):
            found.add(token.lower())
    return found


def _random_text(rng: random.Random, size: int) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(size))


@pytest.mark.parametrize("seed", range(5))
def test_whole_token_in_matches_the_regex(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(2000):
        text = _random_text(rng, rng.randint(0, 24))
        token = _random_text(rng, rng.randint(1, 3))
        assert whole_token_in(token, text) == _regex_token_in(token, text), (token, text)


def test_whole_token_in_cases() -> None:
    assert whole_token_in("#w12", "order #w12.")
    assert not whole_token_in("#w12", "order #w123")
    assert whole_token_in("w12", "a w12 w123")  # the second occurrence is not whole, the first is
    assert whole_token_in("w12", "w123 w12")  # a later occurrence is found after a partial one
    assert not whole_token_in("ann", "joann_x ann_")


@pytest.mark.parametrize("seed", range(3))
def test_mentions_value_matches_the_regex_definition(seed: int) -> None:
    rng = random.Random(100 + seed)
    words = ["#W1001", "$54.20", "54.2", "1,054.20", "Ann Lee", "ann  lee's", "1001", "W12"]
    words += ["anne", "zip 90210", "x@y.com", "é1", "54.21", "-7.70", "7.7"]
    for _ in range(1500):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(0, 5)))
        value = rng.choice(words)
        assert mentions_value(text, value) == _regex_mentions(text, value), (value, text)


@pytest.mark.parametrize("seed", range(3))
def test_extract_values_matches_the_reference(seed: int) -> None:
    rng = random.Random(200 + seed)
    words = ["#W1001", "$54.20", "2024-05-01", "a@b.co", "3rd", "5-7", "credit_card_12", "x²"]
    words += ["1,234", "24h", "order", "٣4", "_9_", "-12-", "W١2"]
    for _ in range(1500):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(0, 6)))
        assert extract_values(text) == _reference_extract(text), text


def test_cached_results_are_not_shared_mutable_state() -> None:
    first = extract_values("order #W1001")
    first.add("changed")
    assert extract_values("order #W1001") == {"#w1001"}
    assert is_grounded("$54.20", "total 54.2") and is_grounded("54.2", "total 54.2")
    assert numbers_in("total 54.2") == {values.Decimal("54.2")}


@pytest.mark.parametrize("seed", range(3))
def test_extract_values_matches_the_reference_on_random_characters(seed: int) -> None:
    rng = random.Random(300 + seed)
    alphabet = "aZ09_-#.,$@ :²١x"
    for _ in range(3000):
        text = _random_text_of(rng, alphabet, rng.randint(0, 30))
        assert extract_values(text) == _reference_extract(text), text


def _random_text_of(rng: random.Random, alphabet: str, size: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(size))
