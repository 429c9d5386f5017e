"""The build command's start-up does not import what the default build does not use: each
import here cost a build 0.1-0.7 s of CPU (issue 14, fixed cost of every build)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from trajforge.generators.domains import DOMAIN_PATHS, DOMAINS, get_domain
from trajforge.pipelines.cli import main

#: Imported by a build only where it is used: the openai SDK (httpx transport), matplotlib,
#: the search domain's graph library, finetune's configs (and their pydantic models); never
#: `datasets` (shards are written by pyarrow). pandas is imported by Beam (its optional
#: extras) and by pyarrow's first conversion of Python rows, outside our reach.
LAZY = ["openai", "matplotlib", "networkx", "trajforge.finetune.config", "datasets"]

#: A whole build (blueprint, scripted backends, 2 tasks: shards with rows) in a fresh process;
#: semantic dedup off (its embedder, sentence-transformers, imports datasets itself).
BUILD = """
import sys
from trajforge.pipelines.cli import main
open(sys.argv[1] + "/b.yaml", "w").write(
    "name: t\\ndomain: retail\\nnum_tasks: 2\\nmode: blueprint\\n"
    "roles: {agent: {kind: scripted, responder: blueprint}}\\n"
    "quality: {dedup: {semantic: {enabled: false}}}\\n"
)
code = main(["build", "--config", sys.argv[1] + "/b.yaml", "--output", sys.argv[1] + "/run",
             "--no-progress"])
print(code, [m for m in ("datasets", "huggingface_hub.repocard", "jinja2") if m in sys.modules])
"""


def _imported_by(statement: str, modules: list[str]) -> dict[str, bool]:
    code = f"import sys; {statement}; print([m in sys.modules for m in {modules!r}])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return dict(zip(modules, eval(out.stdout), strict=True))  # noqa: S307 - our own print


@pytest.mark.parametrize("module", LAZY)
def test_cli_import_leaves_out(module: str):
    assert not _imported_by("import trajforge.pipelines.cli", [module])[module], (
        f"importing the CLI imported {module}"
    )


def test_a_whole_build_imports_neither_datasets_nor_the_hub_card_module(tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", BUILD, str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert out.stdout.splitlines()[-1] == "0 []", out.stdout + out.stderr


def test_a_retail_domain_does_not_import_the_search_domain():
    statement = "from trajforge.generators.domains import get_domain; get_domain('retail')"
    found = _imported_by(statement, ["networkx", "trajforge.generators.domains.search"])
    assert found == {"networkx": False, "trajforge.generators.domains.search": False}


def test_the_domain_table_is_complete_and_lazy():
    assert list(DOMAINS) == list(DOMAIN_PATHS) == ["phone", "retail", "search", "toy"]
    assert "search" in DOMAINS and "nope" not in DOMAINS and DOMAINS.get("nope") is None
    for name in DOMAIN_PATHS:
        assert type(get_domain(name)) is DOMAINS[name]
        assert DOMAINS[name].__name__.lower().startswith(name)
    with pytest.raises(KeyError, match="known domains: phone, retail, search, toy"):
        get_domain("nope")


def test_a_finetune_config_error_is_still_a_usage_error(capsys):
    assert main(["eval", "--model", "oracle", "--k", "0", "--num-tasks", "1"]) == 2
    assert "error:" in capsys.readouterr().err
