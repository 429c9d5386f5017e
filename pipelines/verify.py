"""`trajforge verify`: the gate over trajectories already on disk, one verdict per line.

Input is a JSONL file of `Trajectory` records (one per line) or a finished run directory (its
`data/*.parquet` rows carry `trajectory_json`). Nothing is generated and no LLM is called: an old
build can be re-filtered with new rules, another system's trajectories checked as they are.
"""

from __future__ import annotations

import glob
import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from trajforge.schemas import Trajectory
from trajforge.verifiers.filters import DEFAULT_FILTERS, FilterSpec, build_filters
from trajforge.verifiers.gate import Verdict, gate_verdict


def read_trajectories(source: str) -> Iterator[Trajectory]:
    """Trajectories from a JSONL file or a run directory's data shards, in a stable order."""
    if os.path.isdir(source):
        from trajforge.pipelines.io import iter_parquet

        shards = sorted(glob.glob(os.path.join(source, "data", "*.parquet")))
        if not shards:
            raise FileNotFoundError(f"{source} has no data/*.parquet (is it a finished run?)")
        for shard in shards:
            for row in iter_parquet(shard, ["trajectory_json"]):
                yield Trajectory.from_json(row["trajectory_json"])
        return
    with open(source, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if line.strip():
                try:
                    yield Trajectory.from_json(line)
                except ValueError as err:
                    raise ValueError(f"{source} line {number} is not a Trajectory: {err}") from None


def verify_file(
    source: str, output: str, specs: tuple[FilterSpec, ...] = DEFAULT_FILTERS
) -> Counter:
    """Write one `Verdict` per trajectory to `output`; return counts (kept, and per reason)."""
    from trajforge.generators.domains import get_domain

    filters = build_filters(specs)
    domains: dict = {}
    counts: Counter = Counter()
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    with open(output, "w", encoding="utf-8") as out:
        for trajectory in read_trajectories(source):
            name = trajectory.task.domain
            domain = domains.setdefault(name, get_domain(name))
            verdict: Verdict = gate_verdict(trajectory, domain, filters)
            out.write(json.dumps(verdict.model_dump(mode="json"), sort_keys=True) + "\n")
            counts["kept" if verdict.kept else "rejected"] += 1
            counts.update(f"reason.{r.reason}" for r in verdict.reasons)
    return counts
