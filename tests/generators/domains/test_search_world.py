"""Search world and corpus: deterministic per seed, fictional, functional relations, tools."""

from trajforge.generators.domains.search.corpus import render_corpus
from trajforge.generators.domains.search.data_model import SearchState, normalise_answer
from trajforge.generators.domains.search.tools import TOOLS
from trajforge.generators.domains.search.world import RELATIONS, entities, generate_world
from trajforge.generators.tooling import Toolbox
from trajforge.schemas import ToolCall


def _snapshot(seed):
    graph = generate_world(seed)
    nodes = [e.model_dump() for e in entities(graph)]
    edges = sorted(graph.edges(keys=True))
    docs = [d.model_dump() for d in render_corpus(graph)]
    return nodes, edges, docs


def test_graph_and_corpus_are_deterministic_per_seed():
    assert _snapshot(4) == _snapshot(4)
    assert _snapshot(4) != _snapshot(5)


def test_relations_are_functional_and_typed():
    graph = generate_world(2)
    kinds = {e.id: e.type for e in entities(graph)}
    for node in graph.nodes:
        keys = [k for _, _, k in graph.out_edges(node, keys=True)]
        assert len(keys) == len(set(keys)), f"{node} has two targets for one relation"
    for src, dst, key in graph.edges(keys=True):
        assert (kinds[src], kinds[dst]) == (RELATIONS[key].source, RELATIONS[key].target)


def test_every_fact_is_stated_and_spread_over_documents():
    graph = generate_world(3)
    docs = render_corpus(graph)
    stated = set().union(*(d.facts for d in docs))
    for e in entities(graph):
        own = {f"{e.id}|{a}|{v}" for a, v in e.attrs.items()}
        assert own <= stated
        assert not any(own <= d.facts for d in docs if d.title == e.name), "facts not spread"
    assert all(f"{s}|{k}|{d}" in stated for s, d, k in graph.edges(keys=True))
    assert any(d.title.startswith("Index of") for d in docs)  # distractors exist


def test_names_are_unique():
    names = [e.name for e in entities(generate_world(9))]
    assert len(names) == len(set(names))


def _call(toolbox, state, name, **arguments):
    return toolbox.execute(state, ToolCall(id="c", name=name, arguments=arguments))


def test_tools_read_the_corpus_and_answer_writes_once():
    toolbox = Toolbox(TOOLS)
    state = SearchState(world_seed=3)
    doc = render_corpus(generate_world(3))[0]
    hits = _call(toolbox, state, "search", query=doc.title, k=3)
    assert hits.error is None and doc.doc_id in hits.observation
    opened = _call(toolbox, state, "open", doc_id=doc.doc_id)
    assert doc.text in opened.observation
    word = doc.text.split()[0]
    assert word in _call(toolbox, state, "find", doc_id=doc.doc_id, text=word).observation
    assert _call(toolbox, state, "open", doc_id="d999").error == "tool_error"
    assert _call(toolbox, state, "search", query="x", k=50).error == "tool_error"
    assert _call(toolbox, state, "answer", text="The Arvi Press.").diff[0].after == "arvi press"
    assert _call(toolbox, state, "answer", text="Other").error == "tool_error"
    assert state.answer == "arvi press"


def test_answer_normalisation():
    assert normalise_answer("  The Velmora   Press. ") == normalise_answer("velmora press")
    assert normalise_answer("Velmora") != normalise_answer("Velmora Press")
