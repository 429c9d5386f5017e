"""Imports sit at the top of modules (issue 31): an import inside a function hides a module's
dependencies from its reader. The exception is a measured start-up cost (torch, transformers,
datasets, an optional backend, a module that pulls one of them): such an import stays where it
is used, with a comment on its line (or the line above) saying why. Covers every library folder."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("generators", "verifiers", "schemas", "finetune", "pipelines")


def uncommented_function_imports(path: Path) -> list[str]:
    """`path:line module` of each import inside a function without a reason beside it: a
    comment on its line or the line above, or it follows straight on from such an import (one
    comment may head a block of them)."""
    lines = path.read_text().splitlines()
    found = []
    for node in ast.walk(ast.parse("\n".join(lines))):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        imports = [n for n in node.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        imports += [
            n
            for child in node.body
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            for n in ast.walk(child)
            if isinstance(n, (ast.Import, ast.ImportFrom)) and n not in imports
        ]
        explained_until = -1
        for inner in sorted(imports, key=lambda n: n.lineno):
            first, above = lines[inner.lineno - 1], lines[inner.lineno - 2].strip()
            if "#" in first or above.startswith("#") or inner.lineno - 1 == explained_until:
                explained_until = inner.end_lineno or inner.lineno
                continue
            name = getattr(inner, "module", None) or inner.names[0].name
            found.append(f"{path.relative_to(ROOT)}:{inner.lineno} {name}")
    return found


@pytest.mark.parametrize("folder", FOLDERS)
def test_function_level_imports_say_why(folder):
    found = [hit for path in sorted((ROOT / folder).rglob("*.py"))
             for hit in uncommented_function_imports(path)]  # fmt: skip
    assert not found, (
        "imports inside functions with no comment giving the start-up reason; move them to "
        "the top of the module, or say on the line why not (e.g. `# lazy: torch, ~1 s`):\n"
        + "\n".join(found)
    )


def test_the_scan_finds_an_uncommented_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "def f():\n    import json\n\n\n"
        "def g():\n    # lazy: why\n    import os\n    import sys\n\n    import re\n"
    )
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        assert uncommented_function_imports(module) == ["m.py:2 json", "m.py:10 re"]
    finally:
        ROOT = saved
