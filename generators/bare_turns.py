"""Degenerate turns: a message that is only a name, only a value, or the previous turn again.

A small model asked to voice "Right, I'm Dario Marlowe." often returns just "Dario Marlowe,";
asked for an order id it returns the id alone, or it echoes the other speaker's last message.
Such a row teaches nothing a chat model should say, and the readability measure undercounts the
repetition it causes. `is_bare` says whether a text has any words beyond names and values;
`repeats` whether it says the previous turn again. The verbaliser refuses a rewrite that is
bare where its draft was not (the draft is kept), and the `degenerate_turns` filter refuses a
record holding one.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from trajforge.generators.value_grammar import typed_values
from trajforge.generators.values import entity_tokens

_WORD = re.compile(r"[^\W\d_]+")


def _without(text: str, spans: Iterable[str]) -> str:
    for span in sorted({s for s in spans if s}, key=len, reverse=True):
        text = re.sub(re.escape(span), " ", text, flags=re.IGNORECASE)
    return text


def is_bare(text: str, names: Iterable[str] = ()) -> bool:
    """The text holds no word besides the given names and its values (ids, emails, amounts,
    addresses, dates): "Dario Marlowe,", "#W1234567.", "ann@example.com"."""
    if not text or not text.strip():
        return True
    parts = [p for n in names for p in (n, *n.split())]
    values = [*entity_tokens(text), *(v.text for v in typed_values(text))]
    rest = _without(_without(text, values), parts)
    rest = re.sub(r"[\w.+-]*\d[\w.@+-]*", " ", rest)  # tokens with digits are values too
    return not _WORD.search(rest)


def _plain(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def repeats(text: str, previous: str | None, ratio: float = 0.9) -> bool:
    """`text` says `previous` again: the same words, or nearly (a one-word edit of a long turn)."""
    if not previous:
        return False
    a, b = _plain(text), _plain(previous)
    if not a or not b:
        return False
    if a == b:
        return True
    return len(a.split()) >= 6 and difflib.SequenceMatcher(None, a, b).ratio() >= ratio
