"""Claim attribution: which action a sentence of agent text claims, and on which object.

"I have also returned order #W2", "your order #W1 has been cancelled", "the order I changed is
#W3": each is a claim that a write of a certain kind was done to a certain object. A verb-only
check (structural.py) is satisfied by any such write on any object; grounding.py needs the
object the claim names, so it can check the claim against the steps that wrote that object.

A clause (a sentence split at ";", "and", "but", "then") claims an action when one of the
domain's narrated verbs (`DomainVocabulary.action_verbs`) is said by the agent in the first
person ("I", "we") or in the passive ("has been", "was"), not negated, not under a modal or a
condition ("I can cancel", "once it is returned"), and not in a question. A clause that
continues a claim ("I cancelled #W1 and refunded $5") inherits its subject. The claim is bound
to the ids the clause names, else to the ids its sentence names, else to none (unbound: any
write of that kind backs it).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

#: A sentence: up to ".", "!", "?" or a line end (a "." before a digit does not end one: 54.20).
SENTENCE = re.compile(r"(?:[^.!?\n]|\.(?=\d))+[.!?]?")
_CLAUSE = re.compile(r";|:|,?\s+(?:and|but|then|so|while)\s+", re.IGNORECASE)
_NEGATED = re.compile(
    r"\b(?:not|never|no longer|unable|cannot)\b|n't\b|\b(?:could|would|can) ?not\b", re.I
)
_MODAL = re.compile(
    r"\b(?:can|could|will|would|shall|should|may|might|must|need|needs|want|wants|going|"
    r"if|once|when|whether|before|until|unless|able|to)\b|'ll\b|'d\s+(?:like|be)\b",
    re.IGNORECASE,
)
_SUBJECT = re.compile(r"\b(i|we|you|it|they|he|she|this|that)\b|\b(i|we)(?:'ve|'m|'d)", re.I)
_PASSIVE = re.compile(
    r"\b(?:(?:has|have|had)\s+(?:\w+\s+)?been|was|were|got|gets)\s+(?:\w+\s+)?$", re.IGNORECASE
)
_LEADING = re.compile(r"^\s*(?:also\s+|then\s+|just\s+|successfully\s+)*$", re.IGNORECASE)


@dataclass(frozen=True)
class ActionClaim:
    """One claimed action: the narrated verb, the objects it is bound to (empty: unbound) and
    the clause that says it (for the rejection's detail)."""

    verb: str
    objects: tuple[str, ...]
    clause: str
    passive: bool = False  # "has been cancelled" (no first-person subject)


@functools.lru_cache(maxsize=32)
def _verb_pattern(verbs: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(sorted(map(re.escape, verbs), key=len, reverse=True))
    return re.compile(rf"\b({alternatives})\b", re.IGNORECASE)


def _claimed(prefix: str, continues: bool) -> str | None:
    """The voice ("active", "passive") in which the text before a verb in its clause makes it
    a claim by the agent, or None (negation and modals count between the verb's subject and
    the verb: "to be clear, what I changed" claims, "I would have changed" does not)."""
    subjects = [m.group(1) or m.group(2) for m in _SUBJECT.finditer(prefix)]
    last = list(_SUBJECT.finditer(prefix))
    between = prefix[last[-1].end() :] if last else prefix
    if _NEGATED.search(between) or _MODAL.search(between):
        return None
    if _PASSIVE.search(prefix):
        return "passive"
    if subjects:
        return "active" if subjects[-1].lower() in ("i", "we") else None
    return "active" if continues and _LEADING.match(prefix) else None


def action_claims(text: str, verbs: Iterable[str], object_pattern: str) -> list[ActionClaim]:
    """Every action the agent claims in `text`, bound to the objects it names."""
    pattern = _verb_pattern(tuple(sorted(verbs)))
    claims: list[ActionClaim] = []
    for sentence in SENTENCE.findall(text):
        if sentence.rstrip().endswith("?"):
            continue  # a question proposes, it does not claim
        in_sentence = tuple(re.findall(object_pattern, sentence))
        continues = False
        for clause in _CLAUSE.split(sentence):
            found = False
            for m in pattern.finditer(clause):
                voice = _claimed(clause[: m.start()], continues)
                if voice:
                    named = tuple(re.findall(object_pattern, clause)) or in_sentence
                    claims.append(
                        ActionClaim(m.group(1).lower(), named, clause.strip(), voice == "passive")
                    )
                    found = True
            subjects = [m.group(1) or m.group(2) for m in _SUBJECT.finditer(clause)]
            first_person = bool(subjects) and subjects[-1].lower() in ("i", "we")
            continues = found or first_person or (continues and not subjects)
    return claims
