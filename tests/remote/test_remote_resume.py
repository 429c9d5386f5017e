"""`--resume` after the launcher of a remote-worker build is killed pays for (almost) no call
twice: the response cache lives in the run directory as one file per response written by the
workers themselves (`runner.cache_store: files`, what every gs:// run directory gets), not on
each worker's own disk. Same setup as test_portable_workers.py. Slow (~60 s).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from tests.remote.test_portable_workers import TOY, TRAJFORGE, build, ok

pytestmark = pytest.mark.slow

TASKS = 200  # ~2,000 calls, ~25 s with one remote worker: time to kill it part-way


def cached_responses(run: Path) -> int:
    root = run / "cache" / "responses"
    return sum(1 for p in root.glob("*/*.json") if not p.name.startswith("."))


def start_and_kill(config: Path, run: Path, args: list[str], after: int) -> int:
    """Start the build, SIGKILL the launcher (with its embedded job service) once `after`
    responses are cached; returns how many were cached then."""
    cmd = [*TRAJFORGE, "build", "--config", str(config), "--output", str(run), "--no-progress"]
    launcher = subprocess.Popen(
        [*cmd, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    while cached_responses(run) < after:
        assert launcher.poll() is None, "the build ended before it could be killed"
        assert time.monotonic() < deadline, "the build cached too few responses in time"
        time.sleep(0.2)
    os.killpg(launcher.pid, signal.SIGKILL)
    launcher.wait()
    time.sleep(2)  # a worker's call in flight may still land
    return cached_responses(run)


def test_resume_after_killed_remote_job_repeats_under_one_percent(tmp_path, worker_pool):
    config = yaml.safe_load(TOY.read_text())
    config.update(num_tasks=TASKS, runner={"cache_store": "files"})
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump(config))
    run = tmp_path / "run"
    args = ["--local-workers", *worker_pool.portable_args()]

    before_kill = start_and_kill(path, run, args, after=600)
    assert not (run / "_SUCCESS").exists()
    ok(build(path, run, "--resume", *args))

    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["accounting"]["holds"], manifest["accounting"]
    calls, cached = manifest["tokens"]["llm_calls"], manifest["tokens"]["cached_calls"]
    paid_on_resume = calls - cached
    never_answered = cached_responses(run) - before_kill
    repeated = paid_on_resume - never_answered
    assert cached >= before_kill - calls // 100, (cached, before_kill)
    assert repeated <= calls // 100, f"{repeated} of {calls} calls paid twice"
