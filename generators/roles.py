"""Who is speaking, by what the words do: agent-speak in paraphrase and narrator lines.

A small model playing the user slips into the agent's role in words no verb list holds ("let me
pull up your account", "one moment while I check your order"), or steps outside the dialogue
altogether and narrates it ("Ann Lee, the customer, wants to cancel her order"). Both make a
training row in which the user is not a user. `speaks_as_agent` reads the act, not the verb: a
first-person service action on the other party's things ("I'll look into *your* order"), the
agent's stock moves (apologising for the inconvenience, asking the user to confirm *their*
details, thanking them for contacting), and third-person narration of the customer. The
generation-time check (`generators.user.looks_like_agent`), the verbaliser and the record-level
filter (`verifiers/user_fidelity.py`) all call it, so a slip is retried or falls back to its
draft before the gate ever has to refuse the row.

The optional embedding check in `verifiers/role_embedding.py` scores the same question by
meaning against labelled prototypes, for builds that load the embedder anyway.
"""

from __future__ import annotations

import functools
import re

_SERVICE = (
    r"pull(?:ing)? up|bring(?:ing)? up|look(?:ing)? (?:up|into|at)|check(?:ing)?(?: on)?|"
    r"verify(?:ing)?|process(?:ing)?|review(?:ing)?|access(?:ing)?|locat(?:e|ing)|find(?:ing)?|"
    r"updat(?:e|ing)|take a look at|taking a look at|go(?:ing)? ahead and \w+|open(?:ing)? up|"
    r"search(?:ing)? for|escalat(?:e|ing)|initiat(?:e|ing)|issu(?:e|ing)|submit(?:ting)?"
)
_THEIR = r"(?:your|the customer'?s?|the user'?s?|their)\b"
_DETAILS = r"(?:email|name|zip|address|order|identity|account|details|phone|information|info)"

AGENT_SPEAK: tuple[str, ...] = (
    # a first-person service action on the other party's things
    rf"\b(?:let me|allow me to|i'?ll|i will|i can|i am|i'm|i am going to|i'm going to|"
    rf"one moment while i|give me a (?:moment|second|sec) to|bear with me while i|i'?ve|i have|"
    rf"i just)\s+(?:now\s+|quickly\s+|just\s+)?(?:{_SERVICE})\b[^.!?]{{0,30}}\b{_THEIR}",
    r"\bpulling up (?:your|the)\b",
    r"\bi (?:can|could) see (?:that |here that |here )?(?:your|the customer)\b",
    r"\bi(?:'ve| have) (?:located|found|pulled up|accessed|verified|confirmed) (?:your|the customer)\b",
    rf"\b(?:could|can|would) you (?:please )?(?:confirm|provide|verify|share|tell me) your {_DETAILS}",
    r"\bthanks?(?: you)? for (?:reaching out|contacting|calling|your patience|holding)\b",
    r"\bapologi[sz]e for (?:the|any) inconvenience\b|\bsorry for (?:the|any) inconvenience\b",
    r"\b(?:happy|glad) to (?:help|assist)\b|\bhow (?:else )?(?:can|may) i (?:help|assist)\b",
    r"\bi(?:'m| am) (?:always )?here to (?:help|assist)\b",
    rf"\b(?:{_SERVICE}|sort(?:ing)? out|tak(?:e|ing) care of) (?:this|that|it|everything) for you\b",
    r"\bi(?:'ve| have)?\s+(?:\w+\s+){0,3}(?:processed|handled|arranged|submitted|taken care of)\b"
    r"[^.!?]{0,30}\bfor you\b|\bwalk you through\b",
    r"\bwhat (?:else )?can i (?:do for you|help you with)\b",
    r"\byour (?:request|order|refund|return|exchange) (?:has been|is being) (?:processed|submitted)\b",
)

_VERBS_3P_ANY = r"wants|would like|needs|is asking|asks|is looking|wishes|is trying|has asked"

#: Third-person narration of the user ("the customer wants", "X, the customer, ...").
NARRATOR: tuple[str, ...] = (
    r"(?i:\b(?:the|a|our|this)\s+(?:customer|user|client|caller|shopper|buyer)\s+"
    r"(?:wants|would like|needs|is asking|asks|says|said|is looking|requests|explains|wishes|"
    r"is trying|has asked|is requesting|then|responds|replies|confirms|agrees)\b)",
    r"(?:^|[.!?]\s+)[A-Z][a-z]+(?: [A-Z][a-z]+)*,\s+(?i:(?:(?:the|a|our)\s+)?(?:customer|user|client))\b",
    r"(?i:\b(?:customer|user|client|agent|assistant)\s*:\s)",
    # a turn that opens on the customer or a third person: "Customer is upset", "She wants ..."
    r"^\s*(?i:(?:the\s+)?(?:customer|user|client|caller)\s+(?:is|was|has|seems|feels)\b)",
    rf"^\s*(?i:(?:she|he)\s+(?:{_VERBS_3P_ANY}))\b",
)

_VERBS_3P = (
    r"wants|would like|needs|is asking|asks|says|said|is looking|requests|explains|wishes|"
    r"has asked|is requesting|responds|replies|confirms|agrees|is calling|is contacting"
)


@functools.lru_cache(maxsize=1)
def _agent_speak() -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in AGENT_SPEAK), re.IGNORECASE)


@functools.lru_cache(maxsize=1)
def _narrator() -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in NARRATOR))


@functools.lru_cache(maxsize=256)
def _named(name: str) -> re.Pattern[str]:
    """The user, by their own name, narrated in the third person ("Ann wants to ...")."""
    parts = [re.escape(p) for p in name.split() if p]
    names = "|".join([r"\s+".join(parts), *parts[:1]]) if parts else r"(?!)"
    return re.compile(rf"\b(?:{names})\s+(?:{_VERBS_3P})\b")


def speaks_as_agent(text: str) -> bool:
    """The text does what the agent does: serves the other party or thanks them for contacting."""
    return bool(_agent_speak().search(text))


def narrates(text: str, name: str | None = None) -> bool:
    """The text narrates the user in the third person (by role, or by `name` when given)."""
    text = text.strip()
    if _narrator().search(text):
        return True
    return bool(name) and bool(_named(name or "").search(text))


def out_of_role(text: str, name: str | None = None) -> bool:
    """A user turn that speaks as the agent or narrates the user."""
    return speaks_as_agent(text) or narrates(text, name)
