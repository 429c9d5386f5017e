"""The simulated user must not invent facts.

A user simulator that makes up an order id, an email or a zip code the scenario never gave it
turns the conversation into one the real task cannot produce (and may hand the agent the answer).
The allowed facts are the scenario (known info, instructions, reason for contact), the persona's
name and background, and whatever the agent has said to the user so far.

Values are read by kind: tokens with digits (`generators.values`), and by the value grammar
(`generators.value_grammar`) street addresses in either form, dates with a month name and money
without cents ("$812"), which carry no token the digit rule keeps. Beyond values, the domain
declares its answer words (`DomainVocabulary.answer_words`: statuses, outcomes): a user turn
that states one, or a worded expected output of its task, that nothing it was given holds is
telling the agent what the agent must look up (`user_states_answer`).
"""

from __future__ import annotations

import re
from typing import ClassVar

from trajforge.generators.roles import narrates
from trajforge.generators.user import looks_like_agent
from trajforge.generators.value_grammar import typed_values
from trajforge.generators.values import extract_values, normalise, whole_token_in
from trajforge.schemas import RejectionReason, Trajectory
from trajforge.verifiers.protocol import FilterContext, FilterModel
from trajforge.verifiers.result import FilterResult
from trajforge.verifiers.text import Evidence, message_text

# "my name is Ann Lee", "I'm Ann Lee", "this is Ann Lee": a name the user asserts.
_NAME_CLAIM = re.compile(
    r"\b(?:my name is|i am|i'm|this is|name's)\s+([A-Z][a-z]+(?:\s+[A-Z][a-z]+)+)"
)


def _scenario_evidence(trajectory: Trajectory) -> Evidence:
    task = trajectory.task
    evidence = Evidence()
    evidence.add(task.scenario.reason_for_contact)
    evidence.add(task.scenario.instructions)
    evidence.add(task.persona.name)
    evidence.add(task.persona.background)
    for label, value in task.scenario.known_info.items():
        evidence.add(f"{label}: {value}")
    return evidence


def _scenario_text(trajectory: Trajectory) -> list[str]:
    task = trajectory.task
    s = task.scenario
    return [s.reason_for_contact, s.instructions, task.persona.name, task.persona.background]


class _Grammar:
    """The keys of grammar values (addresses, worded dates, money) a speaker was given."""

    def __init__(self) -> None:
        self.keys: set[str] = set()

    def add(self, text: str | None) -> None:
        if text:
            self.keys |= {_loose(v.key) for v in typed_values(text)}
            self.keys |= {_loose(f"date:{v[5:]}") for v in extract_values(text) if _ISO.match(v)}

    def supports(self, key: str, evidence: Evidence) -> bool:
        return _loose(key) in self.keys or (key.startswith("amount:") and evidence.supports(key))


_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}")


def _loose(key: str) -> str:
    """A date key without its year: "March 3" is supported by 2025-03-03."""
    return key[:11] if key.startswith("date:") else key


def invented_user_facts(trajectory: Trajectory) -> list[tuple[int, str]]:
    """(message index, value) for each fact a user turn asserts outside what it was allowed."""
    evidence = _scenario_evidence(trajectory)
    grammar = _Grammar()
    for text in (*_scenario_text(trajectory), *trajectory.task.scenario.known_info.values()):
        grammar.add(text)
    invented: list[tuple[int, str]] = []
    for index, message in enumerate(trajectory.messages):
        if message.role == "assistant":
            evidence.add(message_text(message))
            grammar.add(message.content)
        if message.role != "user" or not message.content:
            continue
        for value in sorted(extract_values(message.content)):
            if not evidence.supports(value):
                invented.append((index, value))
        for typed in typed_values(message.content):
            if typed.kind in ("address", "date", "amount") and typed.key.count(":") <= 1:
                if typed.key.startswith("amount:") and typed.key in extract_values(message.content):
                    continue  # an amount with cents: the digit rule above read it
                if not grammar.supports(typed.key, evidence):
                    invented.append((index, typed.text))
        for name in _NAME_CLAIM.findall(message.content):
            if not evidence.supports(normalise(name)):
                invented.append((index, name))
    return invented


_QUESTION = re.compile(r"\?\s*$")
_NEGATION = re.compile(
    r"\b(?:not|never|no|isn't|wasn't|hasn't|haven't|didn't|aren't)\b|n't\b", re.I
)
_SENTENCES = re.compile(r"[^.!?\n]+[.!?]?")


