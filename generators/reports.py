"""When agent text tells a write's result: the one rule the drafts and the gate share.

A write is told when later agent text states a value the write produced (the new status, a
refund, the new address line) or names the written object together with the action in any form
("cancelled", "the cancellation of #W1", or a verb the domain backs with that tool, "refunded").
`verifiers/outcome_told.py` refuses a record whose writes are not all told; blueprint
verbalisation keeps a rewritten closing only if it still tells every write its draft told, so a
model's summary ("All done!") falls back to the draft instead of being refused at the gate.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from trajforge.generators.values import leaf_strings, mentions_value
from trajforge.generators.vocabulary import GENERIC_ACTION_VERBS

_WORD = re.compile(r"[a-z]+")


def action_stems(tool: str, action_verbs: Mapping[str, tuple[str, ...]]) -> tuple[str, ...]:
    """Word stems that say what `tool` did: its leading verb without a final e/y ("cancel",
    "modif", "exchang"), and each past-tense verb the domain backs with that tool ("refund"
    for a cancel in retail)."""
    verb = tool.split("_")[0].lower()
    stems = {verb.rstrip("ey") if len(verb) > 4 else verb}
    stems |= {
        v.removesuffix("ed")
        for v, tools in action_verbs.items()
        if tools and any(t in tool for t in tools)
    }
    return tuple(sorted(s for s in stems if len(s) >= 3))


@dataclass(frozen=True)
class WriteOutcome:
    """What telling one successful write means: its tool, the ids it acted on, and the values
    it produced (as text worth saying: no empty or one-letter leaves)."""

    tool: str
    objects: tuple[str, ...]
    values: tuple[str, ...]

    @classmethod
    def of(cls, tool: str, arguments: Mapping[str, Any], afters: Iterable[Any]) -> WriteOutcome:
        objects = tuple(v for k, v in arguments.items() if k.endswith("_id") and isinstance(v, str))
        values = tuple(v for after in afters for v in leaf_strings(after) if len(v.strip()) >= 3)
        return cls(tool, objects, values)

    def told_by(
        self,
        text: str,
        action_verbs: Mapping[str, tuple[str, ...]] = GENERIC_ACTION_VERBS,
        only_one: bool = False,
    ) -> bool:
        """`text` states a produced value, or names the object together with the action
        (`only_one`: this was the conversation's only write of its tool, so the action alone,
        "I've set up the exchange", cannot mean another object)."""
        if any(mentions_value(text, v) for v in self.values):
            return True
        if not only_one and not any(mentions_value(text, o) for o in self.objects):
            return False
        stems = action_stems(self.tool, action_verbs)
        return any(w.startswith(s) for w in _WORD.findall(text.lower()) for s in stems)
