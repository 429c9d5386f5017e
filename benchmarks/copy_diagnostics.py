"""Teacher-forced copy diagnostics of tiny models (issue 25): what the data-value benchmark's
learning rate and tokenizer split were chosen on, never on golden.

For each model: next-token accuracy on the synthetic copy task (`finetune/copying.py`, no
variants), and, on the first 60 conversations of SPLIT of DATA, the argmax accuracy of the
first token and of the rest of (a) the amount in the agent's confirmation `amount: X)` and
(b) the email argument of `find_account_by_email`, gold context.

Usage (validation = the golden build's *train* split: training templates, unseen tasks):
  python benchmarks/copy_diagnostics.py runs/data-value/runs/golden train MODEL [MODEL ...]
"""

from __future__ import annotations

import re
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from trajforge.finetune.copying import CopyCurriculum, copy_batch, copy_loss
from trajforge.finetune.families import get_family
from trajforge.finetune.render import mask_segments
from trajforge.finetune.sources import load_training_conversations

PATTERNS = {"amount": r"amount: ([0-9.]+)\)", "email": r'"email": "([^"]+)"'}


def synthetic_copy_accuracy(model, tokenizer) -> float:
    first = max(tokenizer.all_special_ids) + 1
    curriculum = CopyCurriculum(steps=1, variant_rate=0.0)
    batch = copy_batch(
        torch.Generator().manual_seed(5), first, model.config.vocab_size, curriculum, 64
    )
    with torch.no_grad():
        return copy_loss(model, batch)[1]


def span_hits(model, tokenizer, texts: list[str]) -> dict[str, list[int]]:
    """Per pattern: [first right, first seen, rest right, rest seen]."""
    hits = {name: [0, 0, 0, 0] for name in PATTERNS}
    for text in texts:
        enc = tokenizer(text, return_offsets_mapping=True)
        ids, offsets = torch.tensor([enc["input_ids"]]), enc["offset_mapping"]
        with torch.no_grad():
            predicted = model(input_ids=ids).logits[0].argmax(-1)
        for name, pattern in PATTERNS.items():
            match = re.search(pattern, text)
            if not match:
                continue
            span = [
                i for i, (a, b) in enumerate(offsets) if b > match.start(1) and a < match.end(1)
            ]
            for j, position in enumerate(span):
                slot = 0 if j == 0 else 2
                hits[name][slot] += int(predicted[position - 1]) == int(ids[0, position])
                hits[name][slot + 1] += 1
    return hits


def main(argv: list[str]) -> int:
    data, split, *models = argv
    torch.set_num_threads(1)
    family = get_family("qwen2.5")
    conversations = load_training_conversations(data, split)[:60]
    texts = [
        "".join(s.text for s in mask_segments(c.messages, c.tools, family)) for c in conversations
    ]
    for path in models:
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path).eval()
        copy = synthetic_copy_accuracy(model, tokenizer)
        hits = span_hits(model, tokenizer, texts)
        line = "  ".join(f"{k} first {v[0]}/{v[1]} rest {v[2]}/{v[3]}" for k, v in hits.items())
        print(f"{path}: copy {copy:.3f}  {line}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
