"""One build config in one process and in two worker processes (`runner.local_processes`)
writes the same rows: kept rows with their ids and splits, rejections and dead letters, and the
manifest counts the same; the live progress tally, summed over the worker processes' files,
ends at the manifest's numbers."""

from __future__ import annotations

import glob
import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from trajforge.pipelines.cli import main

CONFIG = """
name: processes
domain: retail
num_tasks: 10
seed: 4
mode: {mode}
roles:
  agent: {{kind: scripted, responder: blueprint}}
rollout: {{agent: oracle, user: scripted, max_turns: 12}}
concurrency: {{max_in_flight: 8}}
cache: {{enabled: false}}
failure: {{min_kept: 0}}  # the oracle's rollouts are all refused by a filter
quality: {{dedup: {{semantic: {{enabled: false}}}}}}
output:
  num_shards: 2
  splits: {{train: 0.7, validation: 0.0, golden: 0.3}}
runner: {{local_processes: {processes}}}
"""


def without_latency(value: object) -> object:
    """`cost.latency_s` is measured wall time: it differs between any two runs."""
    if isinstance(value, dict):
        return {
            k: without_latency(json.loads(v) if k.endswith("_json") else v)
            for k, v in value.items()
            if k != "latency_s"
        }
    if isinstance(value, list):
        return [without_latency(v) for v in value]
    return value


def outputs(run: Path) -> dict[str, list[str]]:
    """Every output row, sorted (the shard a row lands in may follow the bundling)."""

    def dump(record: dict) -> str:
        return json.dumps(without_latency(record), sort_keys=True)

    kept = [
        dump(r) for f in glob.glob(f"{run}/data/*.parquet") for r in pq.read_table(f).to_pylist()
    ]
    out = {"kept": sorted(kept)}
    for sub in ("rejected", "dead_letter"):
        lines = [
            ln for f in glob.glob(f"{run}/{sub}/*.jsonl") for ln in Path(f).read_text().splitlines()
        ]
        out[sub] = sorted(dump(json.loads(ln)) for ln in lines if ln.strip())
    return out


def build(tmp_path: Path, mode: str, processes: int, capsys) -> tuple[dict, dict, str]:
    base = tmp_path / f"{mode}-{processes}"
    base.mkdir()
    (base / "build.yaml").write_text(CONFIG.format(mode=mode, processes=processes))
    code = main(["build", "--config", str(base / "build.yaml"), "--output", str(base / "run")])
    printed = capsys.readouterr().out
    assert code == 0, printed
    manifest = json.loads((base / "run" / "manifest.json").read_text())
    return manifest, outputs(base / "run"), printed


def last_progress(printed: str) -> dict[str, int]:
    """The final plain progress line's counts (`kept 7 | rejected 3 failed 0`)."""
    line = [ln for ln in printed.splitlines() if "of 10 tasks:" in ln][-1]
    return {k: int(v) for k, v in re.findall(r"(kept|rejected|failed) (\d+)", line)}


@pytest.mark.parametrize("mode", ["blueprint", pytest.param("rollout", marks=pytest.mark.slow)])
def test_two_processes_write_the_same_rows_as_one(mode, tmp_path, capsys):
    one, rows_one, _ = build(tmp_path, mode, 1, capsys)
    two, rows_two, printed = build(tmp_path, mode, 2, capsys)
    assert one["local_processes"]["processes"] == 1
    assert two["local_processes"] == {
        "processes": 2,
        "source": "config",
        "reason": "runner.local_processes: 2",
    }
    assert "local processes: 2 (config: runner.local_processes: 2)" in printed
    assert rows_two == rows_one
    assert len(rows_one["kept"]) + len(rows_one["rejected"]) >= 8  # rows, not an empty build
    for key in ("outputs", "accounting", "stage_counts", "filters"):
        assert two[key] == one[key], key
    assert two["config_hash"] == one["config_hash"]
    out = two["outputs"]
    assert last_progress(printed) == {
        "kept": out["kept"],
        "rejected": out["rejected"],
        "failed": out["dead_lettered"],
    }
