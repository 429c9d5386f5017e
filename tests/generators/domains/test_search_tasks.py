"""Search tasks: gold answers reachable from gold evidence, task verification, outcome checks."""

import asyncio
import random

import pytest

from trajforge.generators.agent import OracleAgent
from trajforge.generators.blueprint import run_blueprint
from trajforge.generators.domains import get_domain
from trajforge.generators.domains.search.bm25 import tokenize
from trajforge.generators.domains.search.corpus import Fact, sentence
from trajforge.generators.domains.search.data_model import world_for
from trajforge.generators.domains.search.evidence import resolve_from_evidence
from trajforge.generators.domains.search.synthesis import synthesize_question
from trajforge.generators.domains.search.tasks import synthesized_for
from trajforge.generators.domains.search.verification import evidence_not_covered
from trajforge.generators.domains.search.world import ATTRIBUTES, RELATIONS, TYPE_NOUNS
from trajforge.generators.llm.responders import RESPONDERS
from trajforge.generators.llm.scripted import ScriptedLLM
from trajforge.generators.personas import sample_persona
from trajforge.generators.rollout import run_rollout
from trajforge.generators.task_verification import verify_task
from trajforge.generators.user import ScriptedUser
from trajforge.schemas import Message, Provenance, StepRecord, ToolCall
from trajforge.verifiers.outcome import judge_outcome, verify_outcome
from trajforge.verifiers.signatures import check_answer_before_evidence

#: Words a searcher may always use: relation and attribute vocabulary, never a fact.
VOCABULARY = set(
    tokenize(
        " ".join(f"{r.keyword} {r.reverse.format(s='', o='')}" for r in RELATIONS.values())
        + " ".join(a.replace("_", " ") for attrs in ATTRIBUTES.values() for a in attrs)
        + " ".join(TYPE_NOUNS.values())
    )
)
PROVENANCE = Provenance(models={}, seeds={}, config_hash="test", trajforge_version="test")


def _questions(n_worlds=4, per_world=10):
    for seed in range(n_worlds):
        world, rng = world_for(seed), random.Random(seed)
        for _ in range(per_world):
            found = synthesize_question(world, rng)
            if found is not None:
                yield world, found


def test_every_gold_answer_is_reachable_by_following_the_gold_evidence():
    checked = 0
    for world, found in _questions():
        q = found.question
        docs = [s.doc_id for s in found.evidence]
        assert resolve_from_evidence(q, world, docs) == q.answer_id
        # Each gold query uses only words from the question or from documents read before it.
        known = set(tokenize(q.text)) | VOCABULARY
        for step in found.evidence:
            assert set(tokenize(step.query)) <= known, (step.query, q.text)
            known |= set(tokenize(world.by_id[step.doc_id].text))
        # No one document suffices (co-coverage), and the answer is not readable without them.
        assert all(resolve_from_evidence(q, world, [d]) != q.answer_id for d in docs)
        assert resolve_from_evidence(q, world, docs[:-1]) != q.answer_id
        checked += 1
    assert checked >= 30


def test_synthesis_is_deterministic_and_covers_every_hop_count():
    first = [(f.question, f.evidence) for _, f in _questions(2, 5)]
    assert first == [(f.question, f.evidence) for _, f in _questions(2, 5)]
    assert {f.question.hops for _, f in _questions()} == {2, 3, 4, 5}


@pytest.fixture(scope="module")
def domain():
    return get_domain("search")


@pytest.fixture(scope="module")
def task(domain):
    return verify_task(domain, domain.synthesize_task(sample_persona(3), 11))


def test_task_passes_pre_rollout_verification(task):
    assert task.verification.passed
    assert task.intent.task_types == ("multi_hop_question",)
    assert 2 <= task.intent.complexity <= 5
    assert task.gold_actions[-1].name == "answer"
    assert task.expected_outputs == (task.gold_actions[-1].arguments["text"],)
    assert task.expected_outputs[0] not in task.scenario.instructions


def _oracle(task, domain):
    agent, user = OracleAgent(task), ScriptedUser(task)
    return asyncio.run(
        run_rollout(task, domain, agent, user, max_turns=20, max_steps=40, seed=1,
                    provenance=PROVENANCE)
    )  # fmt: skip


def test_oracle_rollout_passes_outcome_and_signatures(task, domain):
    trajectory = _oracle(task, domain)
    assert verify_outcome(trajectory, domain).passed
    assert check_answer_before_evidence(trajectory).passed


