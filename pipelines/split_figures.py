"""Per-split figures of the kept rows, gathered while the pipeline assigns splits: the gap
table (train vs golden means per criterion), the tasks' mean pass rate per split and the
messages view's token counts.

Why here: these used to be recomputed by the launcher after Beam finished, reading every
written shard three more times (the gap table, difficulty by split, the card's token counts).
Every figure is a small function of one record, and the split step already gathers one small
item per record (`splits.SplitKeys`) on one worker with the split plan; the figures ride in
that item and are summed where the split report is written (`splits.json`, key `figures`,
which the launcher moves into the manifest).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from trajforge.pipelines.report_figures import REPORT_KEY, ReportFigures, RowPlots, row_plots
from trajforge.schemas import DatasetRecord, Record

#: `max_length` values trainers commonly use: the card warns about rows longer than these.
COMMON_MAX_LENGTHS = (1024, 2048)
FIGURES_KEY = "figures"


class RowFigures(Record):
    """What the per-split figures need of one kept record."""

    turns: int
    tool_calls: int
    judge_scores: dict[str, float]
    task_id: str
    pass_rate: float | None = None
    num_tokens: tuple[int, ...] = ()  # its rows of the messages view (none: view not written)
    plots: RowPlots = RowPlots()  # what the run report's plots need (report_figures.py)


def row_figures(record: DatasetRecord, num_tokens: Iterable[int] = ()) -> RowFigures:
    return RowFigures(
        turns=record.num_turns,
        tool_calls=record.num_tool_calls,
        judge_scores=json.loads(record.judge_scores_json),
        task_id=record.task_id,
        pass_rate=record.pass_rate,
        num_tokens=tuple(num_tokens),
        plots=row_plots(record),
    )


def token_summary(tokens: list[int]) -> dict[str, Any] | None:
    """Rows, max and mean tokens, and rows over each common `max_length` (None: no rows)."""
    if not tokens:
        return None
    over = {str(m): sum(t > m for t in tokens) for m in COMMON_MAX_LENGTHS}
    return {
        "rows": len(tokens),
        "max": max(tokens),
        "mean": sum(tokens) / len(tokens),
        "over": over,
    }


def split_figures(rows: Iterable[tuple[str, RowFigures]]) -> dict[str, Any]:
    """(split, figures) of every kept record -> the gap table, pass rates per split, the
    messages view's token summary (the same figures the launcher read from the shards) and
    the run report's plot counts (`report_figures.ReportFigures`)."""
    rows = list(rows)
    gap = gap_table(
        {
            "split": s,
            "num_turns": f.turns,
            "num_tool_calls": f.tool_calls,
            "judge_scores": f.judge_scores,
        }
        for s, f in rows
    )
    rates = ({"split": s, "task_id": f.task_id, "pass_rate": f.pass_rate} for s, f in rows)
    tokens = [t for _, f in rows for t in f.num_tokens]
    return {
        "gap": gap,
        "difficulty_by_split": split_difficulty(rates),
        "tokens": token_summary(tokens),
        REPORT_KEY: ReportFigures.of((f.turns, f.tool_calls, f.plots) for _, f in rows).model_dump(
            mode="json"
        ),
    }


def gap_table(rows: Iterable[dict]) -> list[dict]:
    """Per criterion (judge axes, turns, tool calls): train mean, golden mean, golden - train.

    `rows` carry `split`, `num_turns`, `num_tool_calls` and `judge_scores` (axis -> score)."""
    # (sum, count) per criterion and split: running totals, so `rows` can be a stream.
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0]))
    for row in rows:
        criteria = {"turns": row["num_turns"], "tool_calls": row["num_tool_calls"]}
        criteria.update(row["judge_scores"])
        for name, value in criteria.items():
            total = values[name][row["split"]]
            total[0] += float(value)
            total[1] += 1
    table = []
    for name in sorted(values):
        by_split = values[name]
        train, golden = by_split.get("train", [0.0, 0]), by_split.get("golden", [0.0, 0])
        t = train[0] / train[1] if train[1] else None
        g = golden[0] / golden[1] if golden[1] else None
        gap = None if t is None or g is None else round(g - t, 4)
        table.append(
            {
                "criterion": name,
                "train_mean": None if t is None else round(t, 4),
                "golden_mean": None if g is None else round(g, 4),
                "gap": gap,
                "train_n": int(train[1]),
                "golden_n": int(golden[1]),
            }
        )
    return table


def split_difficulty(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per split: tasks with rows there and their mean pass rate (the golden split's is the
    baseline a tuned model is compared against). `rows` carry split, task_id, pass_rate."""
    by_split: dict[str, dict[str, float]] = {}
    for row in rows:
        if row["pass_rate"] is not None:
            by_split.setdefault(row["split"], {})[row["task_id"]] = row["pass_rate"]
    return {
        split: {"tasks": len(rates), "mean_pass_rate": round(sum(rates.values()) / len(rates), 4)}
        for split, rates in sorted(by_split.items())
    }
