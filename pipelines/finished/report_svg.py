"""The report's three chart kinds as plain SVG text: stacked columns, a histogram, horizontal bars.

Written by hand instead of with matplotlib: importing matplotlib and rendering the report's
six figures cost every build ~1 s of CPU (a quarter of a small build's fixed cost, issue 14),
for charts that are a few rectangles, ticks and labels. Text stays text (`<text>`, the
viewer's sans-serif font), so the page is also smaller. Nothing here reads a file or a clock:
the same numbers give the same SVG.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

#: matplotlib's default colour cycle (tab10), so reasons keep the colours they had.
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
PT_PER_INCH = 72  # figure sizes are given in inches, as they were for matplotlib
FONT = "font-family='DejaVu Sans,Arial,sans-serif'"


@dataclass(frozen=True)
class Series:
    """One stacked layer: its legend name, one value per column, its colour."""

    name: str
    values: tuple[float, ...]
    colour: str


@dataclass(frozen=True)
class Frame:
    """The plot area inside the figure, in SVG units (y grows downwards)."""

    left: float
    top: float
    width: float
    height: float

    @property
    def bottom(self) -> float:
        return self.top + self.height


def nice_ticks(high: float, target: int = 5) -> list[float]:
    """0 .. >= high in steps of 1, 2 or 5 x 10^k (about `target` steps), as an axis has."""
    if high <= 0:
        return [0.0, 1.0]
    raw = high / target
    scale = 10 ** math.floor(math.log10(raw))
    step = next(m * scale for m in (1, 2, 5, 10) if m * scale >= raw)
    count = math.ceil(high / step - 1e-9)
    return [i * step for i in range(count + 1)]


def fmt(value: float) -> str:
    """A tick or bin label: integers without a decimal point, others with at most 3 digits."""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.3g}"


def _text(x: float, y: float, text: str, size: float = 8, anchor: str = "middle", **extra) -> str:
    attrs = "".join(f" {k.replace('_', '-')}='{v}'" for k, v in extra.items())
    return (
        f"<text x='{x:.1f}' y='{y:.1f}' font-size='{size}' text-anchor='{anchor}' {FONT}"
        f"{attrs}>{html.escape(text)}</text>"
    )


def _rect(x: float, y: float, w: float, h: float, colour: str) -> str:
    return f"<rect x='{x:.2f}' y='{y:.2f}' width='{w:.2f}' height='{h:.2f}' fill='{colour}'/>"


def _svg(width_in: float, height_in: float, body: list[str]) -> str:
    w, h = width_in * PT_PER_INCH, height_in * PT_PER_INCH
    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{w:.0f}pt' height='{h:.0f}pt' "
        f"viewBox='0 0 {w:.0f} {h:.0f}'><rect width='100%' height='100%' fill='white'/>"
        + "".join(body)
        + "</svg>"
    )


def _value_axis(frame: Frame, ticks: list[float], label: str, vertical: bool) -> list[str]:
    """Grid-free axis: the frame, tick marks and labels along y (vertical) or x."""
    out = [
        f"<rect x='{frame.left:.1f}' y='{frame.top:.1f}' width='{frame.width:.1f}' "
        f"height='{frame.height:.1f}' fill='none' stroke='#333' stroke-width='0.8'/>"
    ]
    top = ticks[-1] or 1
    for t in ticks:
        if vertical:
            y = frame.bottom - frame.height * t / top
            out.append(
                f"<line x1='{frame.left - 3:.1f}' y1='{y:.1f}' x2='{frame.left:.1f}' "
                f"y2='{y:.1f}' stroke='#333' stroke-width='0.8'/>"
            )
            out.append(_text(frame.left - 5, y + 3, fmt(t), anchor="end"))
        else:
            x = frame.left + frame.width * t / top
            out.append(
                f"<line x1='{x:.1f}' y1='{frame.bottom:.1f}' x2='{x:.1f}' "
                f"y2='{frame.bottom + 3:.1f}' stroke='#333' stroke-width='0.8'/>"
            )
            out.append(_text(x, frame.bottom + 12, fmt(t)))
    if label and vertical:
        cy = frame.top + frame.height / 2
        out.append(_text(12, cy, label, size=9, transform=f"rotate(-90 12 {cy:.1f})"))
    elif label:
        out.append(_text(frame.left + frame.width / 2, frame.bottom + 25, label, size=9))
    return out


def _legend(frame: Frame, series: Sequence[Series]) -> list[str]:
    """Upper right, one swatch and name per layer."""
    width = 14 + 4.2 * max(len(s.name) for s in series)
    x = frame.left + frame.width - width - 4
    out = [
        f"<rect x='{x - 3:.1f}' y='{frame.top + 3:.1f}' width='{width + 3:.1f}' "
        f"height='{10 * len(series) + 4:.1f}' fill='white' fill-opacity='0.8' stroke='#ccc'/>"
    ]
    for i, s in enumerate(series):
        y = frame.top + 6 + 10 * i
        out.append(_rect(x, y, 8, 6, s.colour))
        out.append(_text(x + 11, y + 6, s.name, size=7, anchor="start"))
    return out


def stacked_columns(
    labels: Sequence[str], series: Sequence[Series], ylabel: str, size: tuple[float, float]
) -> str:
    """One column per label, the series stacked bottom-up; x labels slanted 30 degrees."""
    width_in, height_in = size
    longest = max((len(label) for label in labels), default=1)
    frame = Frame(48, 10, width_in * PT_PER_INCH - 58, height_in * PT_PER_INCH - 24 - 3 * longest)
    totals = [sum(s.values[i] for s in series) for i in range(len(labels))]
    ticks = nice_ticks(max(totals, default=0))
    out = _value_axis(frame, ticks, ylabel, vertical=True)
    slot = frame.width / max(len(labels), 1)
    for i, label in enumerate(labels):
        x, base = frame.left + slot * (i + 0.1), 0.0
        for s in series:
            h = frame.height * s.values[i] / (ticks[-1] or 1)
            out.append(_rect(x, frame.bottom - base - h, slot * 0.8, h, s.colour))
            base += h
        cx, y = frame.left + slot * (i + 0.5), frame.bottom + 10
        out.append(_text(cx, y, label, anchor="end", transform=f"rotate(-30 {cx:.1f} {y:.1f})"))
    return _svg(width_in, height_in, out + _legend(frame, series))


def bin_edges(values: Sequence[float], bins: int) -> list[float]:
    """Equal-width edges over [min, max] (a single value gets [v - 0.5, v + 0.5], as numpy)."""
    low, high = min(values), max(values)
    if low == high:
        low, high = low - 0.5, high + 0.5
    return [low + (high - low) * i / bins for i in range(bins + 1)]


def bin_counts(values: Sequence[float], edges: Sequence[float]) -> list[int]:
    """Counts per half-open bin [a, b), the last one closed, as `numpy.histogram` counts."""
    bins = len(edges) - 1
    counts = [0] * bins
    low, high = edges[0], edges[-1]
    for v in values:
        i = bins - 1 if v >= high else int((v - low) / (high - low) * bins)
        while i > 0 and v < edges[i]:  # float rounding at an edge: the bin holding v
            i -= 1
        while i < bins - 1 and v >= edges[i + 1]:
            i += 1
        counts[i] += 1
    return counts


def histogram(values: Sequence[float], title: str, xlabel: str, bins: int, colour: str) -> str:
    """Counts of `values` in `bins` equal-width bins; "no data" when there are none."""
    frame = Frame(40, 20, 4.2 * PT_PER_INCH - 50, 2.8 * PT_PER_INCH - 54)
    out = [_text(frame.left + frame.width / 2, 13, title, size=10)]
    if not values:
        out += _value_axis(frame, [0.0, 1.0], "count", vertical=True)
        out.append(_text(frame.left + frame.width / 2, frame.top + frame.height / 2, "no data"))
        out.append(_text(frame.left + frame.width / 2, frame.bottom + 25, xlabel, size=9))
        return _svg(4.2, 2.8, out)
    edges = bin_edges(values, bins)
    counts = bin_counts(values, edges)
    ticks = nice_ticks(max(counts))
    out += _value_axis(frame, ticks, "count", vertical=True)
    step = frame.width / bins
    for i, c in enumerate(counts):
        h = frame.height * c / ticks[-1]
        out.append(_rect(frame.left + step * i, frame.bottom - h, step, h, colour))
    for i in range(0, bins + 1, max(1, bins // 4)):
        x = frame.left + step * i
        out.append(_text(x, frame.bottom + 12, fmt(round(edges[i], 3))))
    out.append(_text(frame.left + frame.width / 2, frame.bottom + 25, xlabel, size=9))
    return _svg(4.2, 2.8, out)


def horizontal_bars(items: Sequence[tuple[str, float]], title: str, colour: str) -> str:
    """One bar per (label, value), top to bottom in the given order; "no data" when empty."""
    height_in = max(2.0, 0.28 * len(items) + 0.8)
    longest = max((len(label) for label, _ in items), default=4)
    left = 10 + 4.6 * longest
    frame = Frame(left, 20, 5.5 * PT_PER_INCH - left - 10, height_in * PT_PER_INCH - 40)
    out = [_text(frame.left + frame.width / 2, 13, title, size=10)]
    ticks = nice_ticks(max((v for _, v in items), default=0))
    out += _value_axis(frame, ticks, "", vertical=False)
    if not items:
        out.append(_text(frame.left + frame.width / 2, frame.top + frame.height / 2, "no data"))
        return _svg(5.5, height_in, out)
    slot = frame.height / len(items)
    for i, (label, value) in enumerate(items):
        y = frame.top + slot * i
        out.append(
            _rect(frame.left, y + slot * 0.1, frame.width * value / ticks[-1], slot * 0.8, colour)
        )
        out.append(_text(frame.left - 4, y + slot / 2 + 3, label, size=7.5, anchor="end"))
    return _svg(5.5, height_in, out)
