"""Every shipped config loads; the quickstart builds for real on the embedded model, and its
output reads as a trainer needs (issue 10's readability measure, on the real model's text)."""

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from trajforge.pipelines.cli import main
from trajforge.pipelines.config import load_config
from trajforge.schemas import Trajectory
from trajforge.verifiers.readability import measure, speaker_is_persona

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "configs").glob("**/*.yaml"))


def test_configs_exist():
    assert any(p.name == "quickstart.yaml" for p in CONFIGS)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_shipped_config_is_valid(path):
    cfg = load_config(path)
    assert cfg.num_tasks >= 1


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory) -> Path:
    """The README's main job exactly as shipped (configs/quickstart.yaml: local runner, local
    files, SmolLM2 on CPU), built once for every slow test of this module."""
    out = tmp_path_factory.mktemp("quickstart") / "run"
    config = str(ROOT / "configs/quickstart.yaml")
    assert main(["build", "--config", config, "--output", str(out), "--no-progress"]) == 0
    return out


def _rows(run: Path) -> list[dict]:
    return [
        r for f in sorted((run / "data").glob("*.parquet")) for r in pq.read_table(f).to_pylist()
    ]


# Real embedded model (the opt-in tier CI also runs); the whole quickstart takes minutes on a
# shared CPU, and the first test pays for the module's build.
@pytest.mark.slow
@pytest.mark.timeout(3000)
def test_quickstart_builds_on_the_embedded_model(quickstart):
    manifest = json.loads((quickstart / "manifest.json").read_text())
    assert manifest["accounting"]["holds"]
    assert manifest["models"]["agent"]["kind"] == "local"
    assert manifest["tokens"]["llm_calls"] > 0  # the embedded model really ran
    # blueprint + entity check: every verified task yields a kept trajectory
    assert manifest["outputs"]["kept"] == len(_rows(quickstart)) > 0


@pytest.mark.slow
@pytest.mark.timeout(3000)
def test_quickstart_reads_like_people(quickstart):
    """The same measure as test_quickstart_readability, on the model-written text: no
    templated sentence in more than a quarter of rows, no control tokens, no JSON shown to the
    customer, and the user who speaks is the persona."""
    rows = _rows(quickstart)
    report = measure(json.loads(r["messages_json"]) for r in rows)
    assert report.rows == len(rows) > 0
    assert report.rows_with_control_tokens == 0
    assert report.rows_with_json_in_text == 0
    assert report.top_sentence_rows <= 0.25, report.top_sentence
    for row in rows:
        t = Trajectory.from_json(row["trajectory_json"])
        said = [m.content for m in t.messages if m.role == "user" and m.content]
        assert speaker_is_persona(t.task.persona.name, t.task.scenario.known_info, said), said


def _shown_quickstart_counts() -> dict[str, str]:
    """The summary lines README.md shows for `make quickstart` (its `output quickstart` block)."""
    text = (ROOT / "README.md").read_text()
    block = text.split("<!-- code: output quickstart", 1)[1].split("```text\n", 1)[1]
    block = block.split("```", 1)[0]
    shown = {}
    for line in block.splitlines():
        key, _, value = line.rpartition("  ")
        if key.strip() and value.strip() and not line.startswith(("Dataset", "Report", "-")):
            shown[key.strip()] = value.strip()
    return shown


@pytest.mark.slow
@pytest.mark.timeout(3000)
def test_the_readme_shows_a_real_quickstart_run(quickstart):
    """The quickstart output README.md shows is what a build of the shipped config prints."""
    from trajforge.pipelines.cli import summary_table
    from trajforge.pipelines.manifest import read_manifest

    printed = {}
    for line in summary_table(read_manifest(str(quickstart))).splitlines():
        key, _, value = line.rpartition("  ")
        printed[key.strip()] = value.strip()
    shown = _shown_quickstart_counts()
    assert {"inputs", "kept: train", "rejected", "LLM calls (cached)"} <= set(shown)
    for key, value in shown.items():
        if key in printed and key != "wall time (s)":
            assert printed[key] == value, (key, printed[key], value)
