"""What a benchmarked build produced, read back for `bench_build.py`: its trajectories (for the
critical path), a digest of its outputs (so two builds of one config, e.g. one process and
several, can be checked for identical rows) and the resident memory of a whole process tree
(ru_maxrss reports only the largest single process; a multi-process build is several).
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
from pathlib import Path


def trajectories_of(run_dir: Path) -> list[dict]:
    """Every trajectory the build produced (kept rows and rejections after generation)."""
    import pyarrow.parquet as pq

    out = []
    for path in sorted(glob.glob(str(run_dir / "data" / "*.parquet"))):
        out += [
            json.loads(t) for t in pq.read_table(path, columns=["trajectory_json"])[0].to_pylist()
        ]
    for path in sorted(glob.glob(str(run_dir / "rejected" / "*.jsonl"))):
        for line in Path(path).read_text().splitlines():
            payload = json.loads(json.loads(line)["payload_json"])
            if "messages" in payload:
                out.append(payload)
    return out


#: Left out of the digest: measured wall-clock values (a trajectory's `cost.latency_s`) differ
#: between any two runs of one config, and `config_hash` holds the stub's port (each build gets
#: a fresh stub). Everything else must match.
VOLATILE = frozenset({"latency_s", "config_hash"})


def stable(value: object) -> object:
    """`value` without VOLATILE keys, JSON held in `*_json` strings unpacked the same way."""
    if isinstance(value, dict):
        return {
            k: stable(json.loads(v) if k.endswith("_json") and isinstance(v, str) else v)
            for k, v in value.items()
            if k not in VOLATILE
        }
    if isinstance(value, list):
        return [stable(v) for v in value]
    return value


def output_lines(run_dir: Path) -> dict[str, list[str]]:
    """Kept rows (every column, split included) and rejected/dead-letter records, each sorted:
    which shard a row lands in depends on bundling, the rows themselves must not."""
    import pyarrow.parquet as pq

    def line(record: dict) -> str:
        return json.dumps(stable(record), sort_keys=True)

    kept = []
    for path in sorted(glob.glob(str(run_dir / "data" / "*.parquet"))):
        kept += [line(r) for r in pq.read_table(path).to_pylist()]
    out = {"kept": sorted(kept)}
    for sub in ("rejected", "dead_letter"):
        lines = []
        for path in sorted(glob.glob(str(run_dir / sub / "*.jsonl"))):
            text = Path(path).read_text()
            lines += [line(json.loads(ln)) for ln in text.splitlines() if ln.strip()]
        out[sub] = sorted(lines)
    return out


def outputs_digest(run_dir: Path) -> dict[str, str]:
    """sha256 (16 hex) per output of `output_lines`, plus their row counts."""
    digest = {}
    for name, lines in output_lines(run_dir).items():
        digest[name] = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]
        digest[f"{name}_rows"] = str(len(lines))
    return digest


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                kids += [int(k) for k in f.read().split()]
    except OSError:  # the process just ended
        pass
    return kids


def tree_rss_mb(pid: int) -> float:
    """Resident memory of `pid` and all its descendants now (Linux /proc; 0 elsewhere)."""
    total, todo = 0, [pid]
    page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
    while todo:
        current = todo.pop()
        try:
            with open(f"/proc/{current}/statm") as f:
                total += int(f.read().split()[1]) * page
        except (OSError, IndexError, ValueError):
            continue
        todo += _children(current)
    return total / 2**20
