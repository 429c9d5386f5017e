"""The run report's plots of the kept rows, gathered while the pipeline assigns splits.

Why here: the report (pipelines/finished/report.py) used to read the kept rows back after
Beam finished, parsing up to 5,000 whole trajectories to count user turns, tool calls, the
tools called, task types, persona traits and judge scores. Each is a small function of one
record, and the split step already gathers one small item per kept record (`RowFigures`, in
`splits.SplitKeys`): the counts ride in it and are summed where `splits.json` is written (key
`figures.report`), which the report reads. Every kept row is counted (the read-back stopped
at 5,000 rows; the plots of smaller builds are the same).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ConfigDict

from trajforge.schemas import DatasetRecord, Record

#: The key of the report's figures inside `splits.json`'s `figures`.
REPORT_KEY = "report"


class RowPlots(Record):
    """What the report's plots need of one kept record, beyond its turns and tool calls."""

    tools: tuple[str, ...] = ()  # the tool of each call, in order
    task_types: tuple[str, ...] = ()
    traits: tuple[str, ...] = ()  # the persona's traits as `name=value`
    axis_scores: tuple[tuple[str, float], ...] = ()  # (axis, score) of every judgement


def row_plots(record: DatasetRecord) -> RowPlots:
    """The record's plot figures, from its trajectory's JSON (parsed, not validated: only a
    few plain fields are read)."""
    trajectory = json.loads(record.trajectory_json)
    traits = trajectory["task"]["persona"]["traits"]
    return RowPlots(
        tools=tuple(step["call"]["name"] for step in trajectory["steps"]),
        task_types=record.task_types,
        traits=tuple(f"{name}={value}" for name, value in traits.items()),
        axis_scores=tuple(
            (axis["axis"], axis["score"])
            for judgement in trajectory["judgements"]
            for axis in judgement["axes"]
        ),
    )


class ReportFigures(BaseModel):
    """Counts of every kept row's figures: turns and tool calls per trajectory (value ->
    rows), calls per tool, rows per task type and per trait value, and each judge axis's
    scores (score -> count)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    turns: dict[int, int] = {}
    tool_calls: dict[int, int] = {}
    tools: dict[str, int] = {}
    task_types: dict[str, int] = {}
    traits: dict[str, int] = {}
    scores: dict[str, dict[float, int]] = {}

    @classmethod
    def of(cls, rows: Iterable[tuple[int, int, RowPlots]]) -> ReportFigures:
        """(user turns, tool calls, plot figures) of every kept row -> their counts."""
        turns, calls, tools, tasks, traits = Counter(), Counter(), Counter(), Counter(), Counter()
        scores: dict[str, Counter] = {}
        for turn_count, call_count, plots in rows:
            turns[turn_count] += 1
            calls[call_count] += 1
            tools.update(plots.tools)
            tasks.update(plots.task_types)
            traits.update(plots.traits)
            for axis, score in plots.axis_scores:
                scores.setdefault(axis, Counter())[score] += 1
        return cls(
            turns=dict(turns),
            tool_calls=dict(calls),
            tools=dict(tools),
            task_types=dict(tasks),
            traits=dict(traits),
            scores={axis: dict(c) for axis, c in scores.items()},
        )


def expanded(counts: Mapping[int, int] | Mapping[float, int]) -> list[float]:
    """Each value as many times as it was counted (a histogram's input)."""
    return [value for value, n in counts.items() for _ in range(n)]
