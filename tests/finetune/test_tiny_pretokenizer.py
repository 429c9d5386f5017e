"""A tiny model's tokenizer cuts text where its family's real models do (finetune/tiny.py):
digits one by one for Qwen, in runs of up to three for Llama 3, the space apart, so a number
is the same tokens after a space and inside a quoted JSON value."""

from __future__ import annotations

import pytest

from trajforge.finetune.families import get_family
from trajforge.finetune.tiny import PRE_TOKENIZER_SPLITS, train_tokenizer

_CORPUS = [
    f'the balance is now {n}.{n % 97:02d}, "balance": "{n * 7}.{n % 89:02d}" for kq.zu{n}@ab.com'
    for n in range(300)
]


def _pieces(family: str) -> list[str]:
    pre = train_tokenizer(_CORPUS, get_family(family), 400).backend_tokenizer.pre_tokenizer
    return [piece for piece, _ in pre.pre_tokenize_str(' is 553.31, "balance": "1175.80"')]


@pytest.mark.parametrize("family", ["qwen2.5", "qwen3"])
def test_qwen_families_cut_every_digit_and_keep_the_space_apart(family):
    pieces = _pieces(family)
    assert pieces[pieces.index("Ġis") + 1 :][:7] == ["Ġ", "5", "5", "3", ".", "3", "1"]
    assert pieces[-8:-1] == ["1", "1", "7", "5", ".", "8", "0"]


def test_llama3_cuts_digits_in_runs_of_three():
    pieces = _pieces("llama3.1")
    assert pieces[1:5] == ["Ġ", "553", ".", "31"] and pieces[-5:-1] == ["117", "5", ".", "80"]


def test_a_number_is_the_same_tokens_after_a_space_and_inside_quotes():
    tokenizer = train_tokenizer(_CORPUS, get_family("qwen2.5"), 400)
    spaced = tokenizer.encode("is now 117.80.", add_special_tokens=False)
    quoted = tokenizer.encode('"balance": "117.80"', add_special_tokens=False)
    digits = tokenizer.encode("117.80", add_special_tokens=False)
    assert _contains(spaced, digits) and _contains(quoted, digits)


def test_a_family_without_a_known_split_keeps_gpt2_byte_level():
    assert "hermes" not in PRE_TOKENIZER_SPLITS
    assert "Ġ553" in _pieces("hermes")  # GPT-2's split glues the space to the digits


def _contains(sequence: list[int], part: list[int]) -> bool:
    return any(sequence[i : i + len(part)] == part for i in range(len(sequence)))
