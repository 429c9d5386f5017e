"""kill -9 and SIGTERM at every stage of writing leave nothing readable that is wrong.

A toy build runs in a subprocess whose writer is wrapped to signal itself at one point: half-way
through a shard, a shard written but not renamed, between the renames of `data/` and `views/`,
while writing the manifest, while writing the card (the last file before `_SUCCESS`). After each: no `_SUCCESS`; every Parquet
file under a visible name is whole; `datasets.load_dataset` refuses the run; `trajforge show`
refuses it with one line; `--resume` finishes it with the rows a clean build has.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from trajforge.pipelines import ownership
from trajforge.pipelines.cli import main

TOY = Path(__file__).resolve().parents[2] / "configs" / "toy.yaml"

KILLER = textwrap.dedent(
    """
    import os, signal, sys, time
    from trajforge.pipelines import ownership

    point, sig = sys.argv[1], getattr(signal, sys.argv[2])
    real_rename, real_move, real_write = ownership._rename, ownership.move, ownership.write_text
    moves, writes = [], []

    def die():
        os.kill(os.getpid(), sig)
        time.sleep(30)

    def rename(src, dst):
        if dst.endswith(".parquet") and point == "mid_shard":
            with open(src, "r+b") as f:  # as if killed half-way through writing it
                f.truncate(os.path.getsize(src) // 2)
            die()
        if dst.endswith(".parquet") and point == "shard_not_renamed":
            die()
        real_rename(src, dst)

    def move(run_dir, src, dst):
        moves.append(src)
        if point == "between_renames" and len(moves) == 2:
            die()
        real_move(run_dir, src, dst)

    def write_text(run_dir, rel, text):
        writes.append(rel)
        if point == "card" and rel == "README.md" and writes.count("README.md") == 2:
            die()  # the finished card (the first README is the placeholder)
        if (point, rel) == ("manifest", "manifest.json"):
            with ownership.create(run_dir, rel) as f:  # killed half-way through the write
                f.write(text[: len(text) // 2].encode())
                f.flush()
                die()
        return real_write(run_dir, rel, text)

    ownership._rename, ownership.move, ownership.write_text = rename, move, write_text
    from trajforge.pipelines.cli import main
    sys.exit(main(sys.argv[3:]))
    """
)

POINTS = ["mid_shard", "shard_not_renamed", "between_renames", "manifest", "card"]


def visible_parquet(run: Path) -> list[Path]:
    """Parquet files a reader would pick up: no path component hidden."""
    return [
        p
        for p in run.rglob("*.parquet")
        if not any(part.startswith(".") for part in p.relative_to(run).parts)
    ]


def rows(run: Path) -> int:
    return sum(pq.ParquetFile(p).metadata.num_rows for p in (run / "data").glob("*.parquet"))


@pytest.fixture(scope="module")
def clean_rows(tmp_path_factory) -> int:
    out = tmp_path_factory.mktemp("clean") / "run"
    assert main(["build", "--config", str(TOY), "--output", str(out), "--no-progress"]) == 0
    return rows(out)


@pytest.mark.slow  # ten builds in subprocesses and ten resumes (~2 min)
@pytest.mark.parametrize("sig", ["SIGKILL", "SIGTERM"])
@pytest.mark.parametrize("point", POINTS)
def test_a_killed_build_leaves_nothing_readable_that_is_wrong(
    tmp_path, point, sig, clean_rows, capsys
):
    import datasets

    run = tmp_path / "run"
    script = tmp_path / "killer.py"
    script.write_text(KILLER)
    argv = ["build", "--config", str(TOY), "--output", str(run), "--no-progress"]
    proc = subprocess.run(
        [sys.executable, str(script), point, sig, *argv], capture_output=True, text=True
    )
    assert proc.returncode == -getattr(signal, sig), proc.stderr[-2000:]
    assert not (run / "_SUCCESS").exists()
    for path in visible_parquet(run):  # whole, or not there under a readable name
        pq.ParquetFile(path).metadata  # noqa: B018 - raises on a truncated file
    if point in ("mid_shard", "shard_not_renamed"):
        assert not visible_parquet(run)
    with pytest.raises(Exception) as err:  # noqa: PT011 - datasets' error types vary
        datasets.load_dataset(str(run))
    assert "found" in str(err.value).lower() or "unable" in str(err.value).lower(), err.value
    assert main(["show", str(run)]) == 2
    err_line = capsys.readouterr().err.strip()
    assert len(err_line.splitlines()) == 1 and "no _SUCCESS" in err_line
    assert main([*argv, "--resume"]) == 0
    assert (run / "_SUCCESS").exists() and rows(run) == clean_rows
    assert json.loads((run / "manifest.json").read_text())["status"] == "succeeded"
    leftovers = [p for p in ownership.recorded(str(run)) if ".tmp-" in p or "partial" in p]
    assert all(not os.path.exists(run / p) for p in leftovers), leftovers


def test_a_failed_write_never_leaves_a_file_under_its_final_name(tmp_path):
    """The writer's discipline, without a build: an error half-way removes the temporary
    file, and the final name never existed."""
    ownership.start(str(tmp_path), "h")
    with pytest.raises(RuntimeError), ownership.create(str(tmp_path), "data/x.parquet") as f:
        f.write(b"PAR1 half")
        raise RuntimeError("killed")
    assert not (tmp_path / "data" / "x.parquet").exists()
    assert [p.name for p in (tmp_path / "data").iterdir()] == []
    ownership.write_text(str(tmp_path), "data/x.parquet", "whole")
    assert (tmp_path / "data" / "x.parquet").read_text() == "whole"
    assert {"data", "data/x.parquet"} <= ownership.recorded(str(tmp_path))
