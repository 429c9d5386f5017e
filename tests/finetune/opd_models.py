"""Tiny student/teacher pairs over the toy domain, built from a config (no download)."""

from __future__ import annotations

import functools

from tests.toy_domain import TOY
from trajforge.finetune.tiny_models import (
    TinyModelConfig,
    build_tiny_model,
    domain_corpus,
    train_tokenizer,
)

STUDENT = TinyModelConfig(hidden_size=32, intermediate_size=64, seed=1, init_range=0.02)
TEACHER = TinyModelConfig(hidden_size=32, intermediate_size=64, seed=2, init_range=0.5)


@functools.lru_cache(maxsize=1)
def toy_tokenizer():
    return train_tokenizer(domain_corpus(TOY, num_tasks=1), vocab_size=400)


def tiny_pair():
    """A fresh (student, teacher) on the toy tokenizer: the student is trained, so never cached."""
    tokenizer = toy_tokenizer()
    return build_tiny_model(tokenizer, STUDENT), build_tiny_model(tokenizer, TEACHER)
