"""Search-domain tools: every result is computed from the seeded corpus, never invented.

`search`, `open` and `find` read; `answer` is the one write (it records the normalised answer in
the state, which is what the outcome check's state hash compares). Answering twice is refused,
as the policy says: the first answer is final.
"""

from __future__ import annotations

from typing import Any

from trajforge.generators.domain_kit.touches import field
from trajforge.generators.domains.search.data_model import (
    SearchState,
    normalise_answer,
    world_for,
)
from trajforge.generators.tooling import ToolError, tool

SNIPPET_CHARS = 90
MAX_K = 10


def _document(state: SearchState, doc_id: str):
    doc = world_for(state.world_seed).document(doc_id.strip())
    if doc is None:
        raise ToolError(f"no document with id '{doc_id}'; use an id returned by search")
    return doc


@tool("read")
def search(state: SearchState, query: str, k: int = 5) -> list[dict[str, Any]]:
    """Search the document collection (BM25 keyword ranking) and list the best matches.

    Args:
        query: keywords to look for (names, years, kinds of things).
        k: how many results to return (1-10).
    """
    if not query.strip():
        raise ToolError("the query is empty; search for names, years or other keywords")
    if not 1 <= k <= MAX_K:
        raise ToolError(f"k must be between 1 and {MAX_K}, got {k}")
    world = world_for(state.world_seed)
    results = []
    for index, score in world.index.top(query, k):
        doc = world.documents[index]
        snippet = doc.text[:SNIPPET_CHARS] + ("..." if len(doc.text) > SNIPPET_CHARS else "")
        results.append(
            {"doc_id": doc.doc_id, "title": doc.title, "snippet": snippet, "score": round(score, 3)}
        )
    return results


@tool("read")
def open(state: SearchState, doc_id: str) -> dict[str, str]:  # noqa: A001 (the tool's name)
    """Open a document and read its full text.

    Args:
        doc_id: the id of a document, as returned by search (e.g. d042).
    """
    doc = _document(state, doc_id)
    return {"doc_id": doc.doc_id, "title": doc.title, "text": doc.text}


@tool("read")
def find(state: SearchState, doc_id: str, text: str) -> list[str]:
    """Find the sentences of a document that contain a piece of text (case-insensitive).

    Args:
        doc_id: the id of a document, as returned by search.
        text: the text to look for inside that document.
    """
    doc = _document(state, doc_id)
    if not text.strip():
        raise ToolError("the text to find is empty")
    sentences = [s.strip() + "." for s in doc.text.split(". ") if s.strip()]
    hits = [s.replace("..", ".") for s in sentences if text.strip().lower() in s.lower()]
    if not hits:
        raise ToolError(f"'{text}' does not occur in {doc.doc_id}")
    return hits


@tool("write", touches=field("answer"))
def answer(state: SearchState, text: str) -> str:
    """Give the final answer to the user's question (only once; it cannot be changed).

    Args:
        text: the answer itself, e.g. the name of the entity asked for, without explanation.
    """
    if state.answer is not None:
        raise ToolError("an answer was already given; the first answer is final")
    value = normalise_answer(text)
    if not value:
        raise ToolError("the answer is empty")
    state.answer = value
    return f"Answer recorded: {text.strip()}"


TOOLS = (search, open, find, answer)
