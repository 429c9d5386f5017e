"""The launcher's time after Beam finishes: from the pipeline's end to `run_build`'s return
(outputs made loadable and renamed, counted, the manifest's per-split figures, report, card).

    python benchmarks/bench_post_beam.py --tasks 300 --attempts 2 --out /tmp/postbeam

Runs one local build in this process (rollout mode, oracle agent, scripted user and backends:
no model) and prints the post-Beam wall and CPU time and where it went. Run it from two
checkouts to compare them; the steps it names are wrapped only when the checkout has them.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time

from trajforge.pipelines import attempts, build, io, splits
from trajforge.pipelines.config import BuildConfig
from trajforge.pipelines.run_dir import prepare_run_dir

try:  # the finished-run tools' package (older checkouts: beside the build)
    from trajforge.pipelines.finished import card
except ImportError:  # pragma: no cover - an older checkout
    from trajforge.pipelines import card  # type: ignore[no-redef]

SPENT: dict[str, list[float]] = {}


def timed(owner: object, name: str, label: str) -> None:
    """Wrap `owner.name` (when present) to add its wall and CPU seconds to SPENT[label]."""
    fn = getattr(owner, name, None)
    if fn is None:
        return

    def wrapper(*args, **kwargs):
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent = SPENT.setdefault(label, [0.0, 0.0])
            spent[0] += time.perf_counter() - wall
            spent[1] += time.process_time() - cpu

    setattr(owner, name, wrapper)


def config(tasks: int, attempts_per_task: int) -> BuildConfig:
    return BuildConfig.model_validate(
        {
            "name": "post-beam",
            "domain": "retail",
            "num_tasks": tasks,
            "seed": 7,
            "mode": "rollout",
            "roles": {"agent": {"kind": "scripted", "responder": "blueprint"}},
            "rollout": {"agent": "oracle", "user": "scripted", "attempts": attempts_per_task},
            "cache": {"enabled": False},
            "quality": {
                "shortcut": {"no_tool_baseline": False},
                "filters": [{"name": "agent_tool_calls"}, {"name": "loops"}, {"name": "policy"}],
                "dedup": {"semantic": {"enabled": False}},
            },
            "output": {"splits": {"train": 0.6, "validation": 0.1, "golden": 0.3}},
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--attempts", type=int, default=2)
    parser.add_argument("--out", default="/tmp/post_beam_bench")
    args = parser.parse_args()
    cfg = config(args.tasks, args.attempts)
    shutil.rmtree(args.out, ignore_errors=True)
    prepare_run_dir(args.out, cfg.config_hash(), resume=False, overwrite=True)
    timed(build.shards, "ensure_loadable", "ensure_loadable")
    timed(build, "publish_outputs", "publish_outputs")
    timed(io, "count_outputs", "count_outputs")
    timed(splits, "gap_table", "gap table (reads every row)")
    timed(build, "side_summaries", "side summaries (figures from the pipeline)")
    timed(attempts, "add_split_difficulty", "difficulty by split (reads every row)")
    timed(card, "token_stats", "card tokens (reads every row)")
    timed(build, "write_report", "report")
    timed(build, "dataset_card", "card")
    start = {}
    ensure = build.shards.ensure_loadable

    def first_post_beam_step(*a, **k):  # the pipeline has finished when this is called
        start.setdefault("wall", time.perf_counter())
        start.setdefault("cpu", time.process_time())
        return ensure(*a, **k)

    build.shards.ensure_loadable = first_post_beam_step
    t0 = time.perf_counter()
    result = build.run_build(cfg, args.out, ["--direct_num_workers=1"])
    total = time.perf_counter() - t0
    post_wall = time.perf_counter() - start["wall"]
    post_cpu = time.process_time() - start["cpu"]
    rows = result.manifest.outputs.kept
    print(json.dumps({"rows": rows, "build_wall_s": round(total, 2)}, sort_keys=True))
    print(f"post-Beam: wall {post_wall:.3f} s, CPU {post_cpu:.3f} s")
    for label, (wall, cpu) in SPENT.items():
        print(f"  {label:40s} wall {wall:.3f} s  CPU {cpu:.3f} s")


if __name__ == "__main__":
    main()
