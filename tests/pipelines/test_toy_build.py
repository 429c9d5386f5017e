"""The shipped toy config builds end to end with no model, and one build can mix domains."""

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from trajforge.generators.domains import get_domain
from trajforge.pipelines.cli import main

TOY_CONFIG = Path(__file__).resolve().parents[2] / "configs" / "toy.yaml"


def build(config: dict, tmp_path: Path) -> tuple[dict, list[dict]]:
    path = tmp_path / "build.yaml"
    path.write_text(yaml.safe_dump(config))
    out = tmp_path / "run"
    code = main(["build", "--config", str(path), "--output", str(out), "--no-progress"])
    assert code == 0
    manifest = json.loads((out / "manifest.json").read_text())
    rows = [
        r for f in sorted((out / "data").glob("*.parquet")) for r in pq.read_table(f).to_pylist()
    ]
    return manifest, rows


@pytest.mark.slow  # the mixed-domain build below covers toy in the fast tier
def test_toy_config_builds_end_to_end(tmp_path):
    config = yaml.safe_load(TOY_CONFIG.read_text())
    manifest, rows = build(config, tmp_path)
    acc = manifest["accounting"]
    assert acc["holds"] and acc["inputs"] == config["num_tasks"] and acc["dead_lettered"] == 0
    assert acc["kept"] == len(rows) > 0
    toy_tools = {s.name for s in get_domain("toy").toolbox.specs}
    for row in rows:
        assert row["domain"] == "toy" and row["outcome_passed"]
        assert {t["function"]["name"] for t in json.loads(row["tools_json"])} == toy_tools
        assert set(row["task_types"]) <= {"deposit", "balance_inquiry"}


def test_one_build_mixes_domains_and_tags_every_row(tmp_path):
    config = yaml.safe_load(TOY_CONFIG.read_text())
    del config["domain"]
    config.update(domains={"retail": 1.0, "toy": 1.0}, num_tasks=10)
    manifest, rows = build(config, tmp_path)
    assert manifest["accounting"]["holds"]
    assert {r["domain"] for r in rows} == {"retail", "toy"}
    for row in rows:
        tools = {t["function"]["name"] for t in json.loads(row["tools_json"])}
        assert tools == {s.name for s in get_domain(row["domain"]).toolbox.specs}
        assert json.loads(row["trajectory_json"])["task"]["domain"] == row["domain"]
