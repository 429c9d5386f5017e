"""The gate ablation's two shipped configs (configs/noisy_toy.yaml, noisy_toy_nogate.yaml) build
the same tasks through the normal build: with the default gate every trajectory that carries an
injected fault is refused and every clean one kept; with the gate off only the outcome check
refuses, so faulty trajectories whose outcome passes are kept and say so in their provenance."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from trajforge.pipelines.cli import main
from trajforge.pipelines.config import BuildConfig, load_config

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
OUTCOME_REASONS = {"state_mismatch", "outputs_not_communicated", "bad_termination"}


def build(name: str, tmp_path: Path, num_tasks: int = 24) -> tuple[dict, list[dict], list[dict]]:
    config = yaml.safe_load((CONFIGS / name).read_text())
    config["num_tasks"] = num_tasks
    path = tmp_path / name
    path.write_text(yaml.safe_dump(config))
    out = tmp_path / name.removesuffix(".yaml")
    argv = ["build", "--config", str(path), "--output", str(out), "--no-progress"]
    assert main(argv) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    rows = [
        json.loads(r["trajectory_json"])
        for f in sorted((out / "data").glob("*.parquet"))
        for r in pq.read_table(f).to_pylist()
    ]
    rejected = [
        json.loads(line)
        for f in sorted((out / "rejected").glob("*.jsonl"))
        for line in f.read_text().splitlines()
    ]
    return manifest, rows, rejected


def faults(trajectory: dict) -> list[str]:
    return [f["fault"] for f in trajectory["provenance"]["injected_faults"]]


def test_the_two_configs_differ_only_in_name_and_filters():
    on = load_config(CONFIGS / "noisy_toy.yaml").model_dump()
    off = load_config(CONFIGS / "noisy_toy_nogate.yaml").model_dump()
    assert on["rollout"]["agent"] == "noisy" and on["rollout"]["user"] == "scripted"
    assert on["num_tasks"] == 200 and on["output"]["splits"]["golden"] == 0.25
    assert off["quality"]["filters"] == () and len(on["quality"]["filters"]) >= 9
    for cfg in (on, off):
        del cfg["name"], cfg["quality"]["filters"]
    assert on == off


def test_noisy_toy_refuses_every_faulty_trajectory(tmp_path):
    manifest, rows, rejected = build("noisy_toy.yaml", tmp_path)
    acc = manifest["accounting"]
    assert acc["holds"] and acc["inputs"] == 24 and acc["dead_lettered"] == 0
    assert rows and all(faults(t) == [] for t in rows)  # every kept row is clean
    refused = [json.loads(r["payload_json"]) for r in rejected]
    assert refused and all(faults(t) for t in refused)  # every refusal is an injected fault
    assert {r["reason"] for r in rejected} - OUTCOME_REASONS  # filters and rules refused some


def test_noisy_toy_nogate_keeps_faulty_trajectories_whose_outcome_passes(tmp_path):
    manifest, rows, rejected = build("noisy_toy_nogate.yaml", tmp_path)
    assert manifest["accounting"]["holds"] and manifest["filters"] == []
    assert {r["reason"] for r in rejected} <= OUTCOME_REASONS  # only the outcome check ran
    kept_faults = {f for t in rows for f in faults(t)}
    assert {"repeated_calls", "invented_value"} <= kept_faults
    assert all(t["outcome"]["passed"] for t in rows)


@pytest.mark.parametrize(
    ("rollout", "field"),
    [
        ({"agent": "oracle", "noise": {"no_report": 0.5}}, "set `agent: noisy` or drop `noise`"),
        ({"agent": "noisy", "noise": {"no_report": 1.5}}, "no_report"),
        ({"agent": "noisy", "user_declines_first": 0.5}, "set `user: scripted` or drop it"),
    ],
)
def test_bad_noise_settings_name_the_field_and_the_fix(rollout, field):
    raw = yaml.safe_load((CONFIGS / "noisy_toy.yaml").read_text())
    raw["rollout"] = rollout
    with pytest.raises(ValueError, match=field.replace("`", ".")):
        BuildConfig.model_validate(raw)
