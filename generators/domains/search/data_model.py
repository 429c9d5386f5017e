"""The search domain's world state and the read-only world it is played in.

The mutable state is tiny on purpose: the world seed and the one answer the agent gave. The
graph, its corpus and the search index are a pure function of the seed (`world_for`, cached per
process), so the state hash compares exactly what matters (the normalised answer) and an outcome
replay never rebuilds or rehashes hundreds of documents.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass, field

import networkx as nx
from pydantic import BaseModel, ConfigDict

from trajforge.generators.domains.search.bm25 import BM25
from trajforge.generators.domains.search.corpus import Document, render_corpus
from trajforge.generators.domains.search.world import generate_world


class SearchState(BaseModel):
    """Mutable (the `answer` tool writes it) but closed: unknown fields are refused."""

    model_config = ConfigDict(extra="forbid")

    world_seed: int
    answer: str | None = None


@dataclass(frozen=True)
class SearchWorld:
    """Graph, corpus and index of one seed; never mutated after construction."""

    seed: int
    graph: nx.MultiDiGraph
    documents: tuple[Document, ...]
    index: BM25
    by_id: dict[str, Document] = field(default_factory=dict)

    def document(self, doc_id: str) -> Document | None:
        return self.by_id.get(doc_id)


@functools.lru_cache(maxsize=64)
def world_for(seed: int) -> SearchWorld:
    """The world of a seed (built once per process; ~10 ms)."""
    graph = generate_world(seed)
    docs = render_corpus(graph)
    index = BM25([f"{d.title} {d.text}" for d in docs])
    return SearchWorld(seed, graph, docs, index, {d.doc_id: d for d in docs})


_ARTICLE = re.compile(r"^(?:the|a|an)\s+")


def normalise_answer(text: str) -> str:
    """The comparable form of an answer: NFKC, lower case, no punctuation or leading article.

    "The Velmora Press." and "velmora  press" compare equal; "Velmora" does not.
    """
    text = unicodedata.normalize("NFKC", text).lower()
    text = re.sub(r"[^\w\s-]", " ", text)
    text = " ".join(text.split())
    return _ARTICLE.sub("", text)
