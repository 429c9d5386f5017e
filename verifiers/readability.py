"""The exported data read as a trainer would: repeated sentences, control tokens, JSON shown to
the customer, and whether the speaking user is the persona.

Measured over exported chat messages (the `messages_json` view) so the numbers describe what a
model is trained on. A sentence is compared with its entity values and names replaced by
placeholders (`#W1234567`, `54.90` -> `<v>`; "Dario Marlowe", the vocative "Thanks, Joss," ->
`<name>`), so a template that differs only in values or in whose name it carries counts as one
sentence: six rows whose user only says their own name are one shape, not six.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from trajforge.generators.prompts import SIMULATOR_TOKENS

# A period inside a token ("54.90", "ann.lee7@example.com") does not end a sentence.
_SENTENCE = re.compile(r"(?:[^.!?\n]|\.(?=[^\s.!?]))+[.!?]?")
_VALUE = re.compile(r"#?\b[\w.+-]*\d[\w.@+-]*")
_JSON = re.compile(r"[\[{]\s*\"|\"\s*:\s*[\"\[{\d]|\[\s*\]|\bnull\b")


@dataclass(frozen=True)
class Readability:
    rows: int
    top_sentence: str  # the templated sentence found in the most rows
    top_sentence_rows: float  # fraction of rows that contain it
    rows_with_control_tokens: int
    rows_with_json_in_text: int


#: Two or more capitalised words in a row (a full name, a product name), or one capitalised word
#: addressed between commas ("I hope that helps, Joss, anything else?").
_NAME = re.compile(r"\b[A-Z][a-z'-]+(?:\s+[A-Z][a-z'-]+)+\b|(?<=, )[A-Z][a-z'-]+(?=[,.!?])")


def template_of(sentence: str) -> str:
    """The sentence with values (anything with a digit) replaced by `<v>` and names by
    `<name>`, case folded."""
    masked = _NAME.sub("<name>", _VALUE.sub("<v>", sentence))
    return " ".join(masked.lower().split())


def _texts(messages: Sequence[dict]) -> list[str]:
    return [
        m["content"]
        for m in messages
        if m.get("role") in ("user", "assistant") and m.get("content")
    ]


def measure(rows: Iterable[Sequence[dict]]) -> Readability:
    """Readability of exported conversations (each a list of OpenAI-format message dicts)."""
    per_row: Counter = Counter()
    n = control = json_rows = 0
    for messages in rows:
        n += 1
        texts = _texts(messages)
        per_row.update({template_of(s) for t in texts for s in _SENTENCE.findall(t) if s.strip()})
        control += any(tok in t for t in texts for tok in SIMULATOR_TOKENS)
        json_rows += any(_JSON.search(t) for t in texts)
    top, count = per_row.most_common(1)[0] if per_row else ("", 0)
    return Readability(n, top, count / n if n else 0.0, control, json_rows)


_NAME_CLAIM = re.compile(r"\bmy name is ([A-Z][\w'-]+(?: [A-Z][\w'-]+)+)")


def speaker_is_persona(
    persona_name: str, known_info: dict[str, str], user_texts: Iterable[str]
) -> bool:
    """The user who speaks is the sampled persona: the name it may give and every name it
    states are the persona's."""
    names = [v for k, v in known_info.items() if k.lower() in ("name", "full name")]
    names += [m for t in user_texts for m in _NAME_CLAIM.findall(t)]
    return all(n.strip().lower() == persona_name.strip().lower() for n in names)
