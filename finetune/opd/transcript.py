"""One rollout as a single token sequence, built as the rollout happens.

The token-id invariant: the tokens an agent sampled are put into the sequence exactly as
sampled, never decoded and re-encoded (a re-encoding can split text differently, and the loss
must be on what the policy really produced). Everything else (system prompt, user turns, tool
results, the chat template's glue around turns) is rendered by the chat template and appended
as tokens with mask 0, by prefix difference: the text the template adds when the new messages
join the conversation. Each generation prompt is therefore exactly a prefix of the final
sequence, and the mask is 1 on, and only on, student-sampled tokens.

`TokenTranscript` is the rollout loop's observer (it sees each message as it is appended) and
the source of the agent's prompt ids; it requires a prefix-preserving chat template (rendering
more messages only appends text), which it checks on every turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from trajforge.finetune.canonical import canonical_messages
from trajforge.finetune.families import TemplateFamily
from trajforge.finetune.render import render_text
from trajforge.generators.agent import AgentTurn
from trajforge.schemas import Message, ToolSpec

Author = Literal["student", "teacher"]


class ChatRenderer(Protocol):
    """Chat text of a conversation as the model sees it, and the text -> ids step."""

    end_of_turn: str  # the token that closes an assistant turn (sampling stops on it)

    def text(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], generation_prompt: bool
    ) -> str: ...

    def encode(self, text: str) -> list[int]: ...


class FamilyRenderer:
    """The family's prefix-preserving training template over canonical messages (tools
    offered natively), the render SFT trains on and evaluation prompts with."""

    def __init__(self, tokenizer: Any, family: TemplateFamily):
        self.tokenizer = tokenizer
        self.family = family
        self.end_of_turn = family.end_of_turn

    def text(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], generation_prompt: bool
    ) -> str:
        return render_text(
            canonical_messages(messages, self.family),
            [t.openai_schema() for t in tools],
            self.family,
            add_generation_prompt=generation_prompt,
            training=True,
        )

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])


@dataclass(frozen=True)
class RolloutTokens:
    """A finished rollout as one sequence: ids, the loss mask, and per-token bookkeeping."""

    input_ids: tuple[int, ...]
    mask: tuple[int, ...]  # 1 on student-sampled tokens only
    turn_ids: tuple[int, ...]  # student turn index of each sampled token, -1 elsewhere
    sampled_logprobs: tuple[float, ...]  # log p_old of sampled tokens, 0.0 elsewhere
    feedback_error: tuple[bool, ...]  # per student turn: a tool answered it with an error
    teacher_turns: int


@dataclass
class TokenTranscript:
    """Observer + prompt source for one rollout (see the module docstring)."""

    renderer: ChatRenderer
    tools: Sequence[ToolSpec]
    messages: list[Message] = field(default_factory=list)
    ids: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    turn_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    feedback_error: list[bool] = field(default_factory=list)
    teacher_turns: int = 0
    next_author: Author = "student"
    last_author: Author | None = None
    _tokenized: int = 0  # messages[:_tokenized] are in `ids`
    _rendered: str = ""  # the template text of messages[:_tokenized]

    # -- observer --------------------------------------------------------------------------

    def on_message(self, message: Message, turn: AgentTurn | None) -> None:
        """Record a message the loop appended; assistant messages bring their sampled tokens."""
        if message.role == "assistant":
            self._append_sampled(message, turn)
        else:
            failed = message.role == "tool" and (message.content or "").startswith("Error")
            if failed and self.last_author == "student":
                self.feedback_error[-1] = True
            self.messages.append(message)

    # -- prompt source ---------------------------------------------------------------------

    def prompt_ids(self, messages: Sequence[Message]) -> list[int]:
        """The ids to sample the next agent turn from: the sequence so far plus the new
        messages and the generation prompt. `messages` must be what this transcript saw."""
        if list(messages) != self.messages:
            raise ValueError(
                "TokenTranscript: the conversation differs from what the observer recorded; "
                "pass the transcript as run_rollout's observer"
            )
        self._flush(generation_prompt=True)
        return list(self.ids)

    def finish(self) -> RolloutTokens:
        """The rollout's token sequence, closing messages included (they carry no loss)."""
        if self._tokenized < len(self.messages):
            self._flush(generation_prompt=False)
        return RolloutTokens(
            input_ids=tuple(self.ids),
            mask=tuple(self.mask),
            turn_ids=tuple(self.turn_ids),
            sampled_logprobs=tuple(self.logprobs),
            feedback_error=tuple(self.feedback_error),
            teacher_turns=self.teacher_turns,
        )

    # -- internals -------------------------------------------------------------------------

    def _extend(self, ids: Sequence[int], *, trained: bool, turn: int = -1, logprobs=None):
        self.ids.extend(ids)
        self.mask.extend([int(trained)] * len(ids))
        self.turn_ids.extend([turn if trained else -1] * len(ids))
        self.logprobs.extend(logprobs if trained else [0.0] * len(ids))

    def _flush(self, *, generation_prompt: bool) -> None:
        """Append the template text of the untokenized messages (and the generation prompt)."""
        full = self.renderer.text(self.messages, self.tools, generation_prompt)
        if not full.startswith(self._rendered):
            raise ValueError(
                "TokenTranscript: the chat template is not prefix-preserving (rendering more "
                "messages changed earlier text); use the family's training template"
            )
        self._extend(self.renderer.encode(full[len(self._rendered) :]), trained=False)
        self._rendered = full
        self._tokenized = len(self.messages)

    def _append_sampled(self, message: Message, turn: AgentTurn | None) -> None:
        if turn is None or turn.sampled is None:
            raise ValueError("TokenTranscript: an agent turn without sampled tokens")
        if self._tokenized != len(self.messages):
            raise ValueError("TokenTranscript: the agent acted without asking for its prompt")
        author, self.next_author = self.next_author, "student"
        self.last_author = author
        sampled = list(turn.sampled.token_ids)
        if author == "student":
            self.feedback_error.append(False)
            index = len(self.feedback_error) - 1
            self._extend(sampled, trained=True, turn=index, logprobs=list(turn.sampled.logprobs))
        else:
            self.teacher_turns += 1
            self._extend(sampled, trained=False)
        self.messages.append(message)
        self._close_turn(sampled_text_ended=self._ends_turn(sampled))

    def _ends_turn(self, sampled: Sequence[int]) -> bool:
        end = self.renderer.encode(self.renderer.end_of_turn)
        return len(sampled) >= len(end) and list(sampled[-len(end) :]) == end

    def _close_turn(self, *, sampled_text_ended: bool) -> None:
        """Append the template's text after the assistant turn (its glue, e.g. the newline
        after the end-of-turn token; the end token itself when sampling was cut short)."""
        full = self.renderer.text(self.messages, self.tools, False)
        with_prompt = self.renderer.text(self.messages[:-1], self.tools, True)
        if not full.startswith(with_prompt):
            raise ValueError("TokenTranscript: the chat template is not prefix-preserving")
        turn_text = full[len(with_prompt) :]
        end = self.renderer.end_of_turn
        cut = turn_text.rfind(end)
        glue = turn_text[cut + len(end) :] if cut >= 0 else ""
        if not sampled_text_ended:
            glue = end + glue
        self._extend(self.renderer.encode(glue), trained=False)
        self._rendered = full
        self._tokenized = len(self.messages)
