"""`trajforge calibrate` says when its figures mean nothing, and exits non-zero."""

import json
from pathlib import Path

from trajforge.pipelines.cli import main

TOY = (Path(__file__).resolve().parents[2] / "configs" / "toy.yaml").read_text()


def test_nothing_graded_is_an_error_not_a_zero_accuracy(tmp_path, capsys):
    """A judge whose every answer is unreadable grades nothing: accuracy 0.0 (0/0) with exit
    0 read as a judge that is always wrong."""
    config = tmp_path / "c.yaml"
    config.write_text(
        TOY.replace(
            "  agent: {kind: scripted, responder: blueprint}\n",
            "  agent: {kind: scripted, responder: blueprint}\n"
            "  judge: {kind: scripted, responder: echo}\n",
        ).replace("num_tasks: 12", "num_tasks: 4")
    )
    out = tmp_path / "run"
    assert main(["build", "--config", str(config), "--output", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["calibrate", "--run", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: nothing graded")
    report = json.loads((out / "calibration.json").read_text())
    assert report["n"] == 0 and report["problem"].startswith("nothing graded")
