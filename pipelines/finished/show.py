"""`trajforge show`: trajectories of a run rendered readably in the terminal.

One block per sample: a header (id, split or rejection stage, reason), then each turn with its
role, wrapped text and indented details (tool calls with arguments, state changes), then the
outcome. Colours only when writing to a terminal.
"""

from __future__ import annotations

import shutil
import textwrap

from trajforge.pipelines.finished.browse import Sample, kept_samples, rejected_samples

COLOURS = {
    "system": "90",
    "user": "36",
    "assistant": "32",
    "tool": "33",
    "outcome": "35",
    "judge": "35",
    "header": "1",
}


def _paint(text: str, role: str, colour: bool) -> str:
    code = COLOURS.get(role)
    return f"\033[{code}m{text}\033[0m" if colour and code else text


def render_sample(sample: Sample, width: int, colour: bool, system_chars: int = 200) -> str:
    head = f"== {sample.id[:16]}  [{sample.status}]"
    if sample.reason:
        head += f"  reason: {sample.reason}"
    lines = [_paint(head, "header", colour)]
    if sample.detail:
        lines += textwrap.wrap(f"   {sample.detail}", width, subsequent_indent="   ")
    for turn in sample.turns:
        text = turn.text
        if turn.role == "system" and len(text) > system_chars:
            text = text[:system_chars] + f"... ({len(turn.text)} chars)"
        label = _paint(f"{turn.role:>9} |", turn.role, colour)
        body = textwrap.wrap(text, max(width - 12, 20)) or [""]
        lines.append(f"{label} {body[0]}")
        lines += [f"{'':>9} | {b}" for b in body[1:]]
        for d in turn.details:
            lines += [f"{'':>9} |   {w}" for w in textwrap.wrap(f"-> {d}", max(width - 16, 20))]
    return "\n".join(lines)


def show(
    run_dir: str,
    split: str | None = None,
    n: int = 3,
    reason: str | None = None,
    rejected_only: bool = False,
    colour: bool = False,
) -> str:
    """Text for `n` kept samples (of `split`), or rejected ones (of `reason`) when asked."""
    width = min(shutil.get_terminal_size((100, 20)).columns, 120)
    if reason is not None or rejected_only:
        samples = rejected_samples(run_dir, reason, n)
        empty = f"no rejected trajectories{f' with reason {reason!r}' if reason else ''}"
    else:
        samples = kept_samples(run_dir, split, n)
        empty = f"no kept trajectories{f' in split {split!r}' if split else ''}"
    if not samples:
        return empty
    return "\n\n".join(render_sample(s, width, colour) for s in samples)
