"""Builds against a real local OpenAI-compatible stub server that injects faults."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from stub_server import StubConfig, start_stub_server  # noqa: E402

from trajforge.pipelines.cli import main  # noqa: E402

CONFIG = """
domain: retail
num_tasks: {n}
seed: 11
mode: blueprint
roles:
  agent:
    kind: openai
    model: stub-model
    base_url: {base_url}
    timeout_s: 0.5
    max_retries: {retries}
    backoff_base_s: 0.01
    backoff_max_s: 0.05
sampling: {{temperature: 0.0, max_tokens: 32}}
concurrency: {{max_in_flight: 16}}
"""


def run_build(tmp_path, base_url, n, retries):
    cfg = tmp_path / "faults.yaml"
    cfg.write_text(CONFIG.format(n=n, base_url=base_url, retries=retries))
    out = tmp_path / "run"
    code = main(["build", "--config", str(cfg), "--output", str(out), "--no-progress"])
    return code, out


@pytest.mark.slow  # a whole build or long run: the tier CI also runs
def test_transient_faults_lose_no_element(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    stub = StubConfig(
        latency_ms=2, rate_429=0.08, rate_500=0.08, rate_hang=0.04, hang_s=3.0, retry_after_s=0.01
    )
    with start_stub_server(stub) as server:
        code, out = run_build(tmp_path, server.base_url, n=10, retries=10)
        stats = server.stats()
    assert code == 0
    manifest = json.loads((out / "manifest.json").read_text())
    acc = manifest["accounting"]
    assert acc["holds"] and acc["dead_lettered"] == 0
    assert acc["kept"] + acc["rejected"] == 10 and acc["kept"] > 0
    faults = {k: v for k, v in stats["by_outcome"].items() if k != "ok"}
    assert sum(faults.values()) >= 0.1 * stats["requests"], stats  # faults really happened


@pytest.mark.slow  # a whole build against a failing stub
def test_persistent_failure_lands_in_dead_letter(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with start_stub_server(StubConfig(latency_ms=1, rate_500=1.0)) as server:
        code, out = run_build(tmp_path, server.base_url, n=4, retries=1)
    assert code == 1  # a build with nothing kept is a failed build
    assert not (out / "_SUCCESS").exists()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["accounting"]["holds"] and manifest["status"] == "failed"
    assert manifest["llm"]["agent"]["retries.server_error"] > 0  # retries are visible
    dead = [
        json.loads(line)
        for f in (out / "dead_letter").glob("*.jsonl")
        for line in f.read_text().splitlines()
    ]
    assert len(dead) == manifest["accounting"]["dead_lettered"] > 0
    assert all(d["stage"] == "blueprint" for d in dead)
    assert all("LLMError" in d["error"] and "500" in d["error"] for d in dead)
    assert all(d["traceback"] and json.loads(d["element_json"])["id"] for d in dead)
