"""The README and the docs site say only what runs.

Every code block (python, bash, yaml, ...) in README.md and docs/ carries a marker on the line
before it, `<!-- code: KIND detail -->`, and this module holds each kind to its word:

- `run`: executed here (python in a scratch directory where `runs/quickstart` is a fresh
  scripted build; bash lines are `trajforge` commands run through the CLI);
- `tested PATH`: executed by the test file PATH, which must name the page it reads;
- `config` / `config opd`: a build config (or part of one) / OPD YAML, validated by the models;
- `output`: what a command printed (not code);
- `needs REASON`: needs a GPU, the network, a model or a cloud project, so not run here;
- `excerpt PATH`: shown from PATH, whose functions and classes it names must be there.

The reference pages generated from the code must be up to date too.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
CODE_LANGUAGES = {"python", "bash", "sh", "shell", "console", "yaml", "yml"}
KINDS = {"run", "tested", "config", "output", "needs", "excerpt"}
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
MARKER = re.compile(r"<!-- code: (\w+)\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    language: str
    code: str
    kind: str | None
    detail: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = MARKER.match(before.strip())
        found.append(
            Block(
                page=page,
                line=text[: match.start()].count("\n") + 1,
                language=match.group(1).lower(),
                code=match.group(2),
                kind=marker.group(1) if marker else None,
                detail=marker.group(2) if marker else "",
            )
        )
    return found


ALL = [b for page in PAGES for b in blocks(page)]


def of_kind(kind: str) -> list[Block]:
    return [b for b in ALL if b.kind == kind]


def test_the_docs_have_code_blocks():
    assert len(ALL) > 20 and of_kind("run") and of_kind("config") and of_kind("tested")


def test_every_code_block_is_run_or_marked():
    unmarked = [b.where for b in ALL if b.language in CODE_LANGUAGES and b.kind is None]
    assert not unmarked, f"code blocks without a `<!-- code: KIND -->` marker: {unmarked}"
    unknown = [(b.where, b.kind) for b in ALL if b.kind is not None and b.kind not in KINDS]
    assert not unknown, unknown
    vague = [b.where for b in of_kind("needs") if not b.detail]
    assert not vague, f"`needs` must say what (gpu, network, model, cloud): {vague}"


@pytest.mark.parametrize("block", of_kind("tested"), ids=lambda b: b.where)
def test_tested_blocks_name_a_test_that_reads_their_page(block):
    path = ROOT / block.detail.split()[0]
    assert path.is_file(), f"{block.where}: {path} does not exist"
    page = str(block.page.relative_to(ROOT))
    assert page in path.read_text(), f"{path} does not read {page}"


@pytest.mark.parametrize("block", of_kind("excerpt"), ids=lambda b: b.where)
def test_excerpts_match_their_source(block):
    source = (ROOT / block.detail.split()[0]).read_text()
    for name in re.findall(r"^\s*(?:def|class) (\w+)", block.code, re.M):
        assert re.search(rf"(def|class) {name}\b", source), f"{block.where}: no {name}"


BASE_CONFIG = {
    "name": "docs",
    "domain": "toy",
    "num_tasks": 1,
    "roles": {"agent": {"kind": "scripted", "responder": "blueprint"}},
}


@pytest.mark.parametrize("block", of_kind("config"), ids=lambda b: b.where)
def test_config_blocks_validate(block, tmp_path):
    data = yaml.safe_load(block.code)
    assert isinstance(data, dict), block.where
    if block.detail.startswith("opd"):
        from trajforge.finetune.opd.config import OPDConfig

        model = str(tmp_path)  # a directory is all validation asks of the models
        OPDConfig.model_validate({"student": model, "teacher": model, "output": "o", **data})
        return
    from trajforge.pipelines.config import BuildConfig

    merged = {**BASE_CONFIG, **data}
    if "domains" in data:
        merged.pop("domain")
    BuildConfig.model_validate(merged)


QUICKSTART_LIKE = """
name: docs-quickstart
domain: retail
num_tasks: 8
seed: 7
mode: blueprint
roles: {agent: {kind: scripted, responder: blueprint}}
quality: {dedup: {semantic: {enabled: false}}}
output: {num_shards: 1, splits: {train: 0.5, validation: 0.0, golden: 0.5}}
"""


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    """A directory holding `runs/quickstart` (a scripted build shaped like the quickstart's)
    and the repository's `configs/`, where the docs' commands run as written."""
    from trajforge.pipelines.cli import main

    base = tmp_path_factory.mktemp("docs")
    (base / "configs").symlink_to(ROOT / "configs")
    (base / "b.yaml").write_text(QUICKSTART_LIKE)
    argv = ["build", "--config", str(base / "b.yaml"), "--output", str(base / "runs/quickstart")]
    assert main([*argv, "--no-progress"]) == 0
    return base


def _commands(code: str) -> list[list[str]]:
    lines = code.replace("\\\n", " ").splitlines()
    return [shlex.split(line, comments=True) for line in lines if line.split("#")[0].strip()]


@pytest.mark.parametrize("block", of_kind("run"), ids=lambda b: b.where)
def test_run_blocks_run(block, scratch, monkeypatch, capsys):
    monkeypatch.chdir(scratch)
    if block.language == "python":
        exec(compile(block.code, block.where, "exec"), {"__name__": "__docs__"})
        return
    from trajforge.pipelines.cli import main

    for argv in _commands(block.code):
        assert argv[0] == "trajforge", f"{block.where}: only trajforge commands run here"
        try:
            code = main(argv[1:])
        except SystemExit as exited:  # --help / --version
            code = exited.code
        assert code == 0, f"{block.where}: {' '.join(argv)} exited {code}"


def test_reference_pages_are_up_to_date():
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "docs/gen_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--check"]) == 0, "run `python docs/gen_reference.py` and commit"
