"""The quickstart-style output read as a trainer would (issue 10): a small blueprint build on the
scripted writer, measured row by row."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from trajforge.pipelines.cli import main
from trajforge.schemas import Trajectory
from trajforge.verifiers.readability import measure, speaker_is_persona

CONFIG = """
name: readability
domain: retail
num_tasks: 12
seed: 7
mode: blueprint
blueprint: {verbalise: none}
roles:
  agent: {kind: scripted, responder: blueprint}
output:
  num_shards: 1
  splits: {train: 1.0, validation: 0.0, golden: 0.0}
"""


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("readability")
    (tmp / "c.yaml").write_text(CONFIG)
    out = tmp / "run"
    assert (
        main(["build", "--config", str(tmp / "c.yaml"), "--output", str(out), "--no-progress"]) == 0
    )
    table = pq.read_table(next((out / "data").glob("train-*.parquet")))
    return table.to_pylist()


def test_no_control_tokens_and_no_json_in_customer_facing_text(rows):
    report = measure(json.loads(r["messages_json"]) for r in rows)
    assert report.rows == len(rows) > 0
    assert report.rows_with_control_tokens == 0
    assert report.rows_with_json_in_text == 0


def test_no_sentence_in_more_than_a_quarter_of_rows(rows):
    report = measure(json.loads(r["messages_json"]) for r in rows)
    assert report.top_sentence_rows <= 0.25, report.top_sentence


def test_the_speaking_user_is_the_persona(rows):
    for row in rows:
        t = Trajectory.from_json(row["trajectory_json"])
        said = [m.content for m in t.messages if m.role == "user" and m.content]
        assert speaker_is_persona(t.task.persona.name, t.task.scenario.known_info, said)
