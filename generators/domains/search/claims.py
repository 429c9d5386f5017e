"""What a search agent's text claims, checked against what it read: citations and names.

Two claim types:

- **citation**: a document the agent names as its source, by id (`d042`) or by title (quoted,
  or a part title such as `Arhal: notes`, which is never a bare entity name). A cited document
  must have been read before the citing message (opened, or a `find` in it returned a sentence)
  and what the agent read of it must state a fact of the question; a message that states the
  answer and cites pages must cite one stating a fact about the answer entity (the last hop or
  the answer's own clue). A listed search result is not read; a page about something else is
  not the source of the answer.
- **named entity**: every name of the world the agent writes (prose, capitalised) or passes to a
  tool was shown to it first by a tool output or a user turn (names.py).
- **the answer**: the agent first states the answer (in prose or in the `answer` call) only
  after a document it read (opened, or a `find` in it) stated the chain's last fact. A search
  snippet that happens to mention the answer's name in another connection is not evidence,
  and neither is the `answer` tool's echo.

All are `TrajectoryCheck`s the domain declares (checks.py): the first under the policy filter
(`policy.cite_read_documents`), the second under the hallucinated-values filter, the third
under answer-before-evidence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from trajforge.generators.domains.search.data_model import SearchWorld, normalise_answer, world_for
from trajforge.generators.domains.search.names import (
    full_names,
    mentions,
    unshown_names,
    world_name_tokens,
)
from trajforge.generators.domains.search.questions import Question
from trajforge.generators.domains.search.tasks import synthesized_for
from trajforge.generators.domains.search.verification import step_facts
from trajforge.schemas import Message, StepRecord, Trajectory

_DOC_ID = re.compile(r"\bd\d{3}\b")
#: Words that, right before a quoted name, make it a source: "stated on 'Arhal'", "per 'Arhal'".
_CUE = re.compile(
    r"(?:\bpages?|\bdocuments?|\barticles?|\brecords?|\bentry|\bentries|\bsources?"
    r"|\bstated (?:in|on)|\bsays?|\baccording to|\bread(?: it)?(?: in| on)?|\bfrom|\bcited?"
    r"|\bsee|\bper|\bchecked|\bfound (?:this |it )?(?:in|on)|\bbased on|\bvia"
    r"|\b(?:mentioned|listed|shown) (?:in|on))\s*[:(]?\s*$",
    re.IGNORECASE,
)
#: What joins a list of cited titles: "stated on 'A' and 'B'".
_LIST = re.compile(r"^\s*(?:,|,? and|&|or|,? as well as)\s*$", re.IGNORECASE)
_QUOTED = re.compile(r"'([^']+)'|\"([^\"]+)\"|\u2018([^\u2019]+)\u2019|\u201c([^\u201d]+)\u201d")


def question_of(trajectory: Trajectory) -> tuple[Question, SearchWorld] | None:
    """The task's question and world, or None when it does not re-derive (the outcome check
    reports that case)."""
    task = trajectory.task
    found = synthesized_for(task.initial_state.seed, task.persona.id)
    if found is None or (found.question.answer,) != task.expected_outputs:
        return None
    return found.question, world_for(task.initial_state.seed)


def _quoted_citations(text: str, titles: dict[str, str]) -> list[str]:
    """Quoted titles a text cites. A part title (`Arhal: notes`) always is one; a quoted bare
    entity name only right after a citing word ("stated on 'Arhal'", "per 'Arhal'") or after
    another cited title in a list: in "the answer is 'Arhal'" or "born in 'Arhal'" it names the
    entity, not a page."""
    cited, previous_end, previous_cited = [], 0, False
    for match in _QUOTED.finditer(text):
        quoted = next(g for g in match.groups() if g is not None).strip().rstrip(".").lower()
        gap = text[previous_end : match.start()]
        is_title = quoted in titles and (
            ":" in quoted
            or _CUE.search(gap) is not None
            or (previous_cited and _LIST.match(gap) is not None)
        )
        if is_title:
            cited.append(titles[quoted])
        previous_end, previous_cited = match.end(), is_title
    return cited


def cited_documents(text: str, world: SearchWorld) -> list[str]:
    """Document ids a text cites: ids, quoted titles, and part titles written out."""
    titles = {d.title.lower(): d.doc_id for d in world.documents}
    cited = [d for d in _DOC_ID.findall(text) if d in world.by_id]
    cited += _quoted_citations(text, titles)
    lowered = text.lower()
    for title, doc_id in titles.items():
        if ":" in title and title in lowered:
            cited.append(doc_id)
    return list(dict.fromkeys(cited))


@dataclass
class _Reading:
    """What the agent has read so far, per document (facts it was shown of each)."""

    read: dict[str, set[str]] = field(default_factory=dict)

    def learn(self, step: StepRecord, world: SearchWorld) -> None:
        facts = step_facts(step, world)
        if step.error is None and step.call.name in ("open", "find"):
            doc_id = str(step.call.arguments.get("doc_id", "")).strip()
            if doc_id in world.by_id and (facts or step.call.name == "open"):
                self.read.setdefault(doc_id, set()).update(facts)


def _answer_facts(question: Question) -> frozenset[str]:
    return frozenset(f for f in question.facts if question.answer_id in f.split("|")[::2])


def _states_answer(text: str, question: Question) -> bool:
    return normalise_answer(question.answer) in normalise_answer(text)


def _citation_problems(
    index: int, message: Message, reading: _Reading, question: Question, world: SearchWorld
) -> list[str]:
    cited = cited_documents(message.content or "", world)
    problems = []
    for doc_id in cited:
        if doc_id not in reading.read:
            problems.append(f"message {index} cites {doc_id}, which it had not read")
        elif not reading.read[doc_id] & question.facts:
            problems.append(f"message {index} cites {doc_id}, which states no fact it needed")
    if cited and _states_answer(message.content or "", question):
        shown = set().union(*(reading.read.get(d, set()) for d in cited))
        if not shown & _answer_facts(question):
            problems.append(f"message {index} cites no page stating the answer's fact")
    return problems


def citation_problems(trajectory: Trajectory) -> list[str]:
    """Citations of unread documents, of pages stating no needed fact, or of no page stating
    the answer's fact (empty when every citation holds)."""
    found = question_of(trajectory)
    if found is None:
        return []
    question, world = found
    steps = {s.call.id: s for s in trajectory.steps}
    reading, problems = _Reading(), []
    for index, message in enumerate(trajectory.messages):
        if message.role != "assistant":
            continue
        if message.content:
            problems += _citation_problems(index, message, reading, question, world)
        for call in message.tool_calls:
            if call.id in steps:
                reading.learn(steps[call.id], world)
    return problems


