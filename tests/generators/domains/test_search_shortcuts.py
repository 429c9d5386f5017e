"""Each shortcut check rejects a hand-built question that violates it and keeps a corrected one."""

import dataclasses

import pytest

from trajforge.generators.domains.search.data_model import world_for
from trajforge.generators.domains.search.questions import (
    Clue,
    Hop,
    Question,
    matching,
    render_question,
)
from trajforge.generators.domains.search.shortcuts import (
    co_coverage,
    exposed,
    prior_knowledge,
    shortcut_violations,
    single_clue,
)
from trajforge.generators.domains.search.world import Entity, entities, entity, target

SEED = 21


@pytest.fixture(scope="module")
def world():
    return world_for(SEED)


def _question(world, clues, path, extra=(), text=None):
    end = entity(world.graph, path[-1].object)
    return Question(
        text=text or render_question(world.graph, clues, path, extra),
        anchor=clues[0].subject,
        anchor_clues=tuple(clues),
        path=tuple(path),
        extra_clues=tuple(extra),
        answer_id=end.id,
        answer=end.name,
    )


def _path(world, start, relations):
    path, node = [], start
    for relation in relations:
        nxt = target(world.graph, node, relation)
        path.append(Hop(subject=node, predicate=relation, object=nxt))
        node = nxt
    return path


def _clues(world, node, attrs):
    e = entity(world.graph, node)
    return [Clue(subject=node, predicate=a, object=e.attrs[a]) for a in attrs]


def test_co_coverage_rejects_a_question_one_biography_answers(world):
    bio = next(d for d in world.documents if d.title.startswith("Biography: "))
    person = next(e for e in entities(world.graph) if d_title(bio) == e.name)
    clues = _clues(world, person.id, ["occupation", "award"])
    two_hops = _question(world, clues, _path(world, person.id, ["works_for", "based_in"]))
    assert bio.doc_id in co_coverage(two_hops, world)
    # Corrected: one more hop (the province) that no biography states.
    three = _path(world, person.id, ["works_for", "based_in", "part_of"])
    assert co_coverage(_question(world, clues, three), world) is None


def d_title(doc):
    return doc.title.removeprefix("Biography: ")


def _unique_and_shared(world, etype):
    """(entity, attr with a value unique to it, two attrs each shared but jointly unique)."""
    for e in entities(world.graph):
        if e.type != etype:
            continue
        solo = [
            a for a in e.attrs if len(matching(world.graph, etype, _clues(world, e.id, [a]))) == 1
        ]
        shared = [a for a in e.attrs if a not in solo]
        for i, a in enumerate(shared):
            for b in shared[i + 1 :]:
                if solo and matching(world.graph, etype, _clues(world, e.id, [a, b])) == [e.id]:
                    return e, solo[0], [a, b]
    raise AssertionError("no suitable entity in this world")


def test_single_clue_rejects_a_clue_that_alone_identifies_the_anchor(world):
    person, solo, pair = _unique_and_shared(world, "person")
    path = _path(world, person.id, ["born_in", "part_of"])
    bad = _question(world, _clues(world, person.id, [solo, pair[0]]), path)
    assert f"{solo} = " in single_clue(bad, world)
    good = _question(world, _clues(world, person.id, pair), path)
    assert single_clue(good, world) is None


def test_single_clue_also_guards_intermediates(world):
    person, _, pair = _unique_and_shared(world, "person")
    path = _path(world, person.id, ["works_for", "based_in", "part_of"])
    org = path[0].object
    founded = [
        Clue(subject=org, predicate="founded", object=entity(world.graph, org).attrs["founded"])
    ]
    q = _question(world, _clues(world, person.id, pair), path, founded)
    alone = len(matching(world.graph, "organisation", tuple(founded))) == 1
    assert (single_clue(q, world) is not None) == alone


def test_exposed_constant_rejects_a_named_intermediate(world):
    person, _, pair = _unique_and_shared(world, "person")
    path = _path(world, person.id, ["works_for", "based_in"])
    clues = _clues(world, person.id, pair)
    good = _question(world, clues, path)
    org = entity(world.graph, path[0].object)
    leaky = good.text.replace("the organisation that employs", f"{org.name}, which employs")
    assert org.name in exposed(_question(world, clues, path, text=leaky), world)
    assert exposed(good, world) is None


def test_exposed_constant_rejects_a_clue_that_spells_part_of_the_answer(world):
    """'active in glassworks' about the answer gives away part of 'Artal Glassworks'."""
    work, org = next(
        (entity(world.graph, s), entity(world.graph, d))
        for s, d, k in sorted(world.graph.edges(keys=True))
        if k == "published_by"
        and entity(world.graph, d).attrs["sector"] in ("glassworks", "shipping")
    )
    path = _path(world, work.id, ["published_by"])
    sector = Clue(subject=org.id, predicate="sector", object=org.attrs["sector"])
    clues = _clues(world, work.id, ["form", "year"])
    assert org.attrs["sector"] in exposed(_question(world, clues, path, (sector,)), world)
    assert exposed(_question(world, clues, path), world) is None


def test_prior_knowledge_rejects_a_real_world_name_in_the_chain(world):
    person, _, pair = _unique_and_shared(world, "person")
    path = _path(world, person.id, ["born_in", "part_of"])
    clues = _clues(world, person.id, pair)
    q = _question(world, clues, path)
    assert prior_knowledge(q, world) is None
    graph = world.graph.copy()
    town = entity(graph, path[0].object)
    graph.nodes[town.id]["entity"] = Entity(id=town.id, type="place", name="Lima", attrs=town.attrs)
    renamed = dataclasses.replace(world, graph=graph)
    assert "lima" in prior_knowledge(q, renamed)
    in_text = _question(world, clues, path, text=q.text.replace("?", " near Paris?"))
    assert "paris" in prior_knowledge(in_text, world)


def test_violations_collects_every_risk(world):
    person, solo, pair = _unique_and_shared(world, "person")
    path = _path(world, person.id, ["born_in", "part_of"])
    bad = _question(world, _clues(world, person.id, [solo, pair[0]]), path)
    assert "single_clue_selective" in shortcut_violations(bad, world)


def test_guessable_answer_rejects_few_or_popular_answers_and_keeps_rare_ones(world):
    from trajforge.generators.domains.search.shortcuts import answer_candidates, guessable

    people = [e for e in entities(world.graph) if e.type == "person"]
    asked = [
        _question(world, _clues(world, p.id, ["occupation", "award"]), _path(world, p.id, rel))
        for p in people
        for rel in (["born_in"], ["born_in", "part_of"])
    ]
    verdicts = [(q, guessable(q, world)) for q in asked]
    provinces = [v for q, v in verdicts if q.path[-1].predicate == "part_of"]
    assert all(v is not None and "part_of targets" in v for v in provinces)
    births = [(q, v) for q, v in verdicts if q.path[-1].predicate == "born_in"]
    assert all(len(answer_candidates(q, world)) >= 8 for q, _ in births)
    assert any(v is not None and "edges reach the answer" in v for _, v in births)  # popular
    assert any(v is None for _, v in births)  # a rare birthplace among >= 8 is kept
