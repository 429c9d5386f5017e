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
#: Output-layer scales: a student with some structure, and a teacher that is the same network
#: three times sharper (see `tiny_pair`).
STUDENT_SCALE = 20.0
TEACHER_SHARPNESS = 3.0


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


def save_pair(root):
    """Write a fresh pair as model directories under `root`; returns (student, teacher) paths."""
    paths = []
    for name, model in zip(("student", "teacher"), tiny_pair(), strict=True):
        model.save_pretrained(root / name)
        toy_tokenizer().save_pretrained(root / name)
        paths.append(str(root / name))
    return tuple(paths)


def renderer():
    return FamilyRenderer(toy_tokenizer(), FAMILY)


def tiny_pair():
    """A fresh (student, teacher) on the toy tokenizer: the student is trained, so never cached.

    The teacher is the student's own network with a sharper output layer: the student is close
    enough for on-policy distillation to work (as after SFT), far enough to measure.
    """
    vocab = len(toy_tokenizer())
    student = tiny_model(vocab, seed=1, hidden=32, layers=2)
    teacher = tiny_model(vocab, seed=1, hidden=32, layers=2)
    with torch.no_grad():
        student.lm_head.weight.mul_(STUDENT_SCALE)
        teacher.lm_head.weight.mul_(STUDENT_SCALE * TEACHER_SHARPNESS)
    return student, teacher