def unshown_name_problems(trajectory: Trajectory) -> list[str]:
    """Names of the world the agent wrote or passed before anything showed them."""
    seed = trajectory.task.initial_state.seed
    return [
        f"message {index} names {'/'.join(parts)} before any tool output or user turn showed it"
        for index, parts in unshown_names(
            trajectory.messages, world_name_tokens(seed), full_names(seed).values()
        )
    ]


def _states(message: Message, answer: str) -> bool:
    """The message says the answer in prose or gives it to the `answer` tool."""
    texts = [message.content or ""]
    texts += [str(c.arguments.get("text", "")) for c in message.tool_calls if c.name == "answer"]
    return any(mentions(t.lower(), answer) for t in texts)


def unread_answer_problems(trajectory: Trajectory) -> list[str]:
    """The answer stated before any document the agent read stated the last fact of the chain."""
    found = question_of(trajectory)
    if found is None:
        return []
    question, world = found
    last, answer = question.path[-1].key, question.answer.lower()
    steps, read = {s.call.id: s for s in trajectory.steps}, set()
    for index, message in enumerate(trajectory.messages):
        if message.role != "assistant":
            continue
        if _states(message, answer) and last not in read:
            return [
                f"message {index} states {question.answer} before a read document stated {last}"
            ]
        for call in message.tool_calls:
            if call.id in steps:
                read |= step_facts(steps[call.id], world)
    return []
