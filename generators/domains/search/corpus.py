"""The document corpus rendered from the world graph: the only thing the agent can read.

Every fact of the graph (an attribute, or a relation edge) is a `Fact` with a stable key, and each
document records which facts its sentences state, so coverage questions ("does one document answer
the whole question?", "did the agent read the facts it needed?") are set operations, not text
matching. Per entity, its facts are spread over two or three documents; some facts are told again
from the other entity's side (redundancy); some biographies and catalogue entries bundle two hops
into one document (the co-coverage risk the question checks must catch); and list documents that
group entities by a shared attribute match searches for clues without resolving them (distractors).
"""

from __future__ import annotations

import random
import re
from collections import defaultdict

import networkx as nx
from pydantic import BaseModel, ConfigDict

from trajforge.generators.domains.search.world import RELATIONS, Entity, entities, entity, target

ATTRIBUTE_SENTENCES = {
    "occupation": "{s} is a {v}.",
    "birth_year": "{s} was born in the year {v}.",
    "award": "{s} received the {v}.",
    "sector": "{s} is active in {v}.",
    "founded": "{s} was founded in {v}.",
    "size": "{s} is a {v} organisation.",
    "kind": "{s} is a {v}.",
    "known_for": "{s} is known for its {v}.",
    "first_recorded": "{s} was first recorded in the {v}.",
    "form": "{s} is a {v}.",
    "year": "{s} dates from {v}.",
    "theme": "{s} is about {v}.",
    "season": "{s} takes place in {v}.",
}

#: Chance that a relation is told again in a document of its target (redundancy).
REDUNDANCY = 0.35
#: Chance that a person gets a biography bundling their employer's seat (a two-hop document).
BIOGRAPHY = 0.3
#: Chance that a work gets a catalogue entry bundling its creator's birthplace.
CATALOGUE_ENTRY = 0.3


class Fact(BaseModel):
    """One fact: (subject id, predicate, object id or attribute value)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    subject: str
    predicate: str
    object: str

    @property
    def key(self) -> str:
        return f"{self.subject}|{self.predicate}|{self.object}"

    @classmethod
    def from_key(cls, key: str) -> Fact:
        subject, predicate, obj = key.split("|")
        return cls(subject=subject, predicate=predicate, object=obj)


class Document(BaseModel):
    """A rendered document: id, title, text, and the keys of the facts its text states."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    doc_id: str
    title: str
    text: str
    facts: frozenset[str]


def attribute_fact(e: Entity, attr: str) -> Fact:
    return Fact(subject=e.id, predicate=attr, object=e.attrs[attr])


def relation_fact(source: str, relation: str, dst: str) -> Fact:
    return Fact(subject=source, predicate=relation, object=dst)


_A_VOWEL = re.compile(r"\ba (?=[aeiou])")


def with_articles(text: str) -> str:
    """'a architect' -> 'an architect' (templates write 'a {value}')."""
    return _A_VOWEL.sub("an ", text)


def sentence(graph: nx.MultiDiGraph, fact: Fact, reverse: bool = False) -> str:
    """The fact in words (a relation can be told from either end)."""
    subject = entity(graph, fact.subject)
    if fact.predicate in RELATIONS:
        rel = RELATIONS[fact.predicate]
        obj = entity(graph, fact.object).name
        return (rel.reverse if reverse else rel.forward).format(s=subject.name, o=obj)
    return with_articles(ATTRIBUTE_SENTENCES[fact.predicate].format(s=subject.name, v=fact.object))


def entity_facts(graph: nx.MultiDiGraph, e: Entity) -> list[Fact]:
    attrs = [attribute_fact(e, a) for a in sorted(e.attrs)]
    edges = [relation_fact(e.id, key, dst) for _, dst, key in graph.out_edges(e.id, keys=True)]
    return attrs + sorted(edges, key=lambda f: f.key)


class _Writer:
    """Accumulates documents with sequential ids."""

    def __init__(self, graph: nx.MultiDiGraph):
        self.graph = graph
        self.docs: list[dict] = []

    def add(self, title: str, facts: list[tuple[Fact, bool]], lead: str = "") -> int:
        sentences = [lead] if lead else []
        sentences += [sentence(self.graph, f, rev) for f, rev in facts]
        self.docs.append(
            {"title": title, "sentences": sentences, "facts": {f.key for f, _ in facts}}
        )
        return len(self.docs) - 1

    def extend(self, index: int, fact: Fact, reverse: bool) -> None:
        self.docs[index]["sentences"].append(sentence(self.graph, fact, reverse))
        self.docs[index]["facts"].add(fact.key)


