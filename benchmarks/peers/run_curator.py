"""bespokelabs-curator 0.1.31: a curator.LLM over a Dataset, openai backend, limits raised.

Offline: TIKTOKEN_CACHE_DIR points at the tokenizer copy bundled in litellm (set by the driver);
telemetry off; a fresh cache dir per run so nothing is served from cache.
"""

from __future__ import annotations

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from _common import Timer, parse_args, prompts, report  # noqa: E402


def main() -> None:
    args = parse_args(default_concurrency=256)
    os.environ.setdefault("CURATOR_CACHE_DIR", tempfile.mkdtemp(prefix="curator-"))
    from bespokelabs import curator
    from datasets import Dataset

    class OneSentence(curator.LLM):
        def prompt(self, row: dict) -> str:
            return row["instruction"]

        def parse(self, row: dict, response: str) -> dict:
            return {"instruction": row["instruction"], "generation": response}

    llm = OneSentence(
        model_name=args.model,
        backend="openai",
        generation_params={"max_tokens": args.max_tokens},
        backend_params={
            "base_url": args.base_url,
            "api_key": "stub",
            "max_requests_per_minute": 10_000_000,
            "max_tokens_per_minute": 10_000_000_000,
            "max_concurrent_requests": args.concurrency,
            "max_retries": 1,
            "require_all_responses": False,
        },
    )
    dataset = Dataset.from_list([{"instruction": p} for p in prompts(args.n)])
    with Timer() as timer:
        result = llm(dataset)
    rows = result.dataset if hasattr(result, "dataset") else result
    ok = sum(1 for row in rows if row.get("generation"))
    report("curator", args, ok, timer, max_concurrent_requests=args.concurrency)


if __name__ == "__main__":
    main()
