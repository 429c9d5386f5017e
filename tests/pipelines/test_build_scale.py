"""A 10,000-task build (slow tier, issue 30): CPU per task stays flat from 1,000 to 10,000
tasks and the build's peak RSS stays bounded. The cheapest build that runs the whole pipeline:
the shipped toy domain in blueprint mode on the `scripted` backend (no HTTP, no model), one
process, as `trajforge build` runs it. Each build is a child process, so its CPU and peak RSS
(os.wait4) are its own: the imports and graph construction count once per build, which is why
the comparison is per task within a generous factor, not an exact slope."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CONFIG = """\
name: scale-{n}
domain: toy
num_tasks: {n}
seed: 1
mode: blueprint
roles:
  agent: {{kind: scripted, responder: blueprint}}
concurrency: {{max_in_flight: 8}}
cache: {{enabled: false}}
quality:
  dedup:
    semantic: {{enabled: false}}
output:
  num_shards: 4
  splits: {{train: 0.9, validation: 0.0, golden: 0.1}}
"""

#: CPU per task of the big build over the small one's: the small one carries the whole fixed
#: cost (~3 s of imports and graph construction) over a tenth of the tasks, so a flat cost
#: gives ~0.8; 1.5 fails a cost that grows with the build (e.g. a quadratic step).
FLAT_FACTOR = 1.5
#: Peak RSS of the 10,000-task build (MB); measured 1,734 (518 at 1,000 tasks), 2026-12-05. Before the packed shard values (issue 30) a toy
#: build's peak grew by ~0.7 MB per task (530 MB at 400 tasks, 1,100 MB at 1,600): ~7 GB at
#: 10,000. The local runner still holds each GroupByKey's PCollection in memory (records,
#: trajectories, packed rows: ~10-40 KB per task, two or three copies), so the bound leaves
#: room for that linear part and fails the per-row growth this test guards against.
PEAK_RSS_MB = 2_000


#: Runs a command and writes its rusage as JSON to argv[1]. Why a small parent of its own: a
#: forked child's peak RSS (ru_maxrss) starts from its parent's resident set before exec, so a
#: build forked straight from a pytest process that has run the slow tier (~2.3 GB) reported
#: the pytest process's size, not its own.
MEASURE = """
import json, os, subprocess, sys
child = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(child.pid, 0)
with open(sys.argv[1], "w") as f:
    json.dump({"exit": os.waitstatus_to_exitcode(status), "cpu_s": usage.ru_utime + usage.ru_stime,
               "peak_rss_mb": usage.ru_maxrss / 1024}, f)
"""


def build(tmp_path: Path, n: int) -> tuple[float, float, dict]:
    """(CPU seconds, peak RSS MB, manifest) of one build of `n` tasks in a child process."""
    base = tmp_path / f"n{n}"
    base.mkdir()
    (base / "build.yaml").write_text(CONFIG.format(n=n))
    command = [sys.executable, "-m", "trajforge.pipelines.cli", "build", "--no-progress"]
    command += ["--config", str(base / "build.yaml"), "--output", str(base / "run")]
    measured = base / "rusage.json"
    with (base / "log").open("w") as log:
        subprocess.run(
            [sys.executable, "-c", MEASURE, str(measured), *command],
            stdout=log,
            stderr=subprocess.STDOUT,
            check=True,
        )
    usage = json.loads(measured.read_text())
    assert usage["exit"] == 0, (base / "log").read_text()[-3000:]
    manifest = json.loads((base / "run" / "manifest.json").read_text())
    return usage["cpu_s"], usage["peak_rss_mb"], manifest


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_ten_thousand_tasks_flat_cpu_and_bounded_memory(tmp_path):
    small_cpu, small_rss, small = build(tmp_path, 1_000)
    big_cpu, big_rss, big = build(tmp_path, 10_000)
    for manifest, n in ((small, 1_000), (big, 10_000)):
        assert manifest["accounting"]["holds"] and manifest["inputs"] == n
        assert manifest["outputs"]["kept"] > n // 2
    per_task = (small_cpu / 1_000, big_cpu / 10_000)
    print(
        f"cpu ms/task 1k {per_task[0] * 1e3:.1f} 10k {per_task[1] * 1e3:.1f}; "
        f"peak RSS MB 1k {small_rss:.0f} 10k {big_rss:.0f}"
    )
    assert per_task[1] <= FLAT_FACTOR * per_task[0], per_task
    assert big_rss <= PEAK_RSS_MB, (small_rss, big_rss)
