"""The per-split figures (gap table, pass rate by split, the card's token counts) and the run
report's plot counts are gathered in the pipeline: the launcher and the report read no shard
for them, and they equal what reading the shards gives."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from trajforge.pipelines import build, io
from trajforge.pipelines.config import BuildConfig
from trajforge.pipelines.finished import browse, card, report
from trajforge.pipelines.manifest import Manifest, ManifestError, read_manifest
from trajforge.pipelines.report_figures import ReportFigures, row_plots
from trajforge.pipelines.run_dir import prepare_run_dir
from trajforge.pipelines.split_figures import gap_table, split_difficulty, token_summary
from trajforge.schemas import AxisScore, DatasetRecord, Judgement

CONFIG = {
    "name": "figures",
    "domain": "retail",
    "num_tasks": 8,
    "seed": 3,
    "mode": "rollout",
    "roles": {"agent": {"kind": "scripted", "responder": "blueprint"}},
    "rollout": {"agent": "oracle", "user": "scripted", "attempts": 2},
    "quality": {
        "shortcut": {"no_tool_baseline": False},
        "filters": [{"name": "agent_tool_calls"}, {"name": "loops"}, {"name": "policy"}],
        "dedup": {"semantic": {"enabled": False}},
    },
    "output": {"splits": {"train": 0.5, "validation": 0.0, "golden": 0.5}},
}


def _rows(run_dir: str, output_dir: str, columns: list[str]) -> list[dict]:
    return [
        r
        for split in io.SPLITS
        for path in io.matching(io.join(run_dir, output_dir, f"{split}-*.parquet"))
        for r in io.iter_parquet(path, columns)
    ]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    run = str(tmp_path_factory.mktemp("figures") / "run")
    cfg = BuildConfig.model_validate(CONFIG)
    prepare_run_dir(run, cfg.config_hash(), resume=False, overwrite=False)
    with pytest.MonkeyPatch.context() as mp:
        # the launcher must not read the messages view back for the card's token counts
        mp.setattr(card, "token_stats", lambda *a: pytest.fail("token counts re-read"))
        result = build.run_build(cfg, run, ["--direct_num_workers=1"])
    return run, result.manifest


def test_the_gap_table_and_pass_rates_equal_the_shards(built):
    run, manifest = built
    rows = _rows(run, io.DATA_DIR, ["split", "num_turns", "num_tool_calls", "judge_scores_json"])
    assert rows
    for r in rows:
        r["judge_scores"] = json.loads(r.pop("judge_scores_json"))
    assert manifest.splits["gap"] == gap_table(rows)
    rates = _rows(run, io.DATA_DIR, ["split", "task_id", "pass_rate"])
    assert manifest.difficulty is not None
    assert manifest.difficulty["by_split"] == split_difficulty(rates)
    assert "figures" not in manifest.splits


def test_the_card_token_counts_equal_the_messages_view(built):
    run, manifest = built
    tokens = [r["num_tokens"] for r in _rows(run, "views/messages", ["num_tokens"])]
    summary = token_summary(tokens)
    assert summary is not None and summary["rows"] == len(tokens)
    card_text = io.read_text(io.join(run, "README.md"))
    assert card_text == card.dataset_card(run, manifest, summary)
    assert card_text == card.dataset_card(run, manifest)  # read from the shards: the same


#: manifest.json's top-level keys, which the card, the report, `show` and data_value read.
MANIFEST_KEYS = {
    "name", "config", "config_hash", "versions", "models", "runner", "inputs", "outputs",
    "accounting", "stage_counts", "filters", "tokens", "llm", "dedup_scale", "local_processes",
    "splits", "diversity", "difficulty", "wall_time_s", "finished_at", "status", "failure",
}  # fmt: skip


def test_the_manifest_on_disk_is_the_typed_record_with_the_same_keys(built):
    run, manifest = built
    on_disk = json.loads(io.read_text(io.join(run, "manifest.json")))
    assert on_disk == manifest.to_dict() and set(on_disk) == MANIFEST_KEYS
    assert Manifest.model_validate(on_disk).to_dict() == on_disk
    assert on_disk["accounting"]["holds"] and on_disk["status"] == "succeeded"


def _plot_counts_from_the_shards(run_dir: str) -> ReportFigures:
    """What the report counted by reading every kept row back (its code before issue 31)."""
    turns, calls, tools, tasks, traits = Counter(), Counter(), Counter(), Counter(), Counter()
    scores: dict[str, Counter] = {}
    for _, t in browse.kept(run_dir):
        turns[sum(1 for m in t.messages if m.role == "user")] += 1
        calls[len(t.steps)] += 1
        tools.update(s.call.name for s in t.steps)
        tasks.update(t.task.intent.task_types)
        for name, value in t.task.persona.traits.model_dump().items():
            traits[f"{name}={value}"] += 1
        for j in t.judgements:
            for a in j.axes:
                scores.setdefault(a.axis, Counter())[a.score] += 1
    return ReportFigures(
        turns=dict(turns),
        tool_calls=dict(calls),
        tools=dict(tools),
        task_types=dict(tasks),
        traits=dict(traits),
        scores={axis: dict(c) for axis, c in scores.items()},
    )


def test_the_report_plots_equal_the_shards_and_read_only_the_samples(built, monkeypatch):
    run, _ = built
    figures = report.report_figures(run)
    assert figures == _plot_counts_from_the_shards(run) and figures.tools and figures.traits
    written = io.read_text(io.join(run, report.REPORT_FILE))
    rows_read = []
    real = io.iter_parquet
    monkeypatch.setattr(io, "iter_parquet", lambda *a: (rows_read.append(1) or r for r in real(*a)))
    monkeypatch.setattr(report, "SAMPLES", 2)
    report.render_report(run)  # the manifest read back and typed
    assert len(rows_read) == 2  # the two samples shown, not every kept row
    monkeypatch.setattr(report, "SAMPLES", 20)
    assert report.render_report(run) == written


def test_a_manifest_from_another_version_is_one_clear_error(built, tmp_path):
    run, manifest = built
    older = {k: v for k, v in manifest.to_dict().items() if k != "local_processes"}
    (tmp_path / "manifest.json").write_text(json.dumps(older))
    assert read_manifest(run) == manifest
    with pytest.raises(ManifestError, match="field `local_processes`: Field required.*rebuild"):
        read_manifest(str(tmp_path))


def test_judge_scores_reach_the_report_figures_per_axis(built):
    """Every judgement's axes (the build above ran no judge): counted by axis, whichever judge."""
    run, _ = built
    _, trajectory = next(browse.kept(run))
    judged = trajectory.model_copy(
        update={
            "judgements": (
                Judgement(judge="a", status="graded", axes=(AxisScore(axis="tone", score=0.5),)),
                Judgement(
                    judge="b/c",
                    status="graded",
                    axes=(AxisScore(axis="tone", score=1.0), AxisScore(axis="grounded", score=0.5)),
                ),
            )
        }
    )
    record = DatasetRecord.model_construct(
        trajectory_json=judged.to_json(), task_types=judged.task.intent.task_types
    )
    plots = row_plots(record)
    assert plots.axis_scores == (("tone", 0.5), ("tone", 1.0), ("grounded", 0.5))
    assert plots.tools == tuple(s.call.name for s in judged.steps)
    figures = ReportFigures.of([(1, 2, plots), (1, 3, plots)])
    assert figures.scores == {"tone": {0.5: 2, 1.0: 2}, "grounded": {0.5: 2}}
    assert figures.turns == {1: 2} and figures.tool_calls == {2: 1, 3: 1}
    again = ReportFigures.model_validate(json.loads(json.dumps(figures.model_dump(mode="json"))))
    assert again == figures  # through splits.json and back
