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
import functools
import re
from collections import Counter
from collections.abc import Iterable

from trajforge.generators.value_grammar import typed_values
from trajforge.generators.values import entity_tokens

_WORD = re.compile(r"[^\W\d_]+")


@functools.lru_cache(maxsize=4096)
def _span_pattern(span: str) -> re.Pattern[str]:
    """The literal `span`, any case. Cached here: the spans are each text's values and names,
    more distinct ones than `re`'s own cache of 512 holds across a build, so `re.sub` compiled
    ~15,000 patterns in a 1,600-task blueprint build (~2 ms of CPU per task, issue 30)."""
    return re.compile(re.escape(span), flags=re.IGNORECASE)


def _without(text: str, spans: Iterable[str]) -> str:
    for span in sorted({s for s in spans if s}, key=len, reverse=True):
        text = _span_pattern(span).sub(" ", text)
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
    if len(a.split()) < 6:
        return False
    return _quick_ratio(a, b) >= ratio and difflib.SequenceMatcher(None, a, b).ratio() >= ratio


def _quick_ratio(a: str, b: str) -> float:
    """`SequenceMatcher(None, a, b).quick_ratio()`: the characters the two share as multisets,
    an upper bound on `ratio()` (difflib's docs) in linear time. It settles 99.6% of a
    blueprint build's turn pairs without `ratio()`'s matching or building the matcher's index
    of `b` (~2 ms of CPU per task, issue 30)."""
    shared = sum((Counter(a) & Counter(b)).values())
    return 2.0 * shared / (len(a) + len(b))
