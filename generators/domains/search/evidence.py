"""Gold evidence for a question: which documents establish its facts, how a searcher finds
them, and whether a set of read documents covers the question.

The gold evidence is an ordered list of documents: first those stating the anchor's clues, then
one per hop in chain order (a document already chosen is reused when it states the next fact).
Each comes with a search query a solver could write at that point: the anchor's clue values from
the question, and later the name just read plus the relation's keyword. A document that its
query does not retrieve in the top `GOLD_K` makes the question infeasible (no gold plan).
`resolve_from_evidence` replays the chain using only the facts of given documents, which is how
tests show every gold answer is reachable by following its gold evidence.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from trajforge.generators.domains.search.bm25 import tokenize
from trajforge.generators.domains.search.data_model import SearchWorld
from trajforge.generators.domains.search.questions import Question
from trajforge.generators.domains.search.world import ATTRIBUTES, RELATIONS, TYPE_NOUNS, entity

#: Results per gold search (the tool's default).
GOLD_K = 5


class EvidenceStep(BaseModel):
    """One gold read: the query that finds the document, and the document."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    query: str
    doc_id: str


def _retrieves(world: SearchWorld, query: str, doc_id: str) -> bool:
    return any(world.documents[i].doc_id == doc_id for i, _ in world.index.top(query, GOLD_K))


def _anchor_queries(question: Question, world: SearchWorld) -> list[str]:
    """Before the anchor is known, only the question's clue values can be searched for."""
    values = [c.object for c in question.anchor_clues]
    noun = TYPE_NOUNS[entity(world.graph, question.anchor).type]
    return [" ".join(values), f"{noun} {' '.join(values)}", *values]


def _fact_queries(world: SearchWorld, fact: str) -> list[str]:
    """Queries for a fact about an entity whose name the solver has already read."""
    subject, predicate, obj = fact.split("|")
    name = entity(world.graph, subject).name
    if predicate in RELATIONS:
        rel = RELATIONS[predicate]
        reverse = " ".join(tokenize(rel.reverse.format(s="", o="")))
        return [f"{name} {rel.keyword}", f"{name} {reverse}", name]
    return [f"{name} {obj}", f"{name} {predicate.replace('_', ' ')}", name]


def _first_found(world: SearchWorld, docs: list[str], queries: list[str]) -> EvidenceStep | None:
    """The first (document, query) pair where the query retrieves the document."""
    for doc_id in docs:
        for query in queries:
            if _retrieves(world, query, doc_id):
                return EvidenceStep(query=query, doc_id=doc_id)
    return None


def gold_evidence(question: Question, world: SearchWorld, rng: random.Random):
    """The ordered gold reads of a question, or None when some needed fact is in no document
    that a query a solver could write at that point retrieves.

    Anchor clues come first (documents stating more of them preferred), then each hop fact and
    extra clue in chain order, skipping facts an earlier gold document already states.
    """
    steps: list[EvidenceStep] = []
    read: set[str] = set()
    left = {c.key for c in question.anchor_clues}
    while left:
        docs = [d for d in world.documents if d.facts & left]
        rng.shuffle(docs)
        docs.sort(key=lambda d: -len(d.facts & left))
        if steps:  # the anchor's name is known now
            anchor_fact = next(iter(sorted(left)))
            step = _first_found(world, [d.doc_id for d in docs], _fact_queries(world, anchor_fact))
        else:
            step = _first_found(world, [d.doc_id for d in docs], _anchor_queries(question, world))
        if step is None:
            return None
        steps.append(step)
        read |= world.by_id[step.doc_id].facts
        left -= read
    extra = {c.subject: c.key for c in question.extra_clues}
    for hop in question.path:
        for fact in (hop.key, extra.get(hop.object)):
            if fact is None or fact in read:
                continue
            docs = sorted(d.doc_id for d in world.documents if fact in d.facts)
            rng.shuffle(docs)
            step = _first_found(world, docs, _fact_queries(world, fact))
            if step is None:
                return None
            steps.append(step)
            read |= world.by_id[step.doc_id].facts
    return tuple(steps)


def read_facts(world: SearchWorld, doc_ids: Iterable[str]) -> frozenset[str]:
    """Union of the facts stated by the given documents (unknown ids ignored)."""
    return frozenset(f for d in doc_ids if d in world.by_id for f in world.by_id[d].facts)


def resolve_from_evidence(question: Question, world: SearchWorld, doc_ids) -> str | None:
    """Follow the chain using only the facts in `doc_ids`; the answer's id, or None if stuck.

    The anchor is the one entity the documents show satisfying every anchor clue; each hop
    then moves to the one object the documents give for that relation.
    """
    facts = read_facts(world, doc_ids)
    triples = [f.split("|") for f in facts]
    attrs = {a for attrs in ATTRIBUTES.values() for a in attrs} | {"kind"}
    candidates = {s for s, p, _ in triples if p in attrs}
    for clue in question.anchor_clues:
        candidates &= {s for s, p, o in triples if p == clue.predicate and o == clue.object}
    if len(candidates) != 1:
        return None
    node = candidates.pop()
    for hop in question.path:
        nxt = {o for s, p, o in triples if s == node and p == hop.predicate}
        if len(nxt) != 1:
            return None
        node = nxt.pop()
    extra_ok = all(c.key in facts for c in question.extra_clues)
    return node if extra_ok else None


def evidence_gap(question: Question, world: SearchWorld, opened: Iterable[str]) -> list[str]:
    """Facts of the question that none of the opened documents states (empty when covered).

    Any document stating a fact counts, not only the gold one: equivalent evidence is evidence.
    """
    return sorted(question.facts - read_facts(world, opened))
