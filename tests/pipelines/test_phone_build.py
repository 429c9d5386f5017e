"""The shipped dual-control config builds offline with no model, its rows mark the user's own
tool traffic, and `trajforge eval`'s gate gives the oracle pass^1 = 1.0 on phone tasks."""

import json
from pathlib import Path

import yaml

from tests.pipelines.test_toy_build import build
from trajforge.generators.domains import get_domain
from trajforge.pipelines.cli import main
from trajforge.schemas import Trajectory

PHONE_CONFIG = Path(__file__).resolve().parents[2] / "configs" / "phone.yaml"


def test_phone_config_builds_with_every_row_kept(tmp_path):
    config = yaml.safe_load(PHONE_CONFIG.read_text())
    manifest, rows = build(config, tmp_path)
    acc = manifest["accounting"]
    assert acc["holds"] and acc["inputs"] == config["num_tasks"] == acc["kept"] == len(rows)
    user_tools = {s.name for s in get_domain("phone").user_tools.toolbox.specs}
    for row in rows:
        assert row["domain"] == "phone" and row["outcome_passed"]
        # the agent's tool list never offers the user's tools
        assert not {t["function"]["name"] for t in json.loads(row["tools_json"])} & user_tools
        trajectory = Trajectory.from_json(row["trajectory_json"])
        assert trajectory.user_steps
        marked = [m for m in json.loads(row["messages_json"]) if m.get("actor") == "user"]
        assert len(marked) == 2 * len(trajectory.user_steps)  # each call and its result


def test_eval_gives_the_oracle_pass_one_on_phone_tasks(tmp_path):
    out = tmp_path / "eval.json"
    argv = ["eval", "--model", "oracle", "--domain", "phone", "--num-tasks", "4",
            "--json", str(out)]  # fmt: skip
    assert main(argv) == 0
    (oracle,) = json.loads(out.read_text())
    assert oracle["overall"]["tasks"] == 4
    assert oracle["overall"]["pass_hat"]["1"] == 1.0
