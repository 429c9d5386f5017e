"""`trajforge report`: one self-contained HTML file about a run (written by every build too).

Plots are static SVG (pipelines/finished/report_svg.py), inlined in the page: nothing is
fetched at view time, no script runs, so the page opens offline and in any browser. Sections:
rejection waterfall per stage and reason, turns and tool calls per trajectory, tool usage,
judge score distributions, persona-trait and task-type coverage, diversity, tokens and cost,
and a browsable sample of kept and rejected trajectories (collapsible transcripts).

What it reads: the typed manifest (the build hands over its own), the plots' counts the
pipeline gathered over every kept row (`splits.json`, `figures.report`:
pipelines/report_figures.py), and only the rows it shows as samples -- no shard is read whole.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from collections.abc import Mapping
from typing import Any, get_args

from trajforge.pipelines import io, ownership
from trajforge.pipelines.finished import report_svg as svg
from trajforge.pipelines.finished.browse import Sample, kept_samples, rejected_samples
from trajforge.pipelines.manifest import Manifest, read_manifest
from trajforge.pipelines.report_figures import REPORT_KEY, ReportFigures, expanded
from trajforge.pipelines.split_figures import FIGURES_KEY
from trajforge.schemas import Stage

REPORT_FILE = io.REPORT_FILE
STAGE_ORDER: tuple[str, ...] = get_args(Stage)  # pipeline order, as the schema declares it
SAMPLES = 20
#: The plots' place when the run's build gathered no plot figures (an earlier trajforge).
NO_FIGURES = (
    "<p>This run's build (an earlier trajforge) gathered no plot figures; rebuild it "
    "(`trajforge build --resume` answers every call from its cache) to see them.</p>"
)


def waterfall(
    counts: Mapping[str, int], inputs: int, by_stage: Mapping[str, Mapping[str, int]]
) -> str:
    """Survivors after each stage (the manifest's `stage_counts` and `inputs`), with what each
    stage rejected, per reason (`outputs.rejected_by_stage`), stacked."""
    stages = [
        s
        for s in STAGE_ORDER
        if f"{s}.kept" in counts or any(k.startswith(f"{s}.") for k in counts)
    ]
    labels = ["inputs", *stages]
    survivors = [inputs, *(counts.get(f"{s}.kept", 0) for s in stages)]
    series = [svg.Series("kept", tuple(survivors), "#4c72b0")]
    for i, reason in enumerate(sorted({r for v in by_stage.values() for r in v})):
        heights = (0, *(by_stage.get(s, {}).get(reason, 0) for s in stages))
        series.append(svg.Series(reason, heights, svg.PALETTE[i % len(svg.PALETTE)]))
    return svg.stacked_columns(labels, series, "trajectories", (7, 3.2))


def histogram(values: list[float], title: str, xlabel: str, bins: int = 20) -> str:
    return svg.histogram(values, title, xlabel, bins, "#55a868")


def bars(counts: Counter, title: str) -> str:
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return svg.horizontal_bars(items, title, "#8172b3")


def report_figures(run_dir: str) -> ReportFigures | None:
    """The plots' counts the pipeline gathered (`splits.json`); empty when the run has no
    splits.json (nothing was kept), None when its build gathered none (an earlier one)."""
    path = io.join(run_dir, io.SPLITS_FILE)
    if not io.exists(path):
        return ReportFigures()
    figures = json.loads(io.read_text(path)).get(FIGURES_KEY, {})
    return ReportFigures.model_validate(figures[REPORT_KEY]) if REPORT_KEY in figures else None


def _kv_table(rows: dict[str, Any]) -> str:
    cells = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(json.dumps(v, sort_keys=True) if not isinstance(v, str) else v)}</td></tr>"
        for k, v in rows.items()
    )
    return f"<table>{cells}</table>"


def _sorted_table(section: Mapping[str, Any]) -> str:
    """A manifest section's table, its keys in manifest.json's (sorted) order: the same page
    from the build's record as from the file."""
    return _kv_table(dict(sorted(section.items())))


def _sample_html(sample: Sample) -> str:
    title = f"{sample.id[:16]} [{sample.status}]" + (f" {sample.reason}" if sample.reason else "")
    parts = [f"<p class='detail'>{html.escape(sample.detail)}</p>" if sample.detail else ""]
    for turn in sample.turns:
        details = "".join(f"<div class='d'>&rarr; {html.escape(d)}</div>" for d in turn.details)
        parts.append(
            f"<div class='turn {html.escape(turn.role)}'><b>{html.escape(turn.role)}</b> "
            f"{html.escape(turn.text)}{details}</div>"
        )
    return f"<details><summary>{html.escape(title)}</summary>{''.join(parts)}</details>"


CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
h2{border-bottom:1px solid #ccc;margin-top:1.6em}.plots{display:flex;flex-wrap:wrap;gap:1em;
align-items:flex-start}
.plots svg{max-width:100%;height:auto}table{border-collapse:collapse}th,td{border:1px solid #ddd;
padding:2px 8px;text-align:left;font-size:13px;vertical-align:top}details{margin:4px 0}
summary{cursor:pointer;font-family:monospace}.turn{margin:3px 0 3px 1em;white-space:pre-wrap;
font-size:13px}.d{margin-left:2em;color:#555;font-family:monospace}.user b{color:#1f77b4}
.assistant b{color:#2ca02c}.tool b{color:#b8860b}.system{color:#888}.detail{color:#a33}"""


def render_report(run_dir: str, manifest: Manifest | None = None) -> str:
    """The page; `manifest`: the build's own when it writes the report, else manifest.json."""
    manifest = manifest if manifest is not None else read_manifest(run_dir)
    out = manifest.outputs
    summary = {
        "inputs": manifest.inputs,
        "kept": out.kept,
        "rejected": out.rejected,
        "dead-lettered": out.dead_lettered,
        "rows per split": {s: v.rows for s, v in out.splits.items()},
        "config hash": manifest.config_hash,
        "models": {role: m.model_dump(mode="json") for role, m in manifest.models.items()},
        "wall time (s)": manifest.wall_time_s,
    }
    sections = [
        f"<h1>{html.escape(manifest.name)}</h1>",
        _kv_table(summary),
        "<h2>Rejection waterfall</h2><div class='plots'>"
        + waterfall(manifest.stage_counts, manifest.inputs, out.rejected_by_stage)
        + "</div>",
        *_plot_sections(report_figures(run_dir)),
        "<h2>Diversity</h2>" + _sorted_table(manifest.diversity or {"kept": 0}),
        (
            "<h2>Difficulty (k attempts per task)</h2>" + _sorted_table(manifest.difficulty)
            if manifest.difficulty
            else ""
        ),
        "<h2>Splits and leakage</h2>" + _sorted_table(manifest.splits),
        "<h2>Tokens and cost</h2>" + _sorted_table(manifest.tokens or {"llm_calls": 0}),
        "<h2>Kept samples</h2>"
        + "".join(_sample_html(s) for s in kept_samples(run_dir, None, SAMPLES)),
        "<h2>Rejected samples</h2>"
        + "".join(_sample_html(s) for s in rejected_samples(run_dir, None, SAMPLES)),
    ]
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>trajforge report: {html.escape(manifest.name)}</title><style>{CSS}</style>"
        "</head><body>" + "\n".join(sections) + "</body></html>\n"
    )


def _plot_sections(figures: ReportFigures | None) -> list[str]:
    """Turns and tool calls, tool usage, judge scores and coverage, from the gathered counts."""
    if figures is None:
        return ["<h2>Turns, tools, judge scores and coverage</h2>" + NO_FIGURES]
    score_plots = (
        "".join(
            histogram(expanded(counts), f"judge: {axis}", "score", bins=10)
            for axis, counts in sorted(figures.scores.items())
        )
        or "<p>No judge ran (quality.judge.enabled is false) or nothing was kept.</p>"
    )
    return [
        "<h2>Turns and tool calls</h2><div class='plots'>"
        + histogram(expanded(figures.turns), "user turns per trajectory", "turns")
        + histogram(expanded(figures.tool_calls), "tool calls per trajectory", "tool calls")
        + "</div>",
        "<h2>Tool usage</h2><div class='plots'>"
        + bars(Counter(figures.tools), "tool calls by tool")
        + "</div>",
        "<h2>Judge scores</h2><div class='plots'>" + score_plots + "</div>",
        "<h2>Coverage</h2><div class='plots'>"
        + bars(Counter(figures.task_types), "task types")
        + bars(Counter(figures.traits), "persona trait values")
        + "</div>",
    ]


def write_report(run_dir: str, manifest: Manifest | None = None) -> str:
    """report.html, written as the run's own file (recorded, renamed into place)."""
    return ownership.write_text(run_dir, REPORT_FILE, render_report(run_dir, manifest))
