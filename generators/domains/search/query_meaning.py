"""What a search query means, for loop detection: its content words as a set.

"Arhal born", "born, Arhal?" and "please find Arhal born" ask the index the same thing, and
so does the same query with another `k`; an agent that sends them three times is looping.
Words are folded the way the index folds them (lower case, punctuation dropped, the index's
stop words removed), then filler that only dresses a query up is dropped. The guard against
false positives: meanings compare equal only when their word sets are equal, so a query
about another name, attribute or relation ("Arhal based", "Arhal 1954") is a new query.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from trajforge.generators.domains.search.bm25 import tokenize

#: Words that dress a query up without changing what it asks for.
FILLER = frozenset(
    ["please", "search", "searching", "find", "finding", "look", "looking", "lookup", "up",
     "for", "about", "regarding", "info", "information", "details", "detail", "document",
     "documents", "page", "pages", "record", "records", "archive", "collection", "result",
     "results", "query", "me", "us", "i", "we", "you", "show", "tell", "give", "get", "list",
     "any", "all", "more", "some", "again", "also", "just", "now", "here", "there", "entry",
     "article", "articles", "mention", "mentions", "mentioning", "related", "anything", "try",
     "can", "could", "would", "want", "need", "know", "does", "do", "did", "are", "were", "be",
     "been", "has", "have", "had", "his", "her", "their", "they", "he", "she", "when", "how"]
)  # fmt: skip


def query_meaning(arguments: dict[str, Any]) -> list[str]:
    """The sorted content words of a `search` call's query (`k` and filler ignored)."""
    return sorted(set(tokenize(str(arguments.get("query", "")))) - FILLER)


#: The domain's `call_meanings` (verifiers/loops.py): only `search` needs one.
CALL_MEANINGS = MappingProxyType({"search": query_meaning})
