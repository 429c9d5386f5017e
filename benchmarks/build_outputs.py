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


class TreeSampler:
    """Samples a process tree: the peak of its summed RSS, and each process's last seen CPU
    time (how the work of a multi-process build splits between the driver and its workers;
    a process's CPU after its last sample is missed)."""

    def __init__(self, root: int):
        self.root = root
        self.peak_rss_mb = 0.0
        self.cpu_s: dict[int, float] = {}
        self._page = os.sysconf("SC_PAGE_SIZE")
        self._tick = os.sysconf("SC_CLK_TCK")

    def sample(self) -> None:
        total, todo = 0, [self.root]
        while todo:
            pid = todo.pop()
            try:
                with open(f"/proc/{pid}/statm") as f:
                    total += int(f.read().split()[1]) * self._page
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                self.cpu_s[pid] = (int(fields[11]) + int(fields[12])) / self._tick
            except (OSError, IndexError, ValueError):  # the process just ended
                continue
            todo += _children(pid)
        self.peak_rss_mb = max(self.peak_rss_mb, total / 2**20)

    def process_cpu_s(self) -> list[float]:
        """The root's CPU first, then its descendants' from the largest."""
        rest = sorted((v for k, v in self.cpu_s.items() if k != self.root), reverse=True)
        return [round(v, 2) for v in [self.cpu_s.get(self.root, 0.0), *rest]]


def tree_rss_mb(pid: int) -> float:
    """Resident memory of `pid` and all its descendants now (Linux /proc)."""
    sampler = TreeSampler(pid)
    sampler.sample()
    return sampler.peak_rss_mb
