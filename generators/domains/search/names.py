"""Names of a world's entities as tokens, and what a conversation had shown its agent so far.

A search agent learns a name only by reading it: in a tool output (a result title or snippet, an
opened document, a found sentence) or in a user turn. A name it writes before any of those
showed it was guessed or leaked, whether it writes it in a query, in the `answer` call or in
prose. Names are compared by their distinctive tokens ("Halmir" of "Rise Halmir"): words of the
world's vocabulary that also occur in names ("Press", "Festival", "Winter", "Letters from") name
no one and are left out. In prose only capitalised tokens count as names ("vital" is a word,
"Vital" may be a place); in call arguments case does not matter (queries are often lower case).
The `answer` tool's echo ("Answer recorded: X") repeats the agent's own words and shows nothing.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from trajforge.generators.domains.search.bm25 import STOPWORDS
from trajforge.generators.domains.search.corpus import ATTRIBUTE_SENTENCES, PART_TITLES
from trajforge.generators.domains.search.data_model import world_for
from trajforge.generators.domains.search.world import (
    ATTRIBUTES,
    EVENT_WORDS,
    RELATIONS,
    SECTOR_WORDS,
    TITLE_HEADS,
    TYPE_NOUNS,
    entities,
)
from trajforge.generators.values import leaf_strings
from trajforge.schemas import Message

_TOKEN = re.compile(r"[A-Za-z0-9]+")
#: Tools whose output only repeats the agent's own arguments (never evidence).
ECHO_TOOLS = frozenset({"answer"})
#: Words of the corpus's fixed phrasing ("X is a person in the archive", "Index of ...").
CORPUS_PHRASES = (
    "is a in the archive",
    "Biography Catalogue entry Index of records Records with include province",
)


def tokens(text: str) -> set[str]:
    """Lower-cased alphanumeric tokens."""
    return {t.lower() for t in _TOKEN.findall(text)}


def capitalised_tokens(text: str) -> set[str]:
    """Lower-cased tokens that were written with a capital first letter (names in prose)."""
    return {t.lower() for t in _TOKEN.findall(text) if t[0].isupper()}


@functools.cache
def common_words() -> frozenset[str]:
    """Words of the world's vocabulary: never evidence of having read a particular name."""
    texts = [*STOPWORDS, *TYPE_NOUNS.values(), *SECTOR_WORDS.values(), *EVENT_WORDS.values()]
    texts += [*TITLE_HEADS, *ATTRIBUTE_SENTENCES.values(), *PART_TITLES, *CORPUS_PHRASES]
    texts += [v for attrs in ATTRIBUTES.values() for values in attrs.values() for v in values]
    texts += [f"{r.forward} {r.reverse} {r.hop} {r.keyword}" for r in RELATIONS.values()]
    return frozenset(tokens(" ".join(texts)))


@functools.lru_cache(maxsize=64)
def name_tokens(seed: int) -> dict[str, frozenset[str]]:
    """Entity id -> the distinctive tokens of its name, for the world of `seed`."""
    common = common_words()
    graph = world_for(seed).graph
    return {e.id: frozenset(tokens(e.name) - common) for e in entities(graph)}


def world_name_tokens(seed: int) -> frozenset[str]:
    """Every distinctive name token of the world of `seed`."""
    return frozenset().union(*name_tokens(seed).values())


def said_tokens(message: Message) -> set[str]:
    """Tokens an agent message uses as names: capitalised words of its text, and every word
    of the strings it passes to tools."""
    said = capitalised_tokens(message.content or "")
    for call in message.tool_calls:
        for leaf in leaf_strings(call.arguments):
            if isinstance(leaf, str):
                said |= tokens(leaf)
    return said


@dataclass
class Shown:
    """Tokens shown to the agent so far (tool outputs but echoes, and user turns)."""

    seen: set[str] = field(default_factory=set)
    echo_ids: set[str] = field(default_factory=set)

    def read(self, message: Message) -> None:
        """Learn what `message` shows (an agent message shows nothing; it may call an echo)."""
        if message.role == "assistant":
            self.echo_ids |= {c.id for c in message.tool_calls if c.name in ECHO_TOOLS}
        elif message.role == "user" or (
            message.role == "tool" and message.tool_call_id not in self.echo_ids
        ):
            self.seen |= tokens(message.content or "")


def unshown_names(
    messages: Iterable[Message], names: frozenset[str]
) -> list[tuple[int, list[str]]]:
    """(message index, tokens) for each agent message using a token of `names` that no earlier
    tool output or user turn had shown."""
    shown, found = Shown(), []
    for index, message in enumerate(messages):
        if message.role == "assistant":
            unseen = sorted((said_tokens(message) & names) - shown.seen)
            if unseen:
                found.append((index, unseen))
        shown.read(message)
    return found
