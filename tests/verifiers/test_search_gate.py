"""The search domain through the whole gate: `evidence_not_covered` is a declared, counted
rejection of the outcome stage (never a dead letter), and each search check refuses a planted
fault while its corrected trajectory is kept."""

from __future__ import annotations

import json

import pytest

from trajforge.generators.domains import get_domain
from trajforge.generators.domains.search.data_model import world_for
from trajforge.generators.domains.search.gold_script import (
    answer_sources,
    gold_script,
    synthesized,
)
from trajforge.generators.domains.search.world import entities, entity
from trajforge.generators.personas import sample_persona
from trajforge.generators.scripted_trajectory import Call, Say, User, play_script
from trajforge.generators.task_verification import verify_task
from trajforge.generators.tooling import TaskRejected
from trajforge.pipelines import stages
from trajforge.pipelines.cli import main
from trajforge.pipelines.config import BuildConfig
from trajforge.pipelines.resources import StageResources
from trajforge.verifiers.filters import DEFAULT_FILTERS, build_filters
from trajforge.verifiers.gate import gate_verdict


@pytest.fixture(scope="module")
def domain():
    return get_domain("search")


@pytest.fixture(scope="module")
def task(domain):
    return verify_task(domain, domain.synthesize_task(sample_persona(3), 11))


@pytest.fixture(scope="module")
def filters():
    return build_filters(DEFAULT_FILTERS)


def reasons(trajectory, domain, filters) -> set[str]:
    return {r.reason for r in gate_verdict(trajectory, domain, filters).reasons}


def _unread(task, domain):
    """The gold conversation with every `open` dropped: right answer, no evidence read."""
    script = [t for t in gold_script(task) if not (isinstance(t, Call) and t.name == "open")]
    return play_script(task, domain, script)


def test_gold_script_passes_the_whole_gate(task, domain, filters):
    verdict = gate_verdict(play_script(task, domain, gold_script(task)), domain, filters)
    assert verdict.kept, verdict.reasons


def test_unread_evidence_is_a_declared_outcome_rejection(task, domain, filters):
    verdict = gate_verdict(_unread(task, domain), domain, filters)
    outcome = [r for r in verdict.reasons if r.check == "outcome"]
    assert [r.reason for r in outcome] == ["evidence_not_covered"]


def test_outcome_stage_rejects_unread_evidence_instead_of_dead_lettering(task, domain, tmp_path):
    config = BuildConfig.model_validate(
        {
            "domain": "search",
            "num_tasks": 1,
            "roles": {"agent": {"kind": "scripted", "responder": "blueprint"}},
        }
    )
    res = StageResources(config, str(tmp_path))
    res.setup()
    with pytest.raises(stages.RejectedRecord) as refused:
        stages.verify_outcome(res, _unread(task, domain))
    assert refused.value.reason == "evidence_not_covered"
    good = stages.verify_outcome(res, play_script(task, domain, gold_script(task)))
    assert good.outcome is not None and good.outcome.passed


