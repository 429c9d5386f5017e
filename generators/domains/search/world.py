"""The search domain's world: a seeded, fictional `networkx.MultiDiGraph` of typed entities.

Nodes are people, organisations, places, works and events with typed attributes; edges are
typed relations. Every relation in `RELATIONS` is functional from its source (a person has one
birthplace, a work one creator), so a chain of relations from a known entity names exactly one
entity: multi-hop questions built on it have one answer. Names are built from invented syllables,
so prior knowledge answers nothing (the prior-knowledge check still guards against the rare
syllable pair that spells a real name, such as "Lima"). The same seed always gives the same graph.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

import networkx as nx
from pydantic import BaseModel, ConfigDict

EntityType = Literal["person", "organisation", "place", "work", "event"]


class Entity(BaseModel):
    """One node: a stable id (`pe03`), its type, its display name and typed attributes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    type: EntityType
    name: str
    attrs: dict[str, str]


@dataclass(frozen=True)
class Relation:
    """A typed, functional relation: each source entity has at most one target."""

    source: EntityType
    target: EntityType
    forward: str  # "{s} was born in {o}."
    reverse: str  # the same fact told from the target's side: "{o} is the birthplace of {s}."
    hop: str  # the obfuscated description of the target in terms of the source: "{x}"
    keyword: str  # what a searcher adds to a name to find this fact


RELATIONS: MappingProxyType[str, Relation] = MappingProxyType(
    {
        "born_in": Relation(
            "person", "place", "{s} was born in {o}.", "{o} is the birthplace of {s}.",
            "the place where {x} was born", "born",
        ),
        "works_for": Relation(
            "person", "organisation", "{s} works for {o}.", "{o} employs {s}.",
            "the organisation that employs {x}", "works",
        ),
        "mentored_by": Relation(
            "person", "person", "{s} was mentored by {o}.", "{o} mentored {s}.",
            "the mentor of {x}", "mentored",
        ),
        "created_by": Relation(
            "work", "person", "{s} was created by {o}.", "{o} created {s}.",
            "the creator of {x}", "created",
        ),
        "published_by": Relation(
            "work", "organisation", "{s} was published by {o}.", "{o} published {s}.",
            "the publisher of {x}", "published",
        ),
        "premiered_at": Relation(
            "work", "event", "{s} premiered at {o}.", "{o} saw the premiere of {s}.",
            "the event where {x} premiered", "premiered",
        ),
        "based_in": Relation(
            "organisation", "place", "{s} is based in {o}.", "{o} is home to {s}.",
            "the place where {x} is based", "based",
        ),
        "held_in": Relation(
            "event", "place", "{s} was held in {o}.", "{o} hosted {s}.",
            "the place where {x} was held", "held",
        ),
        "organised_by": Relation(
            "event", "organisation", "{s} was organised by {o}.", "{o} organised {s}.",
            "the organiser of {x}", "organised",
        ),
        "part_of": Relation(
            "place", "place", "{s} lies in the province of {o}.", "The province of {o} includes {s}.",
            "the province that contains {x}", "province",
        ),
    }
)  # fmt: skip

#: Attribute -> possible values, per entity type.
ATTRIBUTES: MappingProxyType[EntityType, dict[str, tuple[str, ...]]] = MappingProxyType(
    {
        "person": {
            "occupation": ("sculptor", "cartographer", "engineer", "violinist", "botanist",
                           "architect", "poet", "physician"),
            "birth_year": tuple(str(y) for y in range(1900, 1981, 4)),
            "award": ("Silver Quill", "Tarn Medal", "Harrow Prize", "Lumen Cup", "Osk Ribbon"),
        },
        "organisation": {
            "sector": ("publishing", "shipping", "glassworks", "milling", "banking", "research"),
            "founded": tuple(str(y) for y in range(1820, 1981, 8)),
            "size": ("small", "mid-sized", "large"),
        },
        "place": {
            "kind": ("town", "village", "harbour"),
            "known_for": ("amber", "salt marshes", "glassworks", "mills", "orchards", "shipyards",
                          "lace", "bells"),
            "first_recorded": ("11th century", "12th century", "13th century", "14th century",
                               "15th century"),
        },
        "work": {
            "form": ("novel", "symphony", "film", "painting", "treatise", "opera"),
            "year": tuple(str(y) for y in range(1930, 2011, 4)),
            "theme": ("the sea", "exile", "winter", "a lighthouse", "memory", "the harvest"),
        },
        "event": {
            "kind": ("festival", "congress", "exhibition", "regatta", "fair"),
            "year": tuple(str(y) for y in range(1930, 2011, 4)),
            "season": ("spring", "summer", "autumn", "winter"),
        },
    }
)  # fmt: skip

#: Type -> noun used in questions ("the organisation ...").
TYPE_NOUNS: MappingProxyType[EntityType, str] = MappingProxyType(
    {"person": "person", "organisation": "organisation", "place": "place", "work": "work",
     "event": "event"}
)  # fmt: skip

SYLLABLES = (
    "ar", "ven", "tos", "ka", "mel", "dra", "vi", "lo", "ris", "pa", "li", "ma", "ro", "ber",
    "lin", "os", "quen", "tal", "zor", "e", "fen", "hal", "mir", "un",
)  # fmt: skip
SECTOR_WORDS = MappingProxyType(
    {"publishing": "Press", "shipping": "Shipping Line", "glassworks": "Glassworks",
     "milling": "Mills", "banking": "Bank", "research": "Institute"}
)  # fmt: skip
TITLE_HEADS = ("Songs of", "The Book of", "Letters from", "A Study of", "Nights in", "Echoes of")
EVENT_WORDS = MappingProxyType(
    {"festival": "Festival", "congress": "Congress", "exhibition": "Exhibition",
     "regatta": "Regatta", "fair": "Fair"}
)  # fmt: skip

