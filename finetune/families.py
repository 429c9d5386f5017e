"""Chat-template families: one pinned Jinja template per model family, in one frozen table.

Why pinned: a tokenizer's `chat_template` changes between hub revisions and decides what the
model is trained on; the templates here are copies of the real ones (finetune/templates/, with
their source named in README), so a render never depends on a download. Each family says how its
template must be fed (one tool call per assistant turn, whether text survives next to tool
calls) and which token ends an assistant turn, which is what the loss mask needs.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from types import MappingProxyType

from pydantic import BaseModel, ConfigDict

TEMPLATES_DIR = Path(__file__).parent / "templates"


class TemplateFamily(BaseModel):
    """How to render and mask conversations for one model family."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    train_template: str  # file in templates/: prefix-preserving, used for SFT renders and masks
    infer_template: str  # the model's own template, used for prompts at evaluation
    end_of_turn: str  # the token the assistant generates to end its turn (trained)
    bos_token: str = ""
    one_call_per_turn: bool = False  # the template raises on 2+ tool calls in one message
    content_with_calls: bool = True  # False: the template drops text that sits next to calls
    control_tokens: tuple[str, ...] = ()  # sanitised out of system/user/tool text
    arguments_key: str = "arguments"  # the key a generated call puts its arguments under

    def template(self, training: bool = True) -> str:
        return load_template(self.train_template if training else self.infer_template)


_CHATML = ("<|im_start|>", "<|im_end|>", "<|endoftext|>")

FAMILIES = MappingProxyType(
    {
        "qwen2.5": TemplateFamily(
            name="qwen2.5",
            train_template="qwen2_5.jinja",
            infer_template="qwen2_5.jinja",
            end_of_turn="<|im_end|>",
            control_tokens=_CHATML,
        ),
        "qwen3": TemplateFamily(
            name="qwen3",
            train_template="qwen3_training.jinja",
            infer_template="qwen3.jinja",
            end_of_turn="<|im_end|>",
            control_tokens=(*_CHATML, "<think>", "</think>"),
        ),
        "llama3.1": TemplateFamily(
            name="llama3.1",
            train_template="llama3_1.jinja",
            infer_template="llama3_1.jinja",
            end_of_turn="<|eot_id|>",
            bos_token="<|begin_of_text|>",
            one_call_per_turn=True,
            content_with_calls=False,
            arguments_key="parameters",
            control_tokens=(
                "<|begin_of_text|>",
                "<|start_header_id|>",
                "<|end_header_id|>",
                "<|eot_id|>",
                "<|eom_id|>",
                "<|python_tag|>",
            ),
        ),
        "hermes": TemplateFamily(
            name="hermes",
            train_template="hermes_training.jinja",
            infer_template="hermes.jinja",
            end_of_turn="<|im_end|>",
            bos_token="<|begin_of_text|>",
            content_with_calls=False,
            control_tokens=(*_CHATML, "<|begin_of_text|>"),
        ),
    }
)


def get_family(name: str) -> TemplateFamily:
    """The named family; an unknown name lists the known ones."""
    try:
        return FAMILIES[name]
    except KeyError:
        known = ", ".join(sorted(FAMILIES))
        raise ValueError(f"unknown chat-template family {name!r}; known: {known}") from None


@cache
def load_template(filename: str) -> str:
    return (TEMPLATES_DIR / filename).read_text()
