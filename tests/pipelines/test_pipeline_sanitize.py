"""End to end: a model that emits chat control tokens cannot get them into exported rows."""

import json

import pyarrow.parquet as pq

from trajforge.generators.llm.responders import INJECTION
from trajforge.pipelines.cli import main
from trajforge.schemas.sanitize import find_control_token

CONFIG = """
domain: retail
num_tasks: 8
seed: 2
mode: blueprint
roles:
  agent: {kind: scripted, responder: adversarial_blueprint}
quality: {dedup: {semantic: {enabled: false}}}
failure: {max_dead_letter_fraction: 0.0}
"""


def test_exported_rows_hold_no_control_tokens(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(CONFIG)
    out = tmp_path / "run"
    assert main(["build", "--config", str(cfg), "--output", str(out), "--no-progress"]) == 0
    rows = [
        r for f in sorted((out / "data").glob("*.parquet")) for r in pq.read_table(f).to_pylist()
    ]
    assert rows, "the build kept nothing"
    assert find_control_token(INJECTION) is not None  # the responder really injects
    neutralised = 0
    for row in rows:
        for column, value in row.items():
            if isinstance(value, str):
                assert find_control_token(value) is None, (column, value[:200])
        for message in json.loads(row["messages_json"]):
            assert message["role"] in ("system", "user", "assistant", "tool")
            neutralised += (message.get("content") or "").count("‹im_start›")
    assert neutralised > 0  # the injected text is kept, visibly defused
    for f in (out / "rejected").glob("*.jsonl"):
        assert find_control_token(f.read_text()) is None
