"""configs/search.yaml builds end to end with the offline backends (scripted writer, oracle)."""

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from trajforge.pipelines.cli import main

SHIPPED = Path(__file__).resolve().parents[2] / "configs" / "search.yaml"


def _config(tmp_path, **overrides):
    raw = yaml.safe_load(SHIPPED.read_text())
    raw.update(num_tasks=4, **overrides)
    raw["roles"] = {"agent": {"kind": "scripted", "responder": "blueprint"}}
    path = tmp_path / "search.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.mark.parametrize(
    "overrides",
    [
        pytest.param({}, marks=pytest.mark.slow),  # the rollout one keeps search in the fast tier
        {"mode": "rollout", "rollout": {"agent": "oracle", "user": "scripted"}},
    ],
    ids=["blueprint-scripted", "rollout-oracle"],
)
def test_shipped_search_config_builds(tmp_path, overrides):
    out = tmp_path / "run"
    args = ["build", "--config", str(_config(tmp_path, **overrides)), "--output", str(out)]
    assert main([*args, "--no-progress"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["accounting"]["holds"]
    assert manifest["outputs"]["kept"] == 4  # gold answer, evidence coverage, signatures pass
    tables = [pq.read_table(f) for f in (out / "data").glob("*.parquet")]
    rows = [r for t in tables for r in t.to_pylist()]
    assert len(rows) == 4 and {r["domain"] for r in rows} == {"search"}
    assert all(r["outcome_passed"] for r in rows)
