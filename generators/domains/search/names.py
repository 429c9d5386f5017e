"""Names of a world's entities as tokens, and what a conversation had shown its agent so far.

A search agent learns a name only by reading it: in a tool output (a result title or snippet, an
opened document, a found sentence) or in a user turn. A name it writes before any of those
showed it was guessed or leaked, whether it writes it in a query, in the `answer` call or in
prose. Names are compared by their distinctive tokens ("Halmir" of "Rise Halmir"): words of the
world's vocabulary that also occur in names ("Press", "Festival", "Winter", "Letters from") name
no one and are left out. In prose only capitalised tokens count as names ("vital" is a word,
"Vital" may be a place); in call arguments case does not matter (queries are often lower case).
A name of several words is also checked whole: "Zortos Institute" is not shown by "Zortos
Shipping Line", although each of its distinctive tokens was.
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


#: Frequent English words the syllable generator can spell ("Are", "Even", "Vital", "Liar"):
#: an agent writes them at the start of a sentence without naming anyone.
ENGLISH_WORDS = frozenset(
    ["are", "even", "ear", "era", "vital", "liar", "halo", "halos", "hallo", "mama", "papa",
     "also", "area", "arena", "aroma", "drama", "lover", "rose", "rival", "venus", "melon",
     "lime", "lima", "mile", "pale", "pile", "pole", "role", "rome", "tale", "tile", "vile",
     "male", "mare", "more", "lore", "ore", "tore", "amen", "omen", "oven", "over", "even",
     "tome", "toes", "rise", "riser", "paris", "liszt", "unto", "until", "undo", "uno", "kilo",
     "polo", "solo", "halt", "malt", "salt", "tall", "talon", "venom", "valor", "karma"]
)  # fmt: skip


@functools.cache
def common_words() -> frozenset[str]:
    """Words of the world's vocabulary: never evidence of having read a particular name."""
    texts = [*STOPWORDS, *ENGLISH_WORDS, *TYPE_NOUNS.values(), *SECTOR_WORDS.values()]
    texts += list(EVENT_WORDS.values())
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


def said_text(message: Message) -> str:
    """An agent message's text and argument strings, lower case (for whole-name matching)."""
    parts = [message.content or ""]
    parts += [leaf for c in message.tool_calls for leaf in leaf_strings(c.arguments)]
    return " \n ".join(p for p in parts if isinstance(p, str)).lower()


def mentions(text: str, name: str) -> bool:
    """`name` (lower case) occurs in `text` (lower case) as whole words."""
    return re.search(rf"(?<![a-z0-9]){re.escape(name)}(?![a-z0-9])", text) is not None


@functools.lru_cache(maxsize=64)
def full_names(seed: int) -> dict[str, str]:
    """Entity id -> its name in lower case, for names of several words."""
    return {e.id: e.name.lower() for e in entities(world_for(seed).graph) if " " in e.name}


@dataclass
class Shown:
    """What was shown to the agent so far (tool outputs but echoes, and user turns): tokens,
    and the text itself for whole names."""

    seen: set[str] = field(default_factory=set)
    text: list[str] = field(default_factory=list)
    echo_ids: set[str] = field(default_factory=set)

    def read(self, message: Message) -> None:
        """Learn what `message` shows (an agent message shows nothing; it may call an echo)."""
        if message.role == "assistant":
            self.echo_ids |= {c.id for c in message.tool_calls if c.name in ECHO_TOOLS}
        elif message.role == "user" or (
            message.role == "tool" and message.tool_call_id not in self.echo_ids
        ):
            self.seen |= tokens(message.content or "")
            self.text.append((message.content or "").lower())

    def shows(self, name: str) -> bool:
        return any(mentions(t, name) for t in self.text)


def unshown_names(
    messages: Iterable[Message], names: frozenset[str], whole: Iterable[str] = ()
) -> list[tuple[int, list[str]]]:
    """(message index, unseen) for each agent message using a token of `names`, or a whole
    name of `whole` (lower case), that no earlier tool output or user turn had shown."""
    shown, found, whole = Shown(), [], tuple(whole)
    for index, message in enumerate(messages):
        if message.role == "assistant":
            unseen = sorted((said_tokens(message) & names) - shown.seen)
            text = said_text(message)
            unseen += [n for n in whole if mentions(text, n) and not shown.shows(n)]
            if unseen:
                found.append((index, unseen))
        shown.read(message)
    return found
