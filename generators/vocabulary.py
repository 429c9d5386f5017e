"""A domain's vocabulary: the words generic code needs but must not hard-code.

The framework's prompts, filters and synthesis checks are shared by every domain, yet some of
what they say is domain language: which task types exist (and which only read state), what the
two parties are called ("customer" and "customer-support agent" in retail, "user" and
"assistant" by default), and which narrated verbs ("I have cancelled ...") a write tool backs.
Each domain declares one frozen `DomainVocabulary`; generic code receives it from the domain
(`domain.vocabulary`) and falls back to `GENERIC_VOCABULARY`'s defaults where a domain says
nothing. No retail word lives outside `generators/domains/retail/`.
"""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from trajforge.schemas import TASK_TYPE_PATTERN

#: Past-tense verbs of actions any transactional domain may narrate -> substrings of the write-tool
#: names that perform them. An empty tuple means "any successful write backs the claim".
GENERIC_ACTION_VERBS: MappingProxyType[str, tuple[str, ...]] = MappingProxyType(
    {
        "updated": ("update", "modify", "change", "set"),
        "modified": ("modify", "update", "change", "set"),
        "changed": ("change", "modify", "update", "set"),
        "transferred": ("transfer",),
        "deleted": ("delete", "remove"),
        "removed": ("remove", "delete"),
        "created": ("create", "add"),
        "added": ("add", "create"),
        "processed": (),
        "placed": (),
        "submitted": (),
        "saved": (),
    }
)

Word = Annotated[str, StringConstraints(min_length=1, max_length=64)]
TaskTypeName = Annotated[str, StringConstraints(pattern=TASK_TYPE_PATTERN)]


class DomainVocabulary(BaseModel):
    """What generic code may say about a domain: its task types, roles and action verbs.

    `task_types` is the domain's closed set (synthesis and task verification refuse any other);
    `answer_words` are the words of the answers the agent looks up (statuses, outcomes);
    `read_only_task_types` is the subset that never changes state (the no-tool shortcut check
    applies only to tasks made of these); `user_role`/`agent_role` frame the prompts and the
    judge rubric; `action_verbs` maps a past-tense verb the agent may narrate to the write-tool
    name stems that back it (see verifiers/structural.py).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_types: tuple[TaskTypeName, ...] = Field(min_length=1)
    read_only_task_types: frozenset[TaskTypeName] = frozenset()
    user_role: Word = "user"
    agent_role: Word = "assistant"
    action_verbs: dict[str, tuple[str, ...]] = Field(
        default_factory=lambda: dict(GENERIC_ACTION_VERBS)
    )
    #: Words that state what only the agent's tools can tell (an order's status, a request's
    #: outcome): a user turn that says one its scenario and the agent did not give it is leaking
    #: the answer (verifiers/user_fidelity.py). Empty: no such check.
    answer_words: tuple[Word, ...] = ()

    @model_validator(mode="after")
    def _consistent(self) -> DomainVocabulary:
        if len(set(self.task_types)) != len(self.task_types):
            raise ValueError(f"task_types has duplicates: {self.task_types} (list each once)")
        unknown = self.read_only_task_types - set(self.task_types)
        if unknown:
            raise ValueError(
                f"read_only_task_types {sorted(unknown)} are not in task_types (declare them)"
            )
        bad = [v for v in self.action_verbs if not re.fullmatch(r"[a-z]+", v)]
        if bad:
            raise ValueError(f"action_verbs keys must be lowercase words, got {bad}")
        return self

    def check_task_types(self, task_types: tuple[str, ...], domain: str) -> None:
        """Raise ValueError naming the undeclared task types (a domain bug, not a rejection)."""
        unknown = sorted(set(task_types) - set(self.task_types))
        if unknown:
            raise ValueError(
                f"task types {unknown} are not declared by domain {domain!r}; "
                f"declared: {', '.join(self.task_types)} (add them to its vocabulary)"
            )

    def is_read_only(self, task_types: tuple[str, ...]) -> bool:
        """True when every task type only reads state (a no-tool answer could solve it)."""
        return bool(task_types) and all(t in self.read_only_task_types for t in task_types)


def with_generic_verbs(extra: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """The generic action verbs plus a domain's own (the domain's win on a clash)."""
    return {**GENERIC_ACTION_VERBS, **extra}


#: Defaults for code that has no domain at hand (a trajectory file from an unknown domain).
GENERIC_VOCABULARY = DomainVocabulary(task_types=("task",))
