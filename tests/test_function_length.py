"""No function of the library is over 60 lines (issue 31): a longer one is split into named
steps, so a reader sees what it does from the names. Covers every library folder."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("generators", "verifiers", "schemas", "finetune", "pipelines")
MAX_LINES = 60


def long_functions(path: Path, root: Path = ROOT) -> list[str]:
    """`path:line name (N lines)` of each function or method over `MAX_LINES`."""
    tree = ast.parse(path.read_text())
    return [
        f"{path.relative_to(root)}:{node.lineno} {node.name} ({length} lines)"
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and (length := node.end_lineno - node.lineno + 1) > MAX_LINES
    ]


def test_no_library_function_is_over_60_lines():
    found = [
        hit for f in FOLDERS for p in sorted((ROOT / f).rglob("*.py")) for hit in long_functions(p)
    ]
    assert not found, "split these into named steps:\n" + "\n".join(found)


def test_the_check_sees_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "long.py").write_text(f"def long():\n{body}\n")
    assert long_functions(tmp_path / "long.py", tmp_path) == [
        f"long.py:1 long ({MAX_LINES + 1} lines)"
    ]