def _without_steps(trajectory, keep):
    """The trajectory with only the tool steps (and their messages) that `keep` accepts."""
    dropped = {s.call.id for s in trajectory.steps if not keep(s)}
    messages = [
        m
        for m in trajectory.messages
        if not (m.tool_call_id in dropped or any(c.id in dropped for c in m.tool_calls))
    ]
    steps = [s for s in trajectory.steps if s.call.id not in dropped]
    return trajectory.model_copy(update={"messages": tuple(messages), "steps": tuple(steps)})


def test_right_answer_without_opening_the_evidence_is_rejected(task, domain):
    guessed = _without_steps(_oracle(task, domain), lambda s: s.call.name == "answer")
    result, reason = judge_outcome(guessed, domain)
    assert result.state_match and not result.passed
    assert reason == "evidence_not_covered"


def test_wrong_answer_is_a_state_mismatch(task, domain):
    trajectory = _oracle(task, domain)
    wrong = ToolCall(id="call_x", name="answer", arguments={"text": "Nobody"})
    step = StepRecord(index=0, turn=0, call=wrong, result="Answer recorded: Nobody", mutating=True)
    swapped = _without_steps(trajectory, lambda s: s.call.name != "answer")
    swapped = swapped.model_copy(
        update={
            "steps": (*swapped.steps, step),
            "messages": (*swapped.messages, Message(role="assistant", tool_calls=(wrong,))),
        }
    )
    assert judge_outcome(swapped, domain).rejection == "state_mismatch"


def _steps_trajectory(task, domain, calls):
    """The task's trajectory made of exactly these calls, executed for real."""
    state = domain.initial_state(task.initial_state)
    steps = []
    for i, (name, arguments) in enumerate(calls):
        call = ToolCall(id=f"c{i}", name=name, arguments=arguments)
        run = domain.toolbox.execute(state, call)
        steps.append(
            StepRecord(index=i, turn=0, call=call, result=None if run.error else run.observation,
                       error=run.observation if run.error else None)
        )  # fmt: skip
    return _oracle(task, domain).model_copy(update={"steps": tuple(steps)})


def test_equivalent_documents_and_found_sentences_count_as_evidence(task, domain):
    found = synthesized_for(task.initial_state.seed, task.persona.id)
    world = world_for(task.initial_state.seed)
    gold = {s.doc_id for s in found.evidence}
    facts = sorted(found.question.facts)
    # Any document stating a fact is evidence for it (prefer non-gold ones where they exist).
    docs = []
    for key in facts:
        stating = [d.doc_id for d in world.documents if key in d.facts]
        docs.append(next((d for d in stating if d not in gold), stating[0]))
    opened = _steps_trajectory(task, domain, [("open", {"doc_id": d}) for d in docs])
    assert evidence_not_covered(opened) is None
    # `find` showing the fact's sentence counts for that fact, and only for it.
    finds = [
        ("find", {"doc_id": d, "text": sentence(world.graph, Fact.from_key(k))[:-1]})
        for d, k in zip(docs, facts, strict=True)
        if sentence(world.graph, Fact.from_key(k)) in world.by_id[d].text
    ]
    rest = [("open", {"doc_id": d}) for d, k in zip(docs, facts, strict=True)
            if sentence(world.graph, Fact.from_key(k)) not in world.by_id[d].text]  # fmt: skip
    assert finds
    assert evidence_not_covered(_steps_trajectory(task, domain, finds + rest)) is None
    missing = _steps_trajectory(task, domain, finds[1:] + rest)
    assert "evidence_not_covered" in evidence_not_covered(missing)


def test_blueprint_asks_nothing_twice_and_confirms_no_answer(task, domain):
    llm = ScriptedLLM(responder=RESPONDERS["blueprint"])
    trajectory = asyncio.run(
        run_blueprint(task, domain, llm, model="m", seed=1, provenance=PROVENANCE)
    )
    texts = [m.content or "" for m in trajectory.messages if m.role in ("user", "assistant")]
    question = task.scenario.known_info["question"]
    assert sum(question in t for t in texts) == 1  # said once, in the opening
    assert not any("confirm" in t.lower() for t in texts)
    assert verify_outcome(trajectory, domain).passed
    assert check_answer_before_evidence(trajectory).passed