def test_trajforge_verify_reports_unread_evidence(task, domain, tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text(_unread(task, domain).to_json() + "\n")
    out = tmp_path / "verdicts.jsonl"
    assert main(["verify", "--input", str(source), "--output", str(out)]) == 0
    (verdict,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert not verdict["kept"]
    assert "evidence_not_covered" in {r["reason"] for r in verdict["reasons"]}


def _answer_first(task):
    """The gold conversation with the `answer` call moved before every read."""
    script = gold_script(task)
    answer = next(t for t in script if isinstance(t, Call) and t.name == "answer")
    rest = [t for t in script[1:] if t is not answer]
    return [script[0], answer, *rest]


def test_answering_through_the_tool_before_the_evidence_is_refused(task, domain):
    from trajforge.verifiers.signatures import check_answer_before_evidence

    early = check_answer_before_evidence(play_script(task, domain, _answer_first(task)))
    assert early.reason == "answer_before_evidence"
    assert task.expected_outputs[0].lower() in early.detail
    assert check_answer_before_evidence(play_script(task, domain, gold_script(task))).passed


def _reveal_swaps(task):
    """(late, early) scripts for each non-final hop whose fact another page states too: the
    gold read of the page revealing the hop's entity replaced by the other page, read only
    before the answer (`late`: the entity's name is searched before anything showed it), or
    in its place (`early`: a valid chain)."""
    found, world = synthesized(task), world_for(task.initial_state.seed)
    script = gold_script(task)
    answer_at = next(i for i, t in enumerate(script) if isinstance(t, Call) and t.name == "answer")
    for hop in found.question.path[:-1]:
        gold = next(s.doc_id for s in found.evidence if hop.key in world.by_id[s.doc_id].facts)
        needed = world.by_id[gold].facts & found.question.facts
        other = [d.doc_id for d in world.documents if needed <= d.facts and d.doc_id != gold]
        if not other:
            continue
        at = script.index(Call("open", {"doc_id": gold}))
        swap = Call("open", {"doc_id": other[0]})
        late = [*script[: at - 1], *script[at + 1 : answer_at], swap, *script[answer_at:]]
        yield hop, late, [*script[:at], swap, *script[at + 1 :]]


def test_a_name_queried_before_any_output_showed_it_breaks_the_chain(domain):
    from trajforge.generators.domains.search.verification import evidence_not_covered

    broken = 0
    for persona, seed in [(p, s) for p in (3, 4) for s in range(10, 20)]:
        try:
            task = verify_task(domain, domain.synthesize_task(sample_persona(persona), seed))
        except TaskRejected:  # a world with no question left
            continue
        for hop, late, early in _reveal_swaps(task):
            # The same fact read from the other page, before the name is used, is a valid chain.
            assert evidence_not_covered(play_script(task, domain, early)) is None
            problem = evidence_not_covered(play_script(task, domain, late)) or ""
            broken += f"({hop.object}) before it was shown" in problem
    assert broken >= 5


def test_evidence_read_only_after_the_answer_does_not_cover_it(task, domain):
    from trajforge.generators.domains.search.verification import evidence_not_covered

    problem = evidence_not_covered(play_script(task, domain, _answer_first(task)))
    assert problem is not None and "no document read before the answer" in problem
    assert evidence_not_covered(play_script(task, domain, gold_script(task))) is None


def _closing(task, text, before=()):
    """The gold conversation with its closing replaced (and `before` turns inserted after the
    first search)."""
    script = gold_script(task)
    script = [Say(text) if isinstance(t, Say) else t for t in script]
    return [*script[:2], *before, *script[2:]]


@pytest.fixture(scope="module")
def case(task, domain):
    """Names and pages of the fixture task the claims below are built from."""
    found, world = synthesized(task), world_for(task.initial_state.seed)
    good = play_script(task, domain, gold_script(task))
    read = {s.doc_id for s in found.evidence}
    listed = json.loads(good.messages[3].content)  # the first search's results
    facts = found.question.facts
    return {
        "answer": found.question.answer,
        "source": answer_sources(task)[0],
        "listed": next(r["doc_id"] for r in listed if r["doc_id"] not in read),
        "aside": next(d.doc_id for d in world.documents if not d.facts & facts),
        "anchor_page": world.by_id[found.evidence[0].doc_id].title,
        "between": entity(world.graph, found.question.chain[1]).name,
        "unseen": next(
            e.name
            for e in entities(world.graph)
            if e.name.split()[-1].lower() not in good.to_json().lower()
        ),
    }


@pytest.mark.parametrize(
    ("closing", "before", "problem"),
    [
        ("The answer is {answer}, as stated in {listed} and {source}.", False,
         "{listed}, which it had not read"),
        ("The answer is {answer} (see {aside} and {source}).", True,
         "{aside}, which states no fact it needed"),
        ("The answer is {answer}, as stated in '{anchor_page}'.", False,
         "cites no page stating the answer's fact"),
    ],
)  # fmt: skip
def test_citations_must_name_read_pages_stating_the_fact(
    task, domain, filters, case, closing, before, problem
):
    extra = [Call("open", {"doc_id": case["aside"]})] if before else []
    script = _closing(task, closing.format(**case), extra)
    bad = gate_verdict(play_script(task, domain, script), domain, filters)
    (cited,) = [r for r in bad.reasons if r.check == "policy"]
    assert cited.reason == "policy.cite_read_documents"
    assert problem.format(**case) in cited.detail


@pytest.mark.parametrize("by_id", [True, False])
def test_citations_of_read_pages_by_id_or_title_are_kept(task, domain, filters, by_id):
    kept = gate_verdict(play_script(task, domain, gold_script(task, by_id=by_id)), domain, filters)
    assert kept.kept, kept.reasons


def test_a_name_never_shown_in_the_closing_is_refused(task, domain, filters, case):
    said = "The answer is {answer}, as stated in {source}; {unseen} is related."
    verdict = gate_verdict(
        play_script(task, domain, _closing(task, said.format(**case))), domain, filters
    )
    assert [r.reason for r in verdict.reasons] == ["hallucinated_value"]
    said = "The answer is {answer}, as stated in {source}, which I reached through {between}."
    assert gate_verdict(
        play_script(task, domain, _closing(task, said.format(**case))), domain, filters
    ).kept


def test_a_user_turn_naming_the_answer_is_refused_unless_the_agent_said_it(
    task, domain, filters, case
):
    leak = gold_script(task)
    leak[0] = User(f"{leak[0].text} My friend thinks it is {case['answer']}.")
    verdict = gate_verdict(play_script(task, domain, leak), domain, filters)
    # the search domain's own check says user_hallucination; the generic answer-words check
    # (issue 27) may refuse the same turn first as user_states_answer
    assert {r.reason for r in verdict.reasons} & {"user_hallucination", "user_states_answer"}
    echo = gold_script(task)
    echo[-1] = User(f"{case['answer']}, great. Thank you, that is all. ###STOP###")
    assert gate_verdict(play_script(task, domain, echo), domain, filters).kept


def _with_searches(task, queries):
    """The gold conversation with more searches just before the answer."""
    script = gold_script(task)
    at = next(i for i, t in enumerate(script) if isinstance(t, Call) and t.name == "answer")
    searches = [Call("search", {"query": q, "k": k}) for q, k in queries]
    return [*script[:at], *searches, *script[at:]]


def test_the_same_search_in_other_words_three_times_is_a_loop(task, domain, filters, case):
    name = case["between"]
    variants = [(f"{name} born", 5), (f"born, {name}?", 3), (f"please find {name} born", 10)]
    looping = play_script(task, domain, _with_searches(task, variants))
    assert "loop_or_repeat" in {r.reason for r in gate_verdict(looping, domain, filters).reasons}
    # Guard: queries about other names, attributes or relations are new queries.
    distinct = [(f"{name} born", 5), (f"{name} works", 5), (f"{name} mentored", 5)]
    assert gate_verdict(
        play_script(task, domain, _with_searches(task, distinct)), domain, filters
    ).kept


@pytest.mark.parametrize(
    "closing",
    [
        "The answer is '{answer}', as stated in {source}.",
        "It is '{answer}' (see {source}); I reached it through '{between}'.",
    ],
)
def test_a_quoted_name_is_not_a_citation_unless_a_citing_word_precedes_it(
    task, domain, filters, case, closing
):
    script = _closing(task, closing.format(**case))
    verdict = gate_verdict(play_script(task, domain, script), domain, filters)
    assert verdict.kept, verdict.reasons


def test_the_answer_said_before_a_read_page_stated_it_is_refused(task, domain):
    from trajforge.generators.domains.search.claims import unread_answer_problems

    found, world = synthesized(task), world_for(task.initial_state.seed)
    last = found.question.path[-1].key
    script = gold_script(task)
    at = next(i for i, t in enumerate(script) if isinstance(t, Call) and t.name == "open"
              and last in world.by_id[t.arguments["doc_id"]].facts)  # fmt: skip
    early = [*script[:at], Say(f"It should be {found.question.answer}."), *script[at:]]
    (problem,) = unread_answer_problems(play_script(task, domain, early))
    assert "before a read document stated" in problem
    assert unread_answer_problems(play_script(task, domain, script)) == []
