"""`trajforge eval` of a model directory with and without prefix-KV reuse (`TransformersChat`).

Evaluates the same tasks of a run's split with the same threads, alternating the two settings,
times `evaluate()` only (wall and process CPU seconds; the first model load is warmed up) and
checks the two reports are identical: reuse must change the time, never an attempt. Defaults
to the data-value benchmark's tuned model and golden split (`make data-value` makes them).

Usage:
  python benchmarks/bench_eval_prefix.py --tasks 16 --k 3 --repeats 2
"""

from __future__ import annotations

import argparse
import time
from functools import partialmethod
from unittest import mock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="runs/data-value/sft/main/model")
    parser.add_argument("--run", default="runs/data-value/runs/golden", help="run directory")
    parser.add_argument("--split", default="golden")
    parser.add_argument("--tasks", type=int, default=16, help="first N tasks of the split")
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--batch", type=int, default=48, help="max_batch_size and in flight")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    args = parser.parse_args()

    import torch

    from trajforge.finetune.agents import parse_agent
    from trajforge.finetune.evaluate import EvalConfig, evaluate, first_tasks, read_split
    from trajforge.finetune.hf_client import TransformersChat

    torch.set_num_threads(args.threads)
    cfg = EvalConfig(
        tasks=args.run,
        split=args.split,
        max_tasks=args.tasks,
        k=args.k,
        temperature=0.7,
        max_tokens=64,
        max_turns=8,
        max_in_flight=args.batch,
        max_batch_size=args.batch,
    )  # fmt: skip  (the data-value benchmark's eval settings)
    run_tasks = read_split(args.run, args.split)
    domain, tasks = run_tasks.domain, list(first_tasks(run_tasks.tasks, args.tasks).tasks)
    spec = parse_agent(args.model)
    plain_init = partialmethod(TransformersChat.__init__, reuse_prefix=False)

    def run(reuse: bool) -> tuple[float, float, dict]:
        patch = mock.patch.object(TransformersChat, "__init__", plain_init) if not reuse else None
        with patch or mock.patch.dict({}):
            started, cpu = time.perf_counter(), time.process_time()
            report = evaluate(cfg, spec, tasks, domain)
            return (
                time.perf_counter() - started,
                time.process_time() - cpu,
                report.model_dump(exclude={"baseline"}),
            )

    run(True)  # warm-up: imports, kernels
    print(f"{len(tasks)} tasks x k={args.k}, batch {args.batch}, torch threads "
          f"{torch.get_num_threads()}, model {args.model}")  # fmt: skip
    same, totals = True, {True: [0.0, 0.0], False: [0.0, 0.0]}
    for repeat in range(args.repeats):
        reports = {}
        for reuse in (False, True) if repeat % 2 == 0 else (True, False):
            wall, cpu, reports[reuse] = run(reuse)
            totals[reuse][0] += wall
            totals[reuse][1] += cpu
            print(f"repeat {repeat} prefix reuse {'on ' if reuse else 'off'}: {wall:7.1f} s "
                  f"wall, {cpu:7.1f} s CPU", flush=True)  # fmt: skip
        same = same and reports[True] == reports[False]
    print(f"reports identical (reuse on vs off): {same}")
    print(f"ratio on/off over all repeats: wall {totals[True][0] / totals[False][0]:.3f}, "
          f"CPU {totals[True][1] / totals[False][1]:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
