"""`trajforge report`: one self-contained HTML file about a run (written by every build too).

Plots are static SVG (pipelines/finished/report_svg.py), inlined in the page: nothing is fetched at view time, no
script runs, so the page opens offline and in any browser. Sections: rejection waterfall per
stage and reason, turns and tool calls per trajectory, tool usage, judge score distributions,
persona-trait and task-type coverage, diversity, tokens and cost, and a browsable sample of kept
and rejected trajectories (collapsible transcripts).
"""

from __future__ import annotations

import html
import json
from collections import Counter
from typing import Any, get_args

from trajforge.pipelines import io, ownership
from trajforge.pipelines.finished import report_svg as svg
from trajforge.pipelines.finished.browse import Sample, kept, kept_samples, rejected_samples
from trajforge.schemas import Stage

REPORT_FILE = io.REPORT_FILE
STAGE_ORDER: tuple[str, ...] = get_args(Stage)  # pipeline order, as the schema declares it
MAX_TRAJECTORIES = 5000  # plots read at most this many kept rows
SAMPLES = 20


def waterfall(manifest: dict[str, Any]) -> str:
    """Survivors after each stage, with what each stage rejected, per reason, stacked."""
    counts = manifest["stage_counts"]
    stages = [
        s
        for s in STAGE_ORDER
        if f"{s}.kept" in counts or any(k.startswith(f"{s}.") for k in counts)
    ]
    labels = ["inputs", *stages]
    survivors = [manifest["inputs"], *(counts.get(f"{s}.kept", 0) for s in stages)]
    series = [svg.Series("kept", tuple(survivors), "#4c72b0")]
    by_stage = manifest["outputs"]["rejected_by_stage"]
    for i, reason in enumerate(sorted({r for v in by_stage.values() for r in v})):
        heights = (0, *(by_stage.get(s, {}).get(reason, 0) for s in stages))
        series.append(svg.Series(reason, heights, svg.PALETTE[i % len(svg.PALETTE)]))
    return svg.stacked_columns(labels, series, "trajectories", (7, 3.2))


def histogram(values: list[float], title: str, xlabel: str, bins: int = 20) -> str:
    return svg.histogram(values, title, xlabel, bins, "#55a868")


def bars(counts: Counter, title: str) -> str:
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return svg.horizontal_bars(items, title, "#8172b3")


def collect(run_dir: str) -> dict[str, Any]:
    """Per-trajectory numbers of (at most MAX_TRAJECTORIES) kept rows."""
    turns, calls, tools, tasks, traits = [], [], Counter(), Counter(), Counter()
    scores: dict[str, list[float]] = {}
    for i, (_, t) in enumerate(kept(run_dir)):
        if i >= MAX_TRAJECTORIES:
            break
        turns.append(sum(1 for m in t.messages if m.role == "user"))
        calls.append(len(t.steps))
        tools.update(s.call.name for s in t.steps)
        tasks.update(t.task.intent.task_types)
        for name, value in t.task.persona.traits.model_dump().items():
            traits[f"{name}={value}"] += 1
        for j in t.judgements:
            for a in j.axes:
                scores.setdefault(a.axis, []).append(a.score)
    return {
        "turns": turns,
        "calls": calls,
        "tools": tools,
        "tasks": tasks,
        "traits": traits,
        "scores": scores,
    }


def _kv_table(rows: dict[str, Any]) -> str:
    cells = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(json.dumps(v, sort_keys=True) if not isinstance(v, str) else v)}</td></tr>"
        for k, v in rows.items()
    )
    return f"<table>{cells}</table>"


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


def render_report(run_dir: str) -> str:
    manifest = json.loads(io.read_text(io.join(run_dir, "manifest.json")))
    data = collect(run_dir)
    out = manifest["outputs"]
    summary = {
        "inputs": manifest["inputs"],
        "kept": out["kept"],
        "rejected": out["rejected"],
        "dead-lettered": out["dead_lettered"],
        "rows per split": {s: v["rows"] for s, v in out["splits"].items()},
        "config hash": manifest["config_hash"],
        "models": manifest["models"],
        "wall time (s)": manifest["wall_time_s"],
    }
    score_plots = (
        "".join(
            histogram(v, f"judge: {axis}", "score", bins=10)
            for axis, v in sorted(data["scores"].items())
        )
        or "<p>No judge ran (quality.judge.enabled is false) or nothing was kept.</p>"
    )
    sections = [
        f"<h1>{html.escape(manifest['name'])}</h1>",
        _kv_table(summary),
        "<h2>Rejection waterfall</h2><div class='plots'>" + waterfall(manifest) + "</div>",
        "<h2>Turns and tool calls</h2><div class='plots'>"
        + histogram(data["turns"], "user turns per trajectory", "turns")
        + histogram(data["calls"], "tool calls per trajectory", "tool calls")
        + "</div>",
        "<h2>Tool usage</h2><div class='plots'>"
        + bars(data["tools"], "tool calls by tool")
        + "</div>",
        "<h2>Judge scores</h2><div class='plots'>" + score_plots + "</div>",
        "<h2>Coverage</h2><div class='plots'>"
        + bars(data["tasks"], "task types")
        + bars(data["traits"], "persona trait values")
        + "</div>",
        "<h2>Diversity</h2>" + _kv_table(manifest.get("diversity") or {"kept": 0}),
        (
            "<h2>Difficulty (k attempts per task)</h2>" + _kv_table(manifest["difficulty"])
            if manifest.get("difficulty")
            else ""
        ),
        "<h2>Splits and leakage</h2>"
        + _kv_table({k: v for k, v in manifest.get("splits", {}).items()}),
        "<h2>Tokens and cost</h2>" + _kv_table(manifest.get("tokens") or {"llm_calls": 0}),
        "<h2>Kept samples</h2>"
        + "".join(_sample_html(s) for s in kept_samples(run_dir, None, SAMPLES)),
        "<h2>Rejected samples</h2>"
        + "".join(_sample_html(s) for s in rejected_samples(run_dir, None, SAMPLES)),
    ]
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>trajforge report: {html.escape(manifest['name'])}</title><style>{CSS}</style>"
        "</head><body>" + "\n".join(sections) + "</body></html>\n"
    )


def write_report(run_dir: str) -> str:
    """report.html, written as the run's own file (recorded, renamed into place)."""
    return ownership.write_text(run_dir, REPORT_FILE, render_report(run_dir))
