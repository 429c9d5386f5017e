"""Role confusion by meaning: user turns embedded next to labelled prototypes of agent-speak and
user-speak (the packaged all-MiniLM-L6-v2, `verifiers.semantic.load_embedder`).

The pattern check (`generators.roles`) reads what the words do; a paraphrase it has no pattern
for ("allow me to bring that up on my screen") still sits near the agent's prototypes in the
embedding space. A user turn is refused when its k nearest agent prototypes are closer, by
`margin` on average, than its k nearest user prototypes, and the nearest agent one is at least
`min_similarity` away. Opt-in (`{name: role_by_meaning}` in `quality.filters`): it loads the
embedder (~90 MB, a few seconds per worker), which builds with semantic dedup load anyway.
Prototypes are generic; a domain adds its own through `extra_agent` / `extra_user`.
"""

from __future__ import annotations

import functools
from typing import ClassVar

import numpy as np
from pydantic import Field

from trajforge.schemas import RejectionReason, Trajectory
from trajforge.verifiers.protocol import FilterContext, FilterModel
from trajforge.verifiers.result import FilterResult
from trajforge.verifiers.semantic import embed

AGENT_PROTOTYPES: tuple[str, ...] = (
    "Let me pull up your account.",
    "I'll look into your order right away.",
    "One moment while I check that for you.",
    "I can see that your order has shipped.",
    "Thank you for contacting us, how can I help you today?",
    "I have processed your refund.",
    "Could you please confirm your email address?",
    "I'm checking the system for your records now.",
    "Your request has been submitted successfully.",
    "I apologize for the inconvenience.",
    "Is there anything else I can help you with?",
    "Please allow me a moment to review your account details.",
    "I have located your order in our system.",
    "The customer wants to cancel their order.",
    "The user is asking for a refund.",
)
USER_PROTOTYPES: tuple[str, ...] = (
    "Hi, I want to return my headphones.",
    "My email is ann@example.com.",
    "Yes, please go ahead.",
    "Thanks, that's all I needed.",
    "I ordered the wrong size, can you help?",
    "Can you check where my order is?",
    "Let me check my email for the number.",
    "I'm not sure, give me a second to find it.",
    "I'd like to change the address on my order.",
    "No, please don't cancel it.",
    "It's for my sister's birthday, so I need it soon.",
    "I'm Ann Lee, and my zip code is 12345.",
    "Could you tell me how much the refund will be?",
    "Sorry, I meant the other order.",
    "Great, thank you so much for your help!",
)


@functools.lru_cache(maxsize=8)
def _prototype_vectors(texts: tuple[str, ...]) -> np.ndarray:

    return embed(list(texts))


def agent_likeness(
    texts: list[str], agent: tuple[str, ...], user: tuple[str, ...], k: int = 3
) -> list[tuple[float, float]]:
    """(mean top-k similarity to agent prototypes minus that to user prototypes, nearest agent
    similarity) per text."""

    if not texts:
        return []
    vectors = embed(texts)
    a = np.sort(vectors @ _prototype_vectors(agent).T, axis=1)[:, ::-1]
    u = np.sort(vectors @ _prototype_vectors(user).T, axis=1)[:, ::-1]
    gap = a[:, :k].mean(axis=1) - u[:, :k].mean(axis=1)
    return [(float(g), float(n)) for g, n in zip(gap, a[:, 0], strict=True)]


class RoleByMeaningFilter(FilterModel):
    """User turns whose meaning sits with the agent's prototypes (opt-in: loads the embedder)."""

    name: ClassVar[str] = "role_by_meaning"
    reasons: ClassVar[tuple[RejectionReason, ...]] = ("role_confusion",)

    margin: float = Field(default=0.12, ge=0.0, le=1.0)
    min_similarity: float = Field(default=0.5, ge=0.0, le=1.0)
    k: int = Field(default=3, ge=1, le=10)
    extra_agent: tuple[str, ...] = ()
    extra_user: tuple[str, ...] = ()

    def check(self, trajectory: Trajectory, context: FilterContext) -> FilterResult:
        turns = [
            (i, m.content)
            for i, m in enumerate(trajectory.messages)
            if m.role == "user" and m.content
        ]
        scores = agent_likeness(
            [t for _, t in turns],
            (*AGENT_PROTOTYPES, *self.extra_agent),
            (*USER_PROTOTYPES, *self.extra_user),
            self.k,
        )
        confused = [
            f"message {i} (gap {gap:.2f})"
            for (i, _), (gap, nearest) in zip(turns, scores, strict=True)
            if gap > self.margin and nearest >= self.min_similarity
        ]
        if not confused:
            return FilterResult.ok()
        return FilterResult.reject(
            "role_confusion", "user turns read as the agent's: " + ", ".join(confused)
        )
