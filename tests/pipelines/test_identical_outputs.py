"""The CPU work cut (memoised replays, orjson canonical JSON) leaves every exported row and
rejection byte-identical: the stage functions run once with both and once without either."""

from __future__ import annotations

import asyncio

import pytest

from trajforge.generators import replays
from trajforge.pipelines import stages
from trajforge.pipelines.config import BuildConfig
from trajforge.pipelines.resources import StageResources
from trajforge.schemas import Rejected, base


def config(mode: str) -> BuildConfig:
    return BuildConfig.model_validate(
        {
            "name": "identical",
            "domain": "retail",
            "num_tasks": 12,
            "seed": 5,
            "mode": mode,
            "roles": {"agent": {"kind": "scripted", "responder": "blueprint"}},
            "rollout": {"agent": "oracle", "user": "scripted", "max_turns": 12},
            "cache": {"enabled": False},
        }
    )


def rows(cfg: BuildConfig, tmp_path) -> list[str]:
    """Every task through synthesis .. export: the exported row, or the typed rejection."""
    res = StageResources(cfg, str(tmp_path), needs_llm=True)
    res.setup()
    loop = asyncio.new_event_loop()
    out = []
    try:
        for index in range(cfg.num_tasks):
            try:
                task = stages.verify_task(res, stages.synthesize_task(res, index))
                trajectory = loop.run_until_complete(stages.generate_trajectory(res, task))
                trajectory = stages.shortcut_filters(res, stages.verify_outcome(res, trajectory))
                out.append(stages.to_dataset_record(res, trajectory).to_json())
            except Rejected as err:
                record = getattr(err, "record", None)
                out.append(f"{err.reason}:{err.detail}:{record.to_json() if record else ''}")
    finally:
        loop.close()
    return out


@pytest.mark.parametrize("mode", ["blueprint", pytest.param("rollout", marks=pytest.mark.slow)])
def test_rows_identical_with_and_without_the_fast_paths(mode, tmp_path, monkeypatch):
    cfg = config(mode)
    replays.MEMO.clear()
    fast = rows(cfg, tmp_path)
    assert replays.MEMO.hits > 0  # the fast path really ran
    monkeypatch.setattr(replays.MEMO, "enabled", False)
    monkeypatch.setattr(base, "orjson", None)
    assert rows(cfg, tmp_path) == fast
    # Rows past generation (exported, or refused by a filter with the whole trajectory): the
    # oracle's rollouts are all refused by hallucinated_values (benchmarks/README.md).
    assert sum('"messages' in r for r in fast) >= cfg.num_tasks // 2
