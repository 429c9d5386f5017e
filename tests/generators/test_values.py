"""The one "states the value" rule and the shared value helpers."""

import pytest

from trajforge.generators.values import extract_values, leaf_strings, mentions_value, states_value


@pytest.mark.parametrize(
    "text, token",
    [
        ("I'd like to deposit 150 dollars", "150.0"),
        ("deposit 150.00 please", "150"),
        ("the total is $1,054.20.", "1054.2"),
        ("about 25.50, thanks", "25.5"),
        ("my order #W123 please", "#W123"),
        ("Ann Lee's account", "ann lee"),
    ],
)
def test_states_the_value(text, token):
    assert states_value(text, token)


@pytest.mark.parametrize(
    "text, token",
    [
        ("account #A1001", "1001"),  # a number inside an id is no number
        ("account #A1001", "1"),  # too short to mean anything
        ("order #W1234", "#W123"),  # whole tokens only
        ("deposit 150.5", "150"),
        ("code 1501", "150"),
        ("version 2.150", "150"),
    ],
)
def test_does_not_state_the_value(text, token):
    assert not states_value(text, token)


def test_leaf_strings_skip_bools_and_none():
    value = {"a": [1, 2.5, {"b": "x"}], "c": None, "d": True}
    assert list(leaf_strings(value)) == ["1", "2.5", "x"]


def test_mentions_value_by_substring_or_number():
    assert mentions_value("Refund: $54.20.", "54.2") and not mentions_value("54.21", "54.2")


def test_a_value_said_twice_is_blanked_both_times():
    """Every match is blanked before the id-like tokens are read, a repeated one too (the
    blanking is skipped only where a pattern found nothing): no `ann99` or `2024-01-05t10`."""
    text = "ann99@shop.com, again ann99@shop.com: 2024-01-05T10:30 and 2024-01-05T10:30."
    assert extract_values(text) == {"ann99@shop.com", "2024-01-05t10:30"}