#: How many entities of each kind a world holds (provinces are places without a province).
SIZES = MappingProxyType(
    {"province": 4, "town": 12, "organisation": 14, "person": 36, "work": 30, "event": 14}
)


def _word(rng: random.Random, parts: int) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(parts)).capitalize()


class _Namer:
    """Unique names: a fresh draw replaces any name already used in this world."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.used: set[str] = set()

    def unique(self, make) -> str:
        while True:
            name = make(self.rng)
            if name not in self.used:
                self.used.add(name)
                return name


def _attrs(rng: random.Random, etype: EntityType, **fixed: str) -> dict[str, str]:
    return {a: fixed.get(a) or rng.choice(v) for a, v in ATTRIBUTES[etype].items()}


def _add(graph: nx.MultiDiGraph, entity: Entity) -> str:
    graph.add_node(entity.id, entity=entity)
    return entity.id


def _link(graph: nx.MultiDiGraph, source: str, relation: str, target: str) -> None:
    graph.add_edge(source, target, key=relation, relation=relation)


def _places(graph: nx.MultiDiGraph, rng: random.Random, names: _Namer) -> list[str]:
    provinces = []
    for i in range(SIZES["province"]):
        attrs = _attrs(rng, "place")
        attrs["kind"] = "province"
        name = names.unique(lambda r: _word(r, 2))
        provinces.append(_add(graph, Entity(id=f"pr{i:02d}", type="place", name=name, attrs=attrs)))
    towns = []
    for i in range(SIZES["town"]):
        name = names.unique(lambda r: _word(r, 2))
        town = _add(
            graph, Entity(id=f"pl{i:02d}", type="place", name=name, attrs=_attrs(rng, "place"))
        )
        _link(graph, town, "part_of", rng.choice(provinces))
        towns.append(town)
    return towns


def _organisations(graph, rng, names: _Namer, towns: list[str]) -> list[str]:
    orgs = []
    for i in range(SIZES["organisation"]):
        attrs = _attrs(rng, "organisation")
        name = names.unique(lambda r, s=attrs["sector"]: f"{_word(r, 2)} {SECTOR_WORDS[s]}")
        org = _add(graph, Entity(id=f"or{i:02d}", type="organisation", name=name, attrs=attrs))
        _link(graph, org, "based_in", rng.choice(towns))
        orgs.append(org)
    return orgs


def _people(graph, rng, names: _Namer, towns, orgs) -> list[str]:
    people: list[str] = []
    for i in range(SIZES["person"]):
        name = names.unique(lambda r: f"{_word(r, 2)} {_word(r, rng.choice((2, 3)))}")
        person = _add(
            graph, Entity(id=f"pe{i:02d}", type="person", name=name, attrs=_attrs(rng, "person"))
        )
        _link(graph, person, "born_in", rng.choice(towns))
        _link(graph, person, "works_for", rng.choice(orgs))
        if people and rng.random() < 0.75:  # mentors come earlier, so mentorship has no cycles
            _link(graph, person, "mentored_by", rng.choice(people))
        people.append(person)
    return people


def _events(graph, rng, names: _Namer, towns, orgs) -> list[str]:
    events = []
    for i in range(SIZES["event"]):
        attrs = _attrs(rng, "event")
        name = names.unique(lambda r, k=attrs["kind"]: f"{_word(r, 2)} {EVENT_WORDS[k]}")
        event = _add(graph, Entity(id=f"ev{i:02d}", type="event", name=name, attrs=attrs))
        _link(graph, event, "held_in", rng.choice(towns))
        _link(graph, event, "organised_by", rng.choice(orgs))
        events.append(event)
    return events


def _works(graph, rng, names: _Namer, people, orgs, events) -> None:
    for i in range(SIZES["work"]):
        attrs = _attrs(rng, "work")
        theme = attrs["theme"].removeprefix("the ").removeprefix("a ").title()
        name = names.unique(
            lambda r, t=theme: f"{r.choice(TITLE_HEADS)} {r.choice((t, _word(r, 2)))}"
        )
        work = _add(graph, Entity(id=f"wo{i:02d}", type="work", name=name, attrs=attrs))
        _link(graph, work, "created_by", rng.choice(people))
        _link(graph, work, "published_by", rng.choice(orgs))
        if rng.random() < 0.5:
            _link(graph, work, "premiered_at", rng.choice(events))


def generate_world(seed: int) -> nx.MultiDiGraph:
    """The fictional world for `seed`: same seed, same graph (node and edge order included)."""
    rng = random.Random(seed)
    graph = nx.MultiDiGraph(seed=seed)
    names = _Namer(rng)
    towns = _places(graph, rng, names)
    orgs = _organisations(graph, rng, names, towns)
    people = _people(graph, rng, names, towns, orgs)
    events = _events(graph, rng, names, towns, orgs)
    _works(graph, rng, names, people, orgs, events)
    return graph


def entity(graph: nx.MultiDiGraph, node: str) -> Entity:
    return graph.nodes[node]["entity"]


def entities(graph: nx.MultiDiGraph) -> list[Entity]:
    """Every entity in id order."""
    return [graph.nodes[n]["entity"] for n in sorted(graph.nodes)]


def target(graph: nx.MultiDiGraph, node: str, relation: str) -> str | None:
    """The one entity `node` points to by `relation` (relations are functional), or None."""
    for _, dst, key in graph.out_edges(node, keys=True):
        if key == relation:
            return dst
    return None


def out_relations(graph: nx.MultiDiGraph, node: str) -> list[tuple[str, str]]:
    """(relation, target) pairs leaving `node`, sorted so walks are deterministic."""
    return sorted((key, dst) for _, dst, key in graph.out_edges(node, keys=True))
