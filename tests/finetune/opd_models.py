"""Tiny student/teacher pairs over the toy domain, built from a config (no download)."""

from __future__ import annotations

import functools

import torch

from tests.toy_domain import TOY, make_task
from trajforge.finetune.families import get_family
from trajforge.finetune.opd.transcript import FamilyRenderer
from trajforge.finetune.render import render_text
from trajforge.finetune.tiny import tiny_model, train_tokenizer
from trajforge.generators.prompts import agent_system_prompt
from trajforge.schemas import Message

FAMILY = get_family("qwen2.5")
#: The teacher's output layer is scaled up: a peaked, confident teacher far (in KL) from the
#: near-uniform random student, so distillation has something to close.
TEACHER_SHARPNESS = 40.0


@functools.lru_cache(maxsize=1)
def toy_tokenizer():
    task = make_task()
    system = Message(role="system", content=agent_system_prompt(TOY.policy))
    tools = [t.openai_schema() for t in TOY.toolbox.specs]
    texts = [
        render_text([{"role": "system", "content": system.content}], tools, FAMILY),
        task.scenario.reason_for_contact,
        *task.scenario.known_info.values(),
        "Error: account not found. Your balance is now 125.50. Yes, please go ahead.",
    ]
    return train_tokenizer(texts, FAMILY, vocab_size=400)


def renderer():
    return FamilyRenderer(toy_tokenizer(), FAMILY)


def tiny_pair():
    """A fresh (student, teacher) on the toy tokenizer: the student is trained, so never cached."""
    vocab = len(toy_tokenizer())
    student = tiny_model(vocab, seed=1, hidden=32, layers=2)
    teacher = tiny_model(vocab, seed=2, hidden=32, layers=2)
    with torch.no_grad():
        teacher.lm_head.weight.mul_(TEACHER_SHARPNESS)
    return student, teacher
