"""`trajforge eval` of a model directory: tasks/s unbatched (`max_batch_size` 1) vs batched.

Evaluates the same tasks with the same threads, alternating the two settings, and checks the
two reports are identical (greedy batched replies equal the unbatched ones, so every attempt
plays out the same). Times `evaluate()` only (wall and process CPU seconds; CPU time is the
steadier figure on a shared machine): imports and the first model load are warmed up.
Without `--model` it builds a tiny Llama-architecture model (finetune/tiny.py, qwen2.5 family)
whose BPE is trained on the agent prompts of the benchmark's own tasks, so prompts have
realistic token counts (a tokenizer trained on one sentence splits them into ~4x more tokens).

Usage:
  python benchmarks/bench_eval_batching.py --tasks 8 --max-tokens 32 --max-turns 2 --repeats 2
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def agent_prompts(tasks, domain, family) -> list[str]:
    """The first agent prompt of each task, rendered with the family template (no model)."""
    from trajforge.finetune.render import generation_prompt
    from trajforge.generators.agent import LLMAgent
    from trajforge.generators.llm.concurrency import run_all
    from trajforge.generators.rollout import run_rollout
    from trajforge.generators.user import ScriptedUser
    from trajforge.schemas import ChatResponse, Message, Provenance

    prompts: list[str] = []

    class Recorder:
        async def complete(self, request):
            tools = [t.openai_schema() for t in request.tools]
            prompts.append(generation_prompt(request.messages, tools, family))
            return ChatResponse(message=Message(role="assistant", content="Goodbye."), model="r")

    provenance = Provenance(models={}, seeds={})
    run_all(
        [
            run_rollout(t, domain, LLMAgent(Recorder(), "r"), ScriptedUser(t), max_turns=1,
                        seed=0, provenance=provenance)
            for t in tasks
        ],
        4,
    )  # fmt: skip
    return prompts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="model directory (default: a tiny one)")
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--max-turns", type=int, default=2)
    parser.add_argument("--batch", type=int, default=8, help="batched setting's max_batch_size")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads (default: torch's)"
    )
    args = parser.parse_args()

    import torch

    from trajforge.finetune.agents import parse_agent
    from trajforge.finetune.evaluate import EvalConfig, evaluate, held_out_tasks
    from trajforge.finetune.families import get_family
    from trajforge.finetune.tiny import save_tiny
    from trajforge.generators.domains import get_domain

    if args.threads:
        torch.set_num_threads(args.threads)
    domain = get_domain("retail")
    base = dict(num_tasks=args.tasks, max_tokens=args.max_tokens, max_turns=args.max_turns)
    base.update(max_in_flight=max(args.batch, 1), family="qwen2.5" if not args.model else None)
    tasks, _ = held_out_tasks(EvalConfig(**base), domain)
    family = get_family("qwen2.5")
    model = args.model or str(
        save_tiny(Path(tempfile.mkdtemp()) / "tiny", agent_prompts(tasks, domain, family), family)
    )
    spec = parse_agent(model)
    evaluate(EvalConfig(**base, max_batch_size=1), spec, tasks[:1], domain)  # warm-up
    print(f"{len(tasks)} tasks a repeat, max_tokens {args.max_tokens}, max_turns "
          f"{args.max_turns}, torch threads {torch.get_num_threads()}")  # fmt: skip
    same = True
    for repeat in range(args.repeats):
        # fresh tasks each repeat: eval prompts never repeat a length (a conversation grows),
        # and a shape seen before runs faster on CPU (per-shape kernel set-up), so replaying
        # one task set would flatter the unbatched path, which meets ~8x more shapes
        cfg = EvalConfig(**base, seed=1000 + repeat)
        tasks, _ = held_out_tasks(cfg, domain)
        sizes = (1, args.batch) if repeat % 2 == 0 else (args.batch, 1)
        reports = {}
        for size in sizes:
            started, cpu = time.perf_counter(), time.process_time()
            report = evaluate(cfg.model_copy(update={"max_batch_size": size}), spec, tasks, domain)
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
            print(f"repeat {repeat} max_batch_size {size:>2}: {wall:7.1f} s wall "
                  f"({len(tasks) / wall:.3f} tasks/s), {cpu:7.1f} s CPU "
                  f"({len(tasks) / cpu:.3f} tasks per CPU s)", flush=True)  # fmt: skip
            reports[size] = report.model_dump(exclude={"baseline"})
        same = same and reports[1] == reports[args.batch]
    print(f"reports identical (batched vs unbatched): {same}")


if __name__ == "__main__":
    main()
