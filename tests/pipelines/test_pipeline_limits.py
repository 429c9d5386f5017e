"""Limits that must hold at the endpoint: concurrency per process in every mode and role, and
request accounting that matches what the server saw (retries included)."""

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
seed: 5
mode: {mode}
roles:
  agent:
    kind: openai
    model: stub-model
    base_url: {base_url}
    needs_api_key: false
    max_retries: 8
    backoff_base_s: 0.01
    backoff_max_s: 0.02
sampling: {{temperature: 0.0, max_tokens: 16}}
rollout: {{max_turns: 3, max_steps: 4}}
concurrency: {{max_in_flight: {limit}}}
quality:
  judge: {{enabled: {judge}}}
  shortcut: {{no_tool_baseline: true}}
  dedup: {{semantic: {{enabled: false}}}}
failure: {{max_dead_letter_fraction: 1.0, min_kept: 0}}
"""


def build(tmp_path, base_url, mode, limit, n=6, judge="false"):
    cfg = tmp_path / f"{mode}.yaml"
    cfg.write_text(CONFIG.format(n=n, mode=mode, base_url=base_url, limit=limit, judge=judge))
    out = tmp_path / f"run-{mode}"
    code = main(["build", "--config", str(cfg), "--output", str(out), "--no-progress"])
    return code, json.loads((out / "manifest.json").read_text())


@pytest.mark.parametrize(
    "mode, judge",
    [("blueprint", "true"), pytest.param("rollout", "false", marks=pytest.mark.slow)],
)
def test_concurrency_and_request_accounting_at_the_server(tmp_path, mode, judge):
    stub = StubConfig(latency_ms=30, rate_500=0.15, rate_429=0.1, retry_after_s=0.01)
    with start_stub_server(stub) as server:
        code, manifest = build(tmp_path, server.base_url, mode, limit=2, judge=judge)
        stats = server.stats()
    assert code == 0, manifest["accounting"]
    assert 0 < stats["max_in_flight"] <= 2, stats
    llm = manifest["llm"]
    requests = sum(role.get("requests", 0) for role in llm.values())
    assert requests == stats["requests"] == manifest["tokens"]["requests"]
    retries = sum(v for role in llm.values() for k, v in role.items() if k.startswith("retries."))
    faults = stats["by_outcome"].get("500", 0) + stats["by_outcome"].get("429", 0)
    assert retries == faults > 0  # every injected fault was retried and counted
    assert llm["agent"]["calls"] > 0
    assert manifest["tokens"]["llm_calls"] == sum(r.get("calls", 0) for r in llm.values())
    for counts in llm.values():  # every paid call timed, none faster than the stub answers
        paid = counts.get("calls", 0) - counts.get("cached_calls", 0)
        if paid:
            assert counts["latency_ms"]["timed_calls"] == paid
            assert counts["latency_ms"]["mean"] >= stub.latency_ms
    if mode == "blueprint":
        assert llm["judge"]["calls"] > 0
    else:
        assert llm["user"]["calls"] > 0
