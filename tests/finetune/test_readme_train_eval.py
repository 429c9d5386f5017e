"""The train-then-eval commands of docs/guides/finetune.md, run as written (slow: a build, SFT, two evals)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from trajforge.finetune import tiny
from trajforge.pipelines.cli import main

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs/guides/finetune.md"


def _commands(text: str, heading: str) -> list[list[str]]:
    section = text.split(heading, 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [shlex.split(line) for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def readme_commands() -> list[list[str]]:
    return _commands(PAGE.read_text(), "# Fine-tuning and evaluation")


def test_readme_shows_the_commands_of_the_docs_page():
    """README.md's "Train on the result" block is the docs page's, so this test runs both."""
    readme = _commands((ROOT / "README.md").read_text(), "## Train on the result")
    assert readme == readme_commands()


@pytest.mark.slow
def test_readme_train_then_eval_reduces_loss(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "configs").symlink_to(ROOT / "configs")
    for argv in readme_commands():
        if argv[0] == "trajforge":
            assert (
                main([*argv[1:], *(["--no-progress"] if argv[1] in ("build", "finetune") else [])])
                == 0
            )
        else:
            assert argv[:3] == ["python", "-m", "trajforge.finetune.tiny"]
            assert tiny.main(argv[3:]) == 0
    metrics = [
        json.loads(x) for x in (tmp_path / "runs/tiny-sft/metrics.jsonl").read_text().splitlines()
    ]
    losses = [m["loss"] for m in metrics if "loss" in m]
    assert losses[-1] < losses[0] - 1.0
    reports = json.loads((tmp_path / "runs/tiny-eval.json").read_text())
    assert [r["agent"] for r in reports] == ["runs/tiny-base", "runs/tiny-sft/model", "oracle"]
    assert reports[2]["overall"]["pass_hat"]["1"] == 1.0