_ASKS = re.compile(
    r"^\s*(?:is|isn't|was|are|were|has|have|had|did|does|do|can|could|will|would|should|what|"
    r"where|when|why|how|which|or)\b"
)


def _statements(text: str) -> list[str]:
    """The parts of `text` that state something: whole sentences that do not ask, and of a
    question the leading clauses that are not asked ("it is delivered, can you confirm?")."""
    out = []
    for sentence in _SENTENCES.findall(text):
        if not _QUESTION.search(sentence):
            out.append(sentence)
            continue
        clauses = sentence.split(",")[:-1]
        out += [c for c in clauses if not _ASKS.match(c)]
    return out


def _states(word: str, sentence: str, worded_output: bool) -> bool:
    """The sentence asserts `word` about something: as the task's own worded answer anywhere,
    or as a status ("it is delivered", "already cancelled", "shows as pending")."""
    if not whole_token_in(word, sentence):
        return False
    if worded_output:
        return True
    stated = rf"\b(?:is|was|are|were|'s|been|got|gets|already|still|now|shows?|showing|says|marked|as)\s+(?:\w+\s+)?{re.escape(word)}\b"
    return bool(re.search(stated, sentence))


def stated_answers(
    trajectory: Trajectory, answer_words: tuple[str, ...] = ()
) -> list[tuple[int, str]]:
    """(message index, word) for each answer a user turn states before anything gave it: a
    domain answer word said as a status, or a worded expected output of the task (questions and
    negated sentences ask or doubt, they do not state)."""
    outputs = [
        normalise(o)
        for o in trajectory.task.expected_outputs
        if len(o) >= 3 and not any(c.isdigit() for c in o)
    ]
    words = {normalise(w): False for w in answer_words} | {o: True for o in outputs}
    allowed = [normalise(t) for t in _scenario_text(trajectory)]
    allowed += [normalise(v) for v in trajectory.task.scenario.known_info.values()]
    found: list[tuple[int, str]] = []
    for index, message in enumerate(trajectory.messages):
        if message.role == "assistant" and message.content:
            allowed.append(normalise(message.content))
        if message.role != "user" or not message.content:
            continue
        for sentence in _statements(normalise(message.content)):
            if _NEGATION.search(sentence):
                continue
            for word, worded_output in words.items():
                if _states(word, sentence, worded_output) and not any(
                    whole_token_in(word, a) for a in allowed
                ):
                    found.append((index, word))
    return found


def role_confused_turns(trajectory: Trajectory) -> list[int]:
    """Message indices of user turns that speak as the agent (the generation-time check, run
    again on the finished record: a record from another system never went through it)."""

    name = trajectory.task.persona.name
    return [
        i
        for i, m in enumerate(trajectory.messages)
        if m.role == "user"
        and m.content
        and (looks_like_agent(m.content) or narrates(m.content, name))
    ]


def check_user_fidelity(trajectory: Trajectory, answer_words: tuple[str, ...] = ()) -> FilterResult:
    """Reject (`role_confusion`) when a user turn speaks as the agent, (`user_states_answer`)
    when it states the answer the agent must look up, (`user_hallucination`) when the user
    states facts its scenario does not hold."""
    confused = role_confused_turns(trajectory)
    if confused:
        return FilterResult.reject(
            "role_confusion", f"user turns speak as the agent: messages {confused}"
        )
    answers = stated_answers(trajectory, answer_words)
    if answers:
        listed = ", ".join(f"'{w}' (message {i})" for i, w in answers)
        return FilterResult.reject("user_states_answer", f"user stated the answer: {listed}")
    invented = invented_user_facts(trajectory)
    if not invented:
        return FilterResult.ok()
    listed = ", ".join(f"{v} (message {i})" for i, v in invented)
    return FilterResult.reject("user_hallucination", f"user asserted unknown facts: {listed}")


class UserFidelityFilter(FilterModel):
    """The simulated user states only facts its scenario (or the agent) gave it."""

    name: ClassVar[str] = "user_fidelity"
    reasons: ClassVar[tuple[RejectionReason, ...]] = (
        "role_confusion",
        "user_states_answer",
        "user_hallucination",
    )

    def check(self, trajectory: Trajectory, context: FilterContext) -> FilterResult:
        return check_user_fidelity(trajectory, context.domain.vocabulary.answer_words)
