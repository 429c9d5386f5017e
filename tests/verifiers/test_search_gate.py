"""The search domain through the whole gate: `evidence_not_covered` is a declared, counted
rejection of the outcome stage (never a dead letter), and each search check refuses a planted
fault while its corrected trajectory is kept."""

from __future__ import annotations

import json

import pytest

from trajforge.generators.domains import get_domain
from trajforge.generators.domains.search.data_model import world_for
from trajforge.generators.domains.search.gold_script import gold_script
from trajforge.generators.domains.search.world import entities
from trajforge.generators.personas import sample_persona
from trajforge.generators.scripted_trajectory import Call, Say, User, play_script
from trajforge.generators.task_verification import verify_task
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


@pytest.fixture(scope="module")
def chain_task(domain):
    """A task whose first hop (wo03 created_by pe30) is stated by d106 (gold) and d097."""
    return verify_task(domain, domain.synthesize_task(sample_persona(3), 12))


def _swap_reveal(task, late: bool):
    """The gold conversation with the read of d106 (which reveals pe30) replaced by d097,
    which states the same fact: in its place (`late=False`) or only after the agent has
    already searched pe30's name (`late=True`)."""
    script = gold_script(task)
    at = script.index(Call("open", {"doc_id": "d106"}))
    if not late:
        return [*script[:at], Call("open", {"doc_id": "d097"}), *script[at + 1 :]]
    answer = next(i for i, t in enumerate(script) if isinstance(t, Call) and t.name == "answer")
    late_read = [Call("search", {"query": "Linmel Rolinlin created", "k": 5})]
    late_read.append(Call("open", {"doc_id": "d097"}))
    return [*script[: at - 1], *script[at + 1 : answer], *late_read, *script[answer:]]


def test_a_name_queried_before_any_output_showed_it_breaks_the_chain(chain_task, domain):
    from trajforge.generators.domains.search.verification import evidence_not_covered

    late = play_script(chain_task, domain, _swap_reveal(chain_task, late=True))
    problem = evidence_not_covered(late)
    assert problem is not None and "(pe30) before it was shown" in problem
    # The same fact read from the other page, before the name is used, is a valid chain.
    early = play_script(chain_task, domain, _swap_reveal(chain_task, late=False))
    assert evidence_not_covered(early) is None


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


@pytest.mark.parametrize(
    ("closing", "before", "problem"),
    [
        ("The answer is Arhal, as stated in d118 and d329.", (), "d118, which it had not read"),
        ("The answer is Arhal (see d118 and d329).", [Call("open", {"doc_id": "d118"})],
         "d118, which states no fact it needed"),
        ("The answer is Arhal, as stated in 'Letters from Linquen'.", (),
         "cites no page stating the answer's fact"),
    ],
)  # fmt: skip
def test_citations_must_name_read_pages_stating_the_fact(task, domain, filters, closing, before,
                                                         problem):  # fmt: skip
    bad = gate_verdict(play_script(task, domain, _closing(task, closing, before)), domain, filters)
    assert not bad.kept
    (cited,) = [r for r in bad.reasons if r.check == "policy"]
    assert cited.reason == "policy.cite_read_documents" and problem in cited.detail


@pytest.mark.parametrize("by_id", [True, False])
def test_citations_of_read_pages_by_id_or_title_are_kept(task, domain, filters, by_id):
    kept = gate_verdict(play_script(task, domain, gold_script(task, by_id=by_id)), domain, filters)
    assert kept.kept, kept.reasons


def test_a_name_never_shown_in_the_closing_is_refused(task, domain, filters):
    good = play_script(task, domain, gold_script(task))
    seen = good.to_json().lower()
    world = world_for(task.initial_state.seed)
    other = next(e.name for e in entities(world.graph) if e.name.split()[-1].lower() not in seen)
    bad = _closing(task, f"The answer is Arhal, as stated in d329; {other} is related.")
    verdict = gate_verdict(play_script(task, domain, bad), domain, filters)
    assert [r.reason for r in verdict.reasons] == ["hallucinated_value"]
    fine = _closing(task, "The answer is Arhal, as stated in d329, which names Rise Halmir.")
    assert gate_verdict(play_script(task, domain, fine), domain, filters).kept


def test_a_user_turn_naming_the_answer_is_refused_unless_the_agent_said_it(task, domain, filters):
    leak = gold_script(task)
    leak[0] = User(f"{leak[0].text} My friend thinks it is Arhal.")
    verdict = gate_verdict(play_script(task, domain, leak), domain, filters)
    assert "user_hallucination" in {r.reason for r in verdict.reasons}
    echo = gold_script(task)
    echo[-1] = User("Arhal, great. Thank you, that is all. ###STOP###")
    assert gate_verdict(play_script(task, domain, echo), domain, filters).kept


def _with_searches(task, queries):
    """The gold conversation with more searches just before the answer."""
    script = gold_script(task)
    at = next(i for i, t in enumerate(script) if isinstance(t, Call) and t.name == "answer")
    searches = [Call("search", {"query": q, "k": k}) for q, k in queries]
    return [*script[:at], *searches, *script[at:]]


def test_the_same_search_in_other_words_three_times_is_a_loop(task, domain, filters):
    variants = [("Arhal born", 5), ("born, Arhal?", 3), ("please find Arhal born", 10)]
    looping = play_script(task, domain, _with_searches(task, variants))
    assert "loop_or_repeat" in {r.reason for r in gate_verdict(looping, domain, filters).reasons}
    # Guard: queries about other names, attributes or relations are new queries.
    distinct = [("Arhal born", 5), ("Arhal based", 5), ("Arhal 13th century", 5)]
    assert gate_verdict(
        play_script(task, domain, _with_searches(task, distinct)), domain, filters
    ).kept
