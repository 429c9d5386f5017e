"""Every shipped config loads; the quickstart builds for real on the embedded model."""

import json
from pathlib import Path

import pytest
import yaml

from trajforge.pipelines.cli import main
from trajforge.pipelines.config import load_config

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs").glob("**/*.yaml"))


def test_configs_exist():
    assert any(p.name == "quickstart.yaml" for p in CONFIGS)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_shipped_config_is_valid(path):
    cfg = load_config(path)
    assert cfg.num_tasks >= 1


@pytest.mark.slow  # real embedded model: the opt-in tier CI also runs
def test_quickstart_builds_on_the_embedded_model(tmp_path):
    """The README's main job, shrunk to two tasks: local runner, local files, SmolLM2 on CPU."""
    raw = yaml.safe_load(
        (Path(__file__).resolve().parents[2] / "configs/quickstart.yaml").read_text()
    )
    raw["num_tasks"] = 2
    cfg = tmp_path / "quick.yaml"
    cfg.write_text(yaml.safe_dump(raw))
    out = tmp_path / "run"
    assert main(["build", "--config", str(cfg), "--output", str(out), "--no-progress"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["accounting"]["holds"]
    assert manifest["models"]["agent"]["kind"] == "local"
    assert manifest["tokens"]["llm_calls"] > 0  # the embedded model really ran
    assert manifest["outputs"]["kept"] == 2  # blueprint + entity check: both trajectories verify
