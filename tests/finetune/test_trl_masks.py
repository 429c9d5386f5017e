"""TRL's assistant-only masking of a tool-using conversation, compared with ours (skipped
without trl, which is in the `dev` extra).

TRL (SFTTrainer, assistant_only_loss=True) swaps in its training template for Qwen3
(`get_training_chat_template`) and masks with `apply_chat_template(...,
return_assistant_tokens_mask=True)`, i.e. the `{% generation %}` markers. Both agree that tool
results, user and system text are never trained, that the turn header is not, and that every
assistant token is; TRL also trains the newline after each `<|im_end|>`, which the model never
generates (generation stops at `<|im_end|>`), so every assistant turn teaches one token of
template text as if it were output.
"""

from __future__ import annotations

import pytest

from tests.finetune.conftest import TOOLS, conversation
from trajforge.finetune.canonical import canonical_messages
from trajforge.finetune.families import get_family
from trajforge.finetune.render import render_and_mask

trl_templates = pytest.importorskip("trl.chat_template_utils")


def test_trl_also_trains_the_newline_after_end_of_turn_that_the_model_never_generates(tokenizers):
    family = get_family("qwen3")
    tokenizer = tokenizers["qwen3"]
    tokenizer.chat_template = family.template(training=False)  # the real Qwen3 template
    trl_template = trl_templates.get_training_chat_template(tokenizer)
    assert trl_template is not None  # TRL recognises the original and patches it
    messages = canonical_messages(conversation(), family)
    theirs = tokenizer.apply_chat_template(
        messages,
        tools=TOOLS,
        chat_template=trl_template,
        tokenize=True,
        return_dict=True,
        return_assistant_tokens_mask=True,
    )
    ours = render_and_mask("s", conversation(), TOOLS, family, tokenizer)
    assert list(theirs["input_ids"]) == list(ours.input_ids)  # same text, same tokens
    their_mask = [bool(m) for m in theirs["assistant_masks"]]
    assert all(t for t, o in zip(their_mask, ours.trained, strict=True) if o)  # ours within theirs
    extra = [
        i for i, (t, o) in enumerate(zip(their_mask, ours.trained, strict=True)) if t and not o
    ]
    extra_text = tokenizer.decode([ours.input_ids[i] for i in extra])
    assert extra_text == "\n" * 3  # one per assistant turn
    assert all(
        ours.input_ids[i - 1] == tokenizer.convert_tokens_to_ids("<|im_end|>") for i in extra
    )
    untrained = tokenizer.decode(
        [t for t, m in zip(ours.input_ids, their_mask, strict=True) if not m]
    )
    for text in ("in_transit", "awaiting_stock", "Where are my orders", "retail support agent"):
        assert text in untrained
