"""Every import of our packages goes through the `trajforge.*` namespace.

The repository root is on the test path (for `tests.factories`), so a stray bare
`import verifiers` would still work here and then break, or import a different distribution,
for users who installed the wheel. This test reads the sources, so it fails on such a line.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOP_LEVEL = ("schemas", "generators", "verifiers", "pipelines", "finetune")
BARE_IMPORT = re.compile(rf"^\s*(from|import)\s+({'|'.join(TOP_LEVEL)})(\.|\s|$)", re.MULTILINE)


def _python_sources() -> list[Path]:
    folders = [*TOP_LEVEL, "tests", "benchmarks"]
    return [
        p for folder in folders for p in (ROOT / folder).rglob("*.py") if ".venvs" not in p.parts
    ]


def test_no_bare_top_level_imports():
    offenders = [
        f"{path.relative_to(ROOT)}: {m.group(0).strip()}"
        for path in _python_sources()
        for m in BARE_IMPORT.finditer(path.read_text(encoding="utf-8"))
    ]
    assert not offenders, "import these through trajforge.*:\n" + "\n".join(offenders)


def test_the_guard_catches_a_bare_import():
    assert BARE_IMPORT.search("from verifiers.outcome import verify_outcome\n")
    assert BARE_IMPORT.search("    import schemas\n")
    assert not BARE_IMPORT.search("from trajforge.verifiers.outcome import verify_outcome\n")


def test_packages_import_under_the_namespace():
    import trajforge.generators.llm
    import trajforge.pipelines.cli
    import trajforge.schemas
    import trajforge.verifiers.outcome

    assert Path(trajforge.verifiers.outcome.__file__).parent == ROOT / "verifiers"
    assert trajforge.generators.llm.__name__ == "trajforge.generators.llm"
