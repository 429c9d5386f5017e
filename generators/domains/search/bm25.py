"""Okapi BM25 over the corpus: small enough to own (no dependency), deterministic in its ties.

Scores are the textbook BM25 (k1=1.5, b=0.75, idf = ln(1 + (N - n + 0.5) / (n + 0.5))); equal
scores rank by document order, so the same query always returns the same list.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

_TOKEN = re.compile(r"[a-z0-9]+")
#: Words that carry no clue (question glue); dropping them keeps scores on names and values.
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "the",
        "of",
        "in",
        "is",
        "was",
        "who",
        "which",
        "what",
        "where",
        "that",
        "by",
        "at",
        "for",
        "from",
        "to",
        "its",
        "it",
        "on",
        "with",
        "as",
        "this",
        "name",
    ]
)


def tokenize(text: str) -> list[str]:
    """Lower-cased alphanumeric tokens without stopwords."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS]


class BM25:
    """An index over texts; `top(query, k)` gives the k best (index, score) pairs."""

    def __init__(self, texts: Sequence[str], k1: float = 1.5, b: float = 0.75):
        self.k1, self.b = k1, b
        self.docs = [Counter(tokenize(t)) for t in texts]
        self.lengths = [sum(d.values()) for d in self.docs]
        self.avg = sum(self.lengths) / max(len(self.docs), 1)
        df = Counter(term for d in self.docs for term in d)
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - c + 0.5) / (c + 0.5)) for t, c in df.items()}

    def score(self, query_terms: Sequence[str], index: int) -> float:
        doc, length = self.docs[index], self.lengths[index]
        total = 0.0
        for term in query_terms:
            tf = doc.get(term, 0)
            if tf:
                norm = tf + self.k1 * (1 - self.b + self.b * length / self.avg)
                total += self.idf[term] * tf * (self.k1 + 1) / norm
        return total

    def top(self, query: str, k: int) -> list[tuple[int, float]]:
        terms = tokenize(query)
        scored = [(i, self.score(terms, i)) for i in range(len(self.docs))]
        ranked = sorted((s for s in scored if s[1] > 0), key=lambda s: (-s[1], s[0]))
        return ranked[:k]
