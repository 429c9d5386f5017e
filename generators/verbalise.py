"""Blueprint verbalisation: an LLM rewrites each draft utterance, and a check keeps or drops it.

The model only rewrites short drafts in a persona's voice; `acceptable` keeps a rewrite only if
it keeps every required entity and invents none (`generators.entities.check_entities`), keeps
most of the draft's content words, leaks no prompt markup and stays in role. A failing rewrite
is retried with a new seed, then replaced by its deterministic draft, so even a weak model
yields a correct trajectory.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from trajforge.generators.bare_turns import is_bare
from trajforge.generators.blueprint_plan import Utterance
from trajforge.generators.entities import check_entities
from trajforge.generators.prompts import verbaliser_system_prompt, verbaliser_user_prompt
from trajforge.generators.roles import narrates
from trajforge.generators.user import asks_confirmation, looks_like_agent, response_cost
from trajforge.generators.vocabulary import GENERIC_VOCABULARY, DomainVocabulary
from trajforge.generators.voice import NAME_CLAIM
from trajforge.schemas import (
    ChatRequest,
    Cost,
    LLMClient,
    Message,
    SamplingParams,
    Task,
    derive_seed,
)

_SPEAKER_PREFIX = re.compile(r"^\s*(?:customer|user|agent|assistant|message)\s*:\s*", re.I)


def clean_utterance(text: str) -> str:
    """Strip what models wrap around a message: speaker labels, quotes, trailing paragraphs."""
    text = _SPEAKER_PREFIX.sub("", text.strip())
    # One chat message is one line: small models repeat themselves on the following lines.
    text = text.strip().split("\n")[0].strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return text


_PROMPT_LEAK = re.compile(
    r"\[/?[A-Z][A-Z ]+\]|\bdraft\b|required entit|^\s*(?:customer|agent)\s*:", re.I | re.M
)
_FILLER = frozenset({"that", "this", "with", "your", "please", "could", "would", "then", "have"})


def keeps_draft(text: str, draft: str, share: float = 0.5) -> bool:
    """Lexical fidelity: at least `share` of the draft's content words survive the rewrite.

    Entities alone do not pin down meaning (a question with no entity can be rewritten into
    anything), so the rewrite must also keep most of what the draft talks about.
    """
    words = {w for w in re.findall(r"[a-z']{4,}", draft.lower()) if w not in _FILLER}
    if not words:
        return True
    kept = set(re.findall(r"[a-z']{4,}", text.lower()))
    return len(words & kept) >= share * len(words)


def acceptable(
    text: str,
    utterance: Utterance,
    action_verbs: Mapping[str, tuple[str, ...]] = GENERIC_VOCABULARY.action_verbs,
    names: Iterable[str] = (),
) -> bool:
    """A rewrite is kept only if it keeps the entities and meaning, invents none, stays in role."""
    if not text or len(text) > max(240, 3 * len(utterance.draft)) or "###" in text:
        return False
    if _PROMPT_LEAK.search(text) or not keeps_draft(text, utterance.draft):
        return False
    if is_bare(text, names) and not is_bare(utterance.draft, names):
        return False  # "Dario Marlowe," for "Right, I'm Dario Marlowe.": keep the draft
    if utterance.speaker == "user" and (
        looks_like_agent(text, action_verbs) or any(narrates(text, n) for n in names)
    ):
        return False
    if utterance.speaker == "user" and _claims_another_name(text, utterance.facts):
        return False
    if asks_confirmation(utterance.draft) and not (asks_confirmation(text) and "?" in text):
        return False  # a confirmation prompt must still ask (the policy rules read it)
    if not all(
        w.told_by(text, action_verbs) for w in utterance.tells if w.told_by(utterance.draft)
    ):
        return False  # the closing still tells each write its draft told (outcome_told's rule)
    return check_entities(text, utterance.required, utterance.facts).ok


def _claims_another_name(text: str, facts: Iterable[str]) -> bool:
    """The rewrite has the user give a name its scenario does not (the persona is the user: a
    model that writes "Hi, I'm John Smith" makes someone else speak)."""
    known = " ".join(facts)
    return any(name not in known for name in NAME_CLAIM.findall(text))


@dataclass
class Verbaliser:
    """Writes a blueprint's utterances with one LLM, counting model-written vs templated."""

    llm: LLMClient
    model: str
    task: Task
    seed: int
    sampling: SamplingParams
    max_retries: int
    vocabulary: DomainVocabulary = GENERIC_VOCABULARY
    cost: Cost = Cost()
    model_written: int = 0
    templated: int = 0
    systems: dict[str, Message] = field(default_factory=dict)

    async def keep_draft(self, utterance: Utterance) -> str:
        self.templated += 1
        return utterance.draft

    def _system(self, speaker: str) -> Message:
        """The speaker's system message, built once per blueprint (the same for each of its
        utterances)."""
        if speaker not in self.systems:
            persona = self.task.persona if speaker == "user" else None
            prompt_text = verbaliser_system_prompt(persona, self.vocabulary)
            self.systems[speaker] = Message(role="system", content=prompt_text)
        return self.systems[speaker]

    async def write(self, index: int, utterance: Utterance, context: str) -> str:
        system = self._system(utterance.speaker)
        prompt = verbaliser_user_prompt(utterance.draft, utterance.required, context)
        # Greedy decoding ignores the seed: a retry would repeat the same answer, so don't pay it.
        attempts = self.max_retries + 1 if self.sampling.temperature > 0 else 1
        for attempt in range(attempts):
            request = ChatRequest(
                model=self.model,
                messages=(system, Message(role="user", content=prompt)),
                sampling=self.sampling,
                seed=derive_seed(self.task.id, "blueprint", self.seed, index, attempt),
            )
            response = await self.llm.complete(request)
            self.cost = self.cost + response_cost(response)
            text = clean_utterance(response.message.content or "")
            if not response.message.tool_calls and acceptable(
                text, utterance, self.vocabulary.action_verbs, (self.task.persona.name,)
            ):
                self.model_written += 1
                return text
        self.templated += 1
        return utterance.draft
