"""What a trajectory is *about*, for semantic dedup: intent, entities and values.

Embeddings of templated conversations are dominated by the template: two different users
cancelling different orders for different amounts embed as near-identical. A semantic duplicate
must also be about the same thing: the same task types and mostly the same entity values
(ids, amounts, emails, dates, names from the tool calls and what was said). Paraphrases of one
conversation share them; different tasks do not.
"""

from __future__ import annotations

from dataclasses import dataclass

from trajforge.generators.values import extract_values
from trajforge.schemas import Trajectory
from trajforge.verifiers.text import argument_values

#: Jaccard overlap of values above which two conversations are about the same thing
#: (calibrated on the labelled pairs of benchmarks/corruption_bench.py --dedup-pairs).
SAME_CONTENT_JACCARD = 0.6


@dataclass(frozen=True)
class ContentKey:
    intent: tuple[str, ...]
    values: frozenset[str]


def content_key(trajectory: Trajectory) -> ContentKey:
    """Task types plus every value the conversation's calls and turns carry."""
    values: set[str] = set()
    for message in trajectory.messages:
        if message.role in ("user", "assistant") and message.content:
            values |= extract_values(message.content)
        for call in message.tool_calls:
            values |= argument_values(call.arguments)
    return ContentKey(tuple(trajectory.task.intent.task_types), frozenset(values))


def same_content(a: ContentKey, b: ContentKey, jaccard: float = SAME_CONTENT_JACCARD) -> bool:
    """Same intent and values overlapping at least `jaccard` (both empty counts as the same)."""
    if a.intent != b.intent:
        return False
    union = a.values | b.values
    return not union or len(a.values & b.values) / len(union) >= jaccard
