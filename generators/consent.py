"""Whether a user turn says yes or no to what the agent just proposed.

One definition for both sides of the gate: the policy checker (verifiers/policy.py, through
verifiers/dialogue.py) reads it to judge a write, and an agent that must honour a refusal
(the noisy teacher, generators/noisy_teacher.py) reads the same words, so the two never drift.
"""

from __future__ import annotations

import re

_REFUSAL = re.compile(
    r"^\W*(?:no|nope|nah)\b(?!\s+problem)|\b(?:don'?t|do not|not yet|hold on|wait|never ?mind|"
    r"rather not|changed my mind|not (?:do|proceed|go ahead)|cancel that|stop that)\b",
    re.IGNORECASE,
)
_AFFIRM = re.compile(
    r"\b(?:yes|yeah|yep|yup|sure|confirm(?:ed)?|go ahead|please do|please proceed|proceed|"
    r"correct|that'?s right|ok(?:ay)?|sounds good|do it|affirmative|absolutely|of course)\b",
    re.IGNORECASE,
)


def is_refusal(text: str | None) -> bool:
    """The user declines ("no", "don't do that", "wait, I changed my mind")."""
    return bool(text) and bool(_REFUSAL.search(text or ""))


def is_affirmation(text: str | None) -> bool:
    """The user says yes to what was just proposed (and declines nothing)."""
    return bool(text) and not is_refusal(text) and bool(_AFFIRM.search(text or ""))
