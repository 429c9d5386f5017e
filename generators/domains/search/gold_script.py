"""A search task's gold plan as a conversation script: the good base that tests and the search
corruption benchmark plant their faults into.

The user asks the question; the agent searches and opens each gold document in chain order,
answers through the `answer` tool and closes citing the documents that state the answer's
facts; the user thanks it and stops. Played with `play_script`, it passes the whole gate.
"""

from __future__ import annotations

from trajforge.generators.domains.search.data_model import world_for
from trajforge.generators.domains.search.evidence import GOLD_K
from trajforge.generators.domains.search.synthesis import Synthesized
from trajforge.generators.domains.search.tasks import synthesized_for
from trajforge.generators.scripted_trajectory import Call, Say, Turn, User
from trajforge.schemas import Task


def synthesized(task: Task) -> Synthesized:
    """The question behind a search task (re-derived from its seed and persona)."""
    found = synthesized_for(task.initial_state.seed, task.persona.id)
    if found is None:
        raise ValueError(f"task {task.id}: no search question re-derives from its seed")
    return found


def answer_sources(task: Task) -> list[str]:
    """Gold documents that state a fact about the answer entity, in reading order."""
    found = synthesized(task)
    world = world_for(task.initial_state.seed)
    answer = found.question.answer_id
    facts = {f for f in found.question.facts if answer in f.split("|")[::2]}
    docs = [s.doc_id for s in found.evidence if world.by_id[s.doc_id].facts & facts]
    return list(dict.fromkeys(docs))


def cite(task: Task, doc_ids: list[str], by_id: bool = False) -> str:
    """Documents named as a reader cites them: quoted titles, or bare ids."""
    world = world_for(task.initial_state.seed)
    names = doc_ids if by_id else [f"'{world.by_id[d].title}'" for d in doc_ids]
    return " and ".join(names)


def gold_script(task: Task, by_id: bool = False) -> list[Turn]:
    """User question, gold reads in order, the answer, a closing citing its sources, goodbye."""
    found = synthesized(task)
    script: list[Turn] = [User(f"Hello, I would like to know: {found.question.text}")]
    for step in found.evidence:
        script.append(Call("search", {"query": step.query, "k": GOLD_K}))
        script.append(Call("open", {"doc_id": step.doc_id}))
    answer = found.question.answer
    sources = cite(task, answer_sources(task), by_id)
    script += [
        Call("answer", {"text": answer}),
        Say(f"The answer is {answer}, as stated in {sources}."),
        User("Thank you, that is all. ###STOP###"),
    ]
    return script
