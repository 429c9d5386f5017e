"""Render a conversation with its family's template and build the loss mask by prefix-diff.

The mask rule: loss on everything the assistant generates, through its end-of-turn token, and
nothing else. For assistant message i, the prompt the model sees at generation time is
`render(messages[:i], add_generation_prompt=True)`; what it generates is what
`render(messages[:i+1])` adds after that prompt, up to and including the end-of-turn token
(the newline some templates put after it is template, not generation). This only holds if the
template is prefix-preserving, so both prefix properties are checked and a violation raises
`TemplateError` naming the family and turn instead of silently training on template text.

Each segment (prompt text, generated text, ...) is tokenised on its own and the ids are
concatenated, so a trained span can never start or end inside a token.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from trajforge.finetune.canonical import canonical_messages
from trajforge.finetune.families import TemplateFamily
from trajforge.schemas import Message


class TemplateError(ValueError):
    """The template cannot be trained with a prefix-diff mask on this conversation."""


class Tokenizer(Protocol):
    def __call__(self, text: str, add_special_tokens: bool = ...) -> Any: ...


class Segment(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    trained: bool


class TokenizedSample(BaseModel):
    """One conversation as token ids with a per-token flag: is this token trained."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    input_ids: tuple[int, ...]
    trained: tuple[bool, ...]

    @property
    def num_trained(self) -> int:
        return sum(self.trained)


def render_text(
    messages: Sequence[dict[str, Any]],
    tools: Sequence[dict[str, Any]] | None,
    family: TemplateFamily,
    *,
    add_generation_prompt: bool = False,
    training: bool = True,
) -> str:
    """The template's text for canonical messages (see `canonical_messages`)."""
    # lazy, measured start-up cost: transformers ~580 ms
    from transformers.utils.chat_template_utils import render_jinja_template

    rendered, _ = render_jinja_template(
        conversations=[list(messages)],
        tools=list(tools) if tools else None,
        chat_template=family.template(training),
        add_generation_prompt=add_generation_prompt,
        bos_token=family.bos_token,
    )
    return rendered[0]


def mask_segments(
    messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None, family: TemplateFamily
) -> list[Segment]:
    """The full render cut into untrained and trained (assistant-generated) segments."""
    canon = canonical_messages(messages, family)
    full = render_text(canon, tools, family)
    segments: list[Segment] = []
    cursor = 0
    for i, message in enumerate(canon):
        if message["role"] != "assistant":
            continue
        prompt = render_text(canon[:i], tools, family, add_generation_prompt=True)
        through = render_text(canon[: i + 1], tools, family)
        if not through.startswith(prompt):
            raise TemplateError(
                f"{family.name}: turn {i} renders differently from its generation prompt; "
                "use the family's prefix-preserving training template"
            )
        if not full.startswith(through):
            raise TemplateError(
                f"{family.name}: turn {i} is re-rendered once later turns follow; "
                "use the family's prefix-preserving training template"
            )
        end = through.rfind(family.end_of_turn)
        if end < len(prompt):
            raise TemplateError(f"{family.name}: turn {i} has no {family.end_of_turn!r}")
        end += len(family.end_of_turn)
        segments.append(Segment(text=full[cursor : len(prompt)], trained=False))
        segments.append(Segment(text=full[len(prompt) : end], trained=True))
        cursor = end
    segments.append(Segment(text=full[cursor:], trained=False))
    return [s for s in segments if s.text]


def render_and_mask(
    sample_id: str,
    messages: Sequence[Message],
    tools: Sequence[dict[str, Any]] | None,
    family: TemplateFamily,
    tokenizer: Tokenizer,
) -> TokenizedSample:
    """Canonicalise, render, mask and tokenise one conversation (the one tested function)."""
    ids: list[int] = []
    trained: list[bool] = []
    for segment in mask_segments(messages, tools, family):
        piece = tokenizer(segment.text, add_special_tokens=False)["input_ids"]
        ids.extend(piece)
        trained.extend([segment.trained] * len(piece))
    return TokenizedSample(id=sample_id, input_ids=tuple(ids), trained=tuple(trained))


def generation_prompt(
    messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None, family: TemplateFamily
) -> str:
    """The text a model of this family is given to generate the next assistant turn."""
    canon = canonical_messages(messages, family)
    return render_text(canon, tools, family, add_generation_prompt=True, training=False)