PART_TITLES = ("{n}", "{n}: notes", "{n}: archive record")


def _entity_documents(writer: _Writer, rng: random.Random) -> dict[str, list[int]]:
    """Two or three documents per entity, its facts dealt across them in a seeded order."""
    by_entity: dict[str, list[int]] = {}
    for e in entities(writer.graph):
        facts = entity_facts(writer.graph, e)
        rng.shuffle(facts)
        parts = 2 if len(facts) <= 4 else 3
        chunks = [facts[i::parts] for i in range(parts)]
        article = "an" if e.type[0] in "aeiou" else "a"
        lead = f"{e.name} is {article} {e.type} in the archive."
        by_entity[e.id] = [
            writer.add(PART_TITLES[i].format(n=e.name), [(f, False) for f in chunk], lead)
            for i, chunk in enumerate(chunks)
        ]
    return by_entity


def _redundant_mentions(writer: _Writer, rng: random.Random, by_entity) -> None:
    """Some relations are told again from the target's side, in one of its documents."""
    for source, dst, key in sorted(writer.graph.edges(keys=True)):
        if rng.random() < REDUNDANCY:
            writer.extend(rng.choice(by_entity[dst]), relation_fact(source, key, dst), True)


def _bundles(writer: _Writer, rng: random.Random) -> None:
    """Two-hop documents: a person's biography with the employer's seat, a work's catalogue
    entry with the creator's birthplace. Questions answerable from one of these are refused."""
    graph = writer.graph
    for e in entities(graph):
        first, second = {
            "person": ("works_for", "based_in"),
            "work": ("created_by", "born_in"),
        }.get(e.type, (None, None))
        chance = BIOGRAPHY if e.type == "person" else CATALOGUE_ENTRY
        if first is None or rng.random() >= chance:
            continue
        mid = target(graph, e.id, first)
        end = target(graph, mid, second) if mid else None
        if end is None:
            continue
        facts = [attribute_fact(e, a) for a in sorted(e.attrs)]
        facts += [relation_fact(e.id, first, mid), relation_fact(mid, second, end)]
        kind = "Biography" if e.type == "person" else "Catalogue entry"
        writer.add(f"{kind}: {e.name}", [(f, False) for f in facts])


def _lists(writer: _Writer) -> None:
    """Distractors: 'works from 1954 include ...' lists match clue searches but link nothing."""
    groups: dict[tuple[str, str, str], list[Entity]] = defaultdict(list)
    for e in entities(writer.graph):
        for attr in ("birth_year", "year", "founded", "occupation", "form", "kind"):
            if attr in e.attrs:
                groups[(e.type, attr, e.attrs[attr])].append(e)
    for (etype, attr, value), members in sorted(groups.items()):
        if len(members) < 3:
            continue
        names = ", ".join(m.name for m in members)
        title = f"Index of {etype} records: {attr.replace('_', ' ')} {value}"
        lead = f"Records with {attr.replace('_', ' ')} {value} include {names}."
        writer.add(title, [], lead)


def render_corpus(graph: nx.MultiDiGraph) -> tuple[Document, ...]:
    """All documents of the world, in a seeded shuffled order with ids `d000`, `d001`, ...

    The shuffle keeps document ids from giving away which documents belong together.
    """
    rng = random.Random(graph.graph["seed"] * 7919 + 1)
    writer = _Writer(graph)
    by_entity = _entity_documents(writer, rng)
    _redundant_mentions(writer, rng, by_entity)
    _bundles(writer, rng)
    _lists(writer)
    order = list(range(len(writer.docs)))
    rng.shuffle(order)
    return tuple(
        Document(
            doc_id=f"d{new:03d}",
            title=writer.docs[old]["title"],
            text=" ".join(writer.docs[old]["sentences"]),
            facts=frozenset(writer.docs[old]["facts"]),
        )
        for new, old in enumerate(order)
    )
