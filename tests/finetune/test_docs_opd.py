"""The OPD commands of docs/guides/opd-grpo.md, run as written on CPU (slow: two tiny models
and two OPD steps)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from trajforge.finetune import tiny
from trajforge.pipelines.cli import main

PAGE = Path(__file__).resolve().parents[2] / "docs/guides/opd-grpo.md"


def page_commands() -> list[list[str]]:
    section = PAGE.read_text().split("## On-policy distillation", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    lines = block.replace("\\\n", " ").splitlines()
    return [shlex.split(line, comments=True) for line in lines if line.split("#")[0].strip()]


@pytest.mark.slow
def test_docs_opd_commands_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    commands = page_commands()
    assert [c[0] for c in commands] == ["python", "python", "trajforge"]
    for argv in commands:
        if argv[0] == "trajforge":
            assert main(argv[1:]) == 0
        else:
            assert argv[:3] == ["python", "-m", "trajforge.finetune.tiny"]
            assert tiny.main(argv[3:]) == 0
    metrics = [
        json.loads(x) for x in (tmp_path / "runs/opd/metrics.jsonl").read_text().splitlines()
    ]
    assert any("loss" in m for m in metrics)
