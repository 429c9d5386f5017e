"""distilabel 1.5.3: LoadDataFromDicts >> TextGeneration(OpenAILLM), concurrency = input_batch_size.

distilabel awaits each batch with asyncio.gather, so a batch waits for its slowest call.
"""

from __future__ import annotations

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from _common import Timer, parse_args, prompts, report  # noqa: E402


def main() -> None:
    args = parse_args(default_concurrency=200)
    os.environ.setdefault("DISTILABEL_CACHE_DIR", tempfile.mkdtemp(prefix="distilabel-"))
    from distilabel.models import OpenAILLM
    from distilabel.pipeline import Pipeline
    from distilabel.steps import LoadDataFromDicts
    from distilabel.steps.tasks import TextGeneration

    data = [{"instruction": p} for p in prompts(args.n)]
    with Pipeline(
        name="bench-throughput", cache_dir=os.environ["DISTILABEL_CACHE_DIR"]
    ) as pipeline:
        load = LoadDataFromDicts(data=data, batch_size=args.concurrency)
        generate = TextGeneration(
            llm=OpenAILLM(
                model=args.model,
                base_url=args.base_url,
                api_key="stub",
                generation_kwargs={"max_new_tokens": args.max_tokens},
            ),
            input_batch_size=args.concurrency,
        )
        load >> generate
    with Timer() as timer:
        distiset = pipeline.run(use_cache=False)
    rows = distiset["default"]["train"]
    ok = sum(1 for row in rows if row.get("generation"))
    report("distilabel", args, ok, timer, input_batch_size=args.concurrency)


if __name__ == "__main__":
    main()
