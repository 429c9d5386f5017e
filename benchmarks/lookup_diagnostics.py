"""Lookup diagnostics of the data-value benchmark's evaluations (issue 25): in how many attempts
the agent's first well-formed `find_account_by_email` call used an email the user had said,
and, for the others, whether the looked-up surname occurs in the model's training rows.

What explained the gate ablation's `authenticate_first` going the other way (gate on 64 vs
off 19 of 309): the gated model miscopied the email (another person's surname) and then read
an account by a guessed id.

Usage (an eval's transcripts and the run directory whose train split trained that model):
  python benchmarks/lookup_diagnostics.py runs/data-value/eval/ablation-0.transcripts.jsonl \
      runs/data-value/runs/noisy-gate
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

EMAIL = re.compile(r"[\w.+-]+@[\w.-]+\.\w+")


def surname(email: str) -> str:
    """`ada.lovelace1001@example.com` -> `lovelace` (empty when the local part has no dot)."""
    local = email.split("@")[0]
    return local.split(".", 1)[1].rstrip("0123456789") if "." in local else ""


def training_surnames(run_dir: Path) -> set[str]:
    texts = [
        row["messages_json"]
        for shard in sorted((run_dir / "data").glob("train-*.parquet"))
        for row in pq.read_table(shard, columns=["messages_json"]).to_pylist()
    ]
    return {surname(e) for text in texts for e in EMAIL.findall(text)} - {""}


def first_lookup(messages: list[dict]) -> tuple[str, str] | None:
    """(email looked up, what the user had said before it) of the first well-formed lookup."""
    for i, message in enumerate(messages):
        for call in message.get("tool_calls") or []:
            if call["name"] == "find_account_by_email" and not call.get("parse_error"):
                said = " ".join(m["content"] or "" for m in messages[:i] if m["role"] == "user")
                return call["arguments"].get("email") or "", said
    return None


def count(transcripts: Path, trained_on: set[str]) -> Counter:
    counts: Counter = Counter()
    for line in transcripts.read_text().splitlines():
        counts["attempts"] += 1
        found = first_lookup(json.loads(line)["trajectory"]["messages"])
        if found is None:
            continue
        email, said = found
        counts["lookups"] += 1
        if email and email in said:
            counts["own email"] += 1
        else:
            counts["miscopied"] += 1
            counts["miscopied, surname in training"] += surname(email) in trained_on
    return counts


def main(argv: list[str]) -> int:
    transcripts, run_dir = argv
    print(json.dumps(count(Path(transcripts), training_surnames(Path(run_dir)))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
