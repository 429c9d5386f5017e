"""The one sanitisation boundary for untrusted text (model output, simulated-user text, tool
results and errors that echo model-chosen arguments).

Why: a chat template turns special strings such as `<|im_start|>` or `[INST]` into control
tokens. If a kept row carries one verbatim, fine-tuning on it teaches the model to open a fake
system turn (a prompt injection baked into the weights). So every text field of `Message`,
`ToolCall` and `StepRecord` is typed `SafeText`, and pydantic runs `sanitize_text` whenever one is
built: nothing can be stored, cached or rendered without passing here.

What is NEUTRALISED (rewritten, the row is kept):
- chat control tokens of the common families: any `<|name|>` (ChatML/Qwen, Llama 3, Phi,
  gpt-oss harmony, FIM), DeepSeek's full-width `<｜name｜>`, tag tokens `<tool_call>`,
  `</tool_call>`, `<tool_response>`, `<start_of_turn>`, `<end_of_turn>`, `<s>`, `</s>`,
  `<bos>`, `<eos>`, `<<SYS>>`, and bracket tokens `[INST]`, `[/INST]`, `[TOOL_CALLS]`,
  `[AVAILABLE_TOOLS]`, `[TOOL_RESULTS]`, ... Each becomes `‹name›` (single angle quotation
  marks): still readable, never a special token in any tokenizer, and never matched again
  (the rewrite is idempotent);
- C0 control characters other than tab, newline and carriage return (NUL, ESC, ...): removed;
- bidirectional overrides, embeddings and isolates (U+202A-U+202E, U+2066-U+2069) and the
  directional marks (U+200E, U+200F, U+061C): removed. They make text display in another order
  than it is read (a "Trojan Source" reordering), so what a reviewer sees is not what the
  model trains on;
- zero-width characters (U+200B space, U+200C non-joiner, U+200D joiner, U+2060 word joiner,
  U+FEFF) and the soft hyphen (U+00AD): removed. They hide words from filters and reviewers
  ("ig\u200bnore") at no visible cost. Caveat: emoji joined by U+200D split into their parts,
  and Persian/Indic text loses its non-joiners (displayed slightly differently);
- lone UTF-16 surrogates (invalid Unicode that cannot be written as UTF-8): U+FFFD.

What is REJECTED (typed reason, see `schemas.judgement.RejectionReason`): text past the build's
size bounds (`oversized_content`, `oversized_arguments`; checked where the size limits are
configured, in the LLM client path), and any row whose exported text still matches a control
token (`control_token`, a defence-in-depth check at export that should never fire).
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator

_NAME = r"[A-Za-z0-9_\-.:/ ▁]{1,64}"
CONTROL_TOKEN = re.compile(
    "|".join(
        (
            rf"<\|(?P<pipe>{_NAME})\|>",  # <|im_start|>, <|eot_id|>, <|start_header_id|>
            rf"<｜(?P<wide>{_NAME})｜>",  # DeepSeek <｜begin▁of▁sentence｜>
            r"<(?P<tag>/?(?:tool_call|tool_response|tools|start_of_turn|end_of_turn"
            r"|s|bos|eos|pad|unk|function_call|function_response))>",
            r"<<(?P<sys>/?SYS)>>",
            r"\[(?P<bracket>/?(?:INST|SYS|TOOL_CALLS|AVAILABLE_TOOLS|TOOL_RESULTS"
            r"|TOOL_CONTENT|SYSTEM_PROMPT|CALL_ID))\]",
        )
    ),
    re.IGNORECASE,
)
_C0_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
#: Bidi overrides/embeddings/isolates and marks, zero-width characters and the soft hyphen.
INVISIBLE = re.compile(
    "[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\u200b-\u200d\u2060\ufeff\u00ad]"
)
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _neutral(match: re.Match[str]) -> str:
    name = next(group for group in match.groups() if group is not None)
    return f"‹{name}›"


def sanitize_text(text: str) -> str:
    """`text` with control tokens neutralised, C0 controls, bidi controls and zero-width
    characters dropped, and lone surrogates replaced."""
    if _LONE_SURROGATE.search(text):
        text = _LONE_SURROGATE.sub("\ufffd", text)
    if _C0_CONTROLS.search(text):
        text = _C0_CONTROLS.sub("", text)
    if INVISIBLE.search(text):  # before the token match: `<|im\u200b_start|>` is one too
        text = INVISIBLE.sub("", text)
    if "<" in text or "[" in text:  # every control token opens with one (~1/6 of texts do)
        text = CONTROL_TOKEN.sub(_neutral, text)
    return text


def sanitize_value(value: Any) -> Any:
    """`sanitize_text` over every string (keys included) of a JSON-like value (tool arguments)."""
    if isinstance(value, str):
        return sanitize_text(value)
    if isinstance(value, dict):
        return {sanitize_text(str(k)): sanitize_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [sanitize_value(v) for v in value]
    return value


def find_control_token(text: str) -> str | None:
    """The first control token left in `text` (None when clean); used by the export check."""
    match = CONTROL_TOKEN.search(text)
    return match.group(0) if match else None


SafeText = Annotated[str, AfterValidator(sanitize_text)]
"""A string field that passes the sanitisation boundary whenever its record is built."""

SafeJson = Annotated[dict[str, Any], AfterValidator(sanitize_value)]
"""Tool-call arguments: every string inside passes the boundary."""
