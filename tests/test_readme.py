"""The docs' Python example (docs/getting-started.md, "One trajectory from Python") runs as
written on the embedded model and verifies."""

import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs/getting-started.md"


def python_block_after(heading: str) -> str:
    text = PAGE.read_text()
    section = text.split(heading, 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.mark.slow  # real embedded model: the opt-in tier CI also runs
def test_readme_one_trajectory_example_runs(capsys):
    code = python_block_after("## One trajectory from Python")
    exec(compile(code, "docs/getting-started.md", "exec"), {})
    out = capsys.readouterr().out
    assert "outcome passed: True" in out
    assert "tool:" in out
