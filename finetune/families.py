"""Chat-template families: one pinned Jinja template per model family, in one frozen table.

Why pinned: a tokenizer's `chat_template` changes between hub revisions and decides what the
model is trained on; the templates here are copies of the real ones (finetune/templates/, with
their source named in README), so a render never depends on a download. Each family says how its
template must be fed (one tool call per assistant turn, whether text survives next to tool
calls) and which token ends an assistant turn, which is what the loss mask needs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict

TEMPLATES_DIR = Path(__file__).parent / "templates"
#: Written next to a model trajforge saved (tiny models, SFT/OPD outputs): the family it was
#: trained on, the strongest evidence `resolve_family` has.
FAMILY_FILE = "trajforge_family.json"


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
    # text that, all present, identifies this family in a model's own chat template (distinct
    # from every other family's set; empty: detected only by an exact template match)
    template_markers: tuple[str, ...] = ()

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
            template_markers=("<|im_start|>", "<tool_call>", "Alibaba Cloud"),
        ),
        "qwen3": TemplateFamily(
            name="qwen3",
            train_template="qwen3_training.jinja",
            infer_template="qwen3.jinja",
            end_of_turn="<|im_end|>",
            control_tokens=(*_CHATML, "<think>", "</think>"),
            template_markers=("<|im_start|>", "<tool_call>", "<think>"),
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
            template_markers=("<|start_header_id|>", "<|eot_id|>", '"parameters"'),
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
            template_markers=("<|im_start|>", "<tool_call>", "function calling AI model"),
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


class FamilyError(ValueError):
    """The family of a model cannot be told, or the one asked for does not fit its tokenizer;
    the message lists the families and says to pass `--family`."""


def saved_family(model_dir: str | Path) -> str | None:
    """The family a model directory was saved with by trajforge, if it says."""
    path = Path(model_dir) / FAMILY_FILE
    return json.loads(path.read_text())["family"] if path.is_file() else None


def resolve_family(
    tokenizer: Any, requested: str | None = None, model_dir: str | Path | None = None
) -> TemplateFamily:
    """The family to render `tokenizer`'s model with; never a silent default.

    `requested` (`--family`) wins when it fits the tokenizer. Otherwise the evidence, strongest
    first: the family trajforge saved next to the model (`trajforge_family.json`), then the
    tokenizer's own chat template (an exact copy of a pinned template, else the one family whose
    markers it all contains). A family fits when its end-of-turn token (and BOS, if it has one)
    is one token of the tokenizer: a Llama tokenizer splits `<|im_end|>` into several, and
    masks and stop tokens would silently break. Raises `FamilyError` (one line, the families
    listed) when nothing says, the evidence is ambiguous, or the family does not fit.
    """
    where = f" of {model_dir}" if model_dir is not None else ""
    if requested is not None:
        family = _named(requested, "--family")
        _require_fit(tokenizer, family, f"--family {requested} does not fit the tokenizer{where}")
        return family
    saved = saved_family(model_dir) if model_dir is not None else None
    if saved is not None:
        family = _named(saved, f"the {FAMILY_FILE}{where}")
        how = f"the {FAMILY_FILE}{where} names {saved}, which does not fit its tokenizer"
        _require_fit(tokenizer, family, how)
        return family
    family = detect_from_template(_chat_templates(tokenizer), f"the tokenizer{where}")
    _require_fit(tokenizer, family, f"the chat template{where} looks like {family.name}, but")
    return family


def detect_from_template(templates: Mapping[str, str], what: str) -> TemplateFamily:
    """The family of a model's own chat template(s) (name -> Jinja text)."""
    if not templates:
        raise FamilyError(f"{what} has no chat template to tell its family from; {_choices()}")
    texts = [t.strip() for t in templates.values()]
    for family in FAMILIES.values():
        pinned = {family.template(False).strip(), family.template(True).strip()}
        if pinned.intersection(texts):
            return family
    joined = "\n".join(texts)
    found = [
        f
        for f in FAMILIES.values()
        if f.template_markers and all(m in joined for m in f.template_markers)
    ]
    if len(found) == 1:
        return found[0]
    if not found:
        raise FamilyError(f"{what}: its chat template matches no pinned family; {_choices()}")
    names = ", ".join(f.name for f in found)
    raise FamilyError(f"{what}: its chat template could be any of {names}; {_choices()}")


def family_misfit(tokenizer: Any, family: TemplateFamily) -> str | None:
    """Why `family` cannot render for `tokenizer` (a token it needs whole is split), or None."""
    for token in dict.fromkeys((family.end_of_turn, family.bos_token)):
        if not token:
            continue
        ids = list(tokenizer(token, add_special_tokens=False)["input_ids"])
        unknown = getattr(tokenizer, "unk_token_id", None)
        if len(ids) != 1 or ids[0] == unknown:
            return f"{token!r} is {len(ids)} tokens there, not one"
    return None


def _named(name: str, source: str) -> TemplateFamily:
    if name not in FAMILIES:
        raise FamilyError(f"{source} names an unknown family {name!r}; {_choices()}")
    return FAMILIES[name]


def _require_fit(tokenizer: Any, family: TemplateFamily, context: str) -> None:
    reason = family_misfit(tokenizer, family)
    if reason is not None:
        raise FamilyError(f"{context}: {reason}; {_choices()}")


def _chat_templates(tokenizer: Any) -> dict[str, str]:
    """The tokenizer's chat template(s): one string, or named templates (e.g. `tool_use`)."""
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, str):
        return {"default": template}
    if isinstance(template, Mapping):
        return {str(k): v for k, v in template.items() if isinstance(v, str)}
    if isinstance(template, list):  # the serialised form: [{"name": ..., "template": ...}]
        return {str(t.get("name")): t["template"] for t in template if "template" in t}
    return {}


def _choices() -> str:
    return f"pass --family with one of: {', '.join(sorted(FAMILIES))}"
