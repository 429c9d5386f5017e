"""Multi-hop questions: a relation path sampled in the graph, with its intermediates hidden.

A question starts at an anchor entity described only by attribute clues whose conjunction is
unique among entities of its type, then follows 2-5 functional relations; the answer is the name
of the entity at the end. Intermediates are never named: each is described by the relation that
leads to it ("the mentor of ..."), sometimes with one extra attribute clue. Sampling does not
try to avoid shortcuts; `shortcuts.py` checks every candidate and refuses the ones that have them.
"""

from __future__ import annotations

import itertools
import random

import networkx as nx
from pydantic import BaseModel, ConfigDict

from trajforge.generators.domains.search.corpus import (
    ATTRIBUTE_SENTENCES,
    Fact,
    with_articles,
)
from trajforge.generators.domains.search.world import (
    RELATIONS,
    TYPE_NOUNS,
    entities,
    entity,
    out_relations,
)

HOPS = (2, 3, 4, 5)
#: Chance that one entity of the chain also gets an attribute clue of its own.
EXTRA_CLUE = 0.4
#: Anchors tried for a path of the sampled length before the candidate is given up.
ANCHOR_TRIES = 30


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


#: An attribute fact used as a clue: `subject` has attribute `predicate` = `object`.
Clue = Fact
#: A relation fact the chain follows: from `subject` by relation `predicate` to `object`.
Hop = Fact


class Question(_Frozen):
    """A synthesized question with everything needed to check and solve it."""

    text: str
    anchor: str
    anchor_clues: tuple[Clue, ...]
    path: tuple[Hop, ...]
    extra_clues: tuple[Clue, ...] = ()
    answer_id: str
    answer: str

    @property
    def hops(self) -> int:
        return len(self.path)

    @property
    def clues(self) -> tuple[Clue, ...]:
        return self.anchor_clues + self.extra_clues

    @property
    def facts(self) -> frozenset[str]:
        """Every fact a solver must establish: the anchor's clues, each hop, each extra clue."""
        return frozenset(c.key for c in self.clues) | {h.key for h in self.path}

    @property
    def chain(self) -> tuple[str, ...]:
        """Entity ids from the anchor to the answer."""
        return (self.anchor, *(h.object for h in self.path))


def clue_phrase(clue: Clue) -> str:
    """'was founded in 1921': the attribute sentence without its subject."""
    text = ATTRIBUTE_SENTENCES[clue.predicate].format(s="", v=clue.object)
    return with_articles(text).strip().rstrip(".")


def matching(graph: nx.MultiDiGraph, etype: str, clues: tuple[Clue, ...]) -> list[str]:
    """Ids of entities of `etype` that satisfy every clue (attributes read from the graph)."""
    return [
        e.id
        for e in entities(graph)
        if e.type == etype and all(e.attrs.get(c.predicate) == c.object for c in clues)
    ]


def _anchor_clues(graph, anchor: str, rng: random.Random) -> tuple[Clue, ...] | None:
    """A random 2- or 3-attribute description that only the anchor matches, or None."""
    e = entity(graph, anchor)
    attrs = sorted(e.attrs)
    for size in (2, 3):
        combos = list(itertools.combinations(attrs, size))
        rng.shuffle(combos)
        for combo in combos:
            clues = tuple(Clue(subject=anchor, predicate=a, object=e.attrs[a]) for a in combo)
            if matching(graph, e.type, clues) == [anchor]:
                return clues
    return None


def _walk(graph, anchor: str, hops: int, rng: random.Random) -> tuple[Hop, ...] | None:
    """A random path of `hops` functional relations without revisiting an entity."""
    path: list[Hop] = []
    seen = {anchor}
    node = anchor
    for _ in range(hops):
        options = [(r, t) for r, t in out_relations(graph, node) if t not in seen]
        if not options:
            return None
        relation, nxt = rng.choice(options)
        path.append(Hop(subject=node, predicate=relation, object=nxt))
        seen.add(nxt)
        node = nxt
    return tuple(path)


def _extra_clues(graph, path: tuple[Hop, ...], rng: random.Random) -> tuple[Clue, ...]:
    if rng.random() >= EXTRA_CLUE:
        return ()
    node = rng.choice([h.object for h in path])
    e = entity(graph, node)
    attr = rng.choice(sorted(a for a in e.attrs if not (e.type == "place" and a == "kind")))
    return (Clue(subject=node, predicate=attr, object=e.attrs[attr]),)


def render_question(graph, anchor_clues, path, extra_clues) -> str:
    """The question text: nested relation descriptions around the anchor's clues."""
    anchor = entity(graph, anchor_clues[0].subject)
    who = "who" if anchor.type == "person" else "that"
    phrases = " and ".join(clue_phrase(c) for c in anchor_clues)
    text = f"the {TYPE_NOUNS[anchor.type]} {who} {phrases}"
    extra = {c.subject: c for c in extra_clues}
    for hop in path:
        text = RELATIONS[hop.predicate].hop.format(x=text)
        if hop.object in extra:
            clue = extra[hop.object]
            noun = TYPE_NOUNS[entity(graph, clue.subject).type]
            article = "an" if noun[0] in "aeiou" else "a"
            rel = "who" if noun == "person" else "that"
            text = f"{text} ({article} {noun} {rel} {clue_phrase(clue)})"
    return f"What is the name of {text}?"


def sample_question(
    graph: nx.MultiDiGraph, rng: random.Random, hops: int | None = None
) -> Question | None:
    """One candidate question (unchecked) of `hops` hops (drawn from `HOPS` when None), or None
    when the sampled anchor supports none."""
    hops = hops if hops is not None else rng.choice(HOPS)
    nodes = sorted(graph.nodes)
    for _ in range(ANCHOR_TRIES):
        anchor = rng.choice(nodes)
        path = _walk(graph, anchor, hops, rng)
        if path is not None:
            break
    else:
        return None
    clues = _anchor_clues(graph, anchor, rng)
    if clues is None:
        return None
    extra = _extra_clues(graph, path, rng)
    answer = entity(graph, path[-1].object)
    return Question(
        text=render_question(graph, clues, path, extra),
        anchor=anchor,
        anchor_clues=clues,
        path=path,
        extra_clues=extra,
        answer_id=answer.id,
        answer=answer.name,
    )
