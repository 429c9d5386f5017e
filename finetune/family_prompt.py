"""Prompting a model with its pinned family template as token ids: the vLLM engine's format.

Why: a model fine-tuned by trajforge learned the pinned training render (finetune/families.py),
not necessarily the chat template its tokenizer ships (a base model's, or a hub revision's);
evaluating it with the engine's own `LLM.chat` would score it on a prompt it never saw. This
object renders `render.generation_prompt` exactly as `TransformersChat` does, tokenises it
without extra special tokens (the template already writes BOS), stops on the family's
end-of-turn token and parses calls in the family's format; it is the `PromptFormat` that
`generators.llm.vllm_backend.VLLMBackend` takes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trajforge.finetune.families import TemplateFamily
from trajforge.finetune.hf_client import reply_from_text
from trajforge.finetune.render import generation_prompt
from trajforge.schemas import Message, ToolCall, ToolSpec


class FamilyPromptFormat:
    """The pinned family template over a tokenizer (see the module docstring)."""

    def __init__(self, tokenizer: Any, family: TemplateFamily):
        self.tokenizer = tokenizer
        self.family = family
        self.stop_token_ids = tuple(
            tokenizer(family.end_of_turn, add_special_tokens=False)["input_ids"]
        )

    def prompt_ids(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> list[int]:
        text = generation_prompt(messages, [t.openai_schema() for t in tools], self.family)
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def reply(
        self, text: str, tools: Sequence[ToolSpec]
    ) -> tuple[str | None, tuple[ToolCall, ...]]:
        return reply_from_text(text, tools, self.family)
