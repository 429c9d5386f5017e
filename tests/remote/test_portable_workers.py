"""A build whose work runs in remote workers produces the same data as the in-process build.

PortableRunner with its embedded job service and `--environment_type=EXTERNAL` workers from a
worker pool started in a separate venv that holds only the built wheel (dependencies from the
main environment's site-packages, offline): the pickling, staging and Fn API path Dataflow's
runner v2 takes. The run directory is a local folder both sides see (`--local-workers`, the only
setup where a remote runner may write locally). Slow (~30 s): in the tier `.ci/run` runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
TOY = ROOT / "configs" / "toy.yaml"
TRAJFORGE = [sys.executable, "-m", "trajforge.pipelines.cli"]

pytestmark = pytest.mark.slow


def build(
    config: Path, output: Path, *extra: str, timeout: int = 600
) -> subprocess.CompletedProcess:
    cmd = [*TRAJFORGE, "build", "--config", str(config), "--output", str(output), "--no-progress"]
    return subprocess.run([*cmd, *extra], capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def ok(done: subprocess.CompletedProcess) -> None:
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


def parquet_files(run: Path) -> dict[str, Path]:
    return {str(p.relative_to(run)): p for p in sorted(run.rglob("*.parquet"))}


def assert_same_data(a: Path, b: Path) -> None:
    """Every parquet file (data/ and the views) has the same rows and the same bytes."""
    files_a, files_b = parquet_files(a), parquet_files(b)
    assert files_a.keys() == files_b.keys()
    assert any(name.startswith("data/") for name in files_a)
    for name, path in files_a.items():
        assert pq.read_table(path).to_pylist() == pq.read_table(files_b[name]).to_pylist(), name
        assert path.read_bytes() == files_b[name].read_bytes(), name
    for name in ("splits.json", "rejected/summary.json", "dead_letter/summary.json"):
        assert (a / name).read_text() == (b / name).read_text(), name


def test_local_output_needs_local_workers(tmp_path, worker_pool):
    done = build(TOY, tmp_path / "run", *worker_pool.portable_args())
    assert done.returncode == 2
    assert "--local-workers" in done.stderr


def test_portable_workers_from_the_wheel_match_fnapi(tmp_path, worker_pool):
    local, remote = tmp_path / "fnapi", tmp_path / "portable"
    ok(build(TOY, local))
    before = worker_pool.workers_started()
    ok(build(TOY, remote, "--local-workers", *worker_pool.portable_args()))
    assert worker_pool.workers_started() > before, "no work reached the worker pool"

    manifest = json.loads((remote / "manifest.json").read_text())
    assert manifest["runner"] == "PortableRunner"
    assert manifest["accounting"]["holds"], manifest["accounting"]
    assert manifest["outputs"]["kept"] >= 1
    assert (remote / "_SUCCESS").exists()
    assert_same_data(local, remote)
