"""The report's hand-written SVG charts: numpy's binning, axis ticks, well-formed SVG."""

from __future__ import annotations

import random
import xml.etree.ElementTree as ET
from collections import Counter

import numpy as np
import pytest

from trajforge.pipelines.finished import report, report_svg

SVG = "{http://www.w3.org/2000/svg}"


def test_bins_count_as_numpy_histogram_over_random_values():
    rng = random.Random(7)
    for trial in range(2000):
        n = rng.randint(1, 60)
        if trial % 3 == 0:  # integers (turns, tool calls): values land on bin edges
            values = [rng.randint(0, rng.randint(0, 30)) for _ in range(n)]
        else:
            values = [rng.uniform(-5, 5) * 10 ** rng.randint(-3, 3) for _ in range(n)]
        bins = rng.choice([1, 3, 10, 20])
        edges = report_svg.bin_edges(values, bins)
        expected, np_edges = np.histogram(values, bins=bins)
        assert report_svg.bin_counts(values, edges) == expected.tolist(), (values, bins)
        assert np.allclose(edges, np_edges)


@pytest.mark.parametrize(
    ("high", "ticks"),
    [
        (0, [0.0, 1.0]),
        (1, [0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]),
        (10, [0, 2, 4, 6, 8, 10]),
        (24, [0, 5, 10, 15, 20, 25]),
        (37, [0, 10, 20, 30, 40]),
        (400, [0, 100, 200, 300, 400]),
    ],
)
def test_ticks_cover_the_top_in_round_steps(high, ticks):
    assert report_svg.nice_ticks(high) == ticks


def _parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    return root


def test_each_chart_is_well_formed_svg_with_its_bars_and_labels():
    counts = {"synthesize.kept": 10, "outcome.kept": 6, "outcome.rejected.x": 4}
    rejected = {"outcome": {"state_mismatch": 3, "a<b": 1}}
    root = _parse(report.waterfall(counts, 10, rejected))
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert {"inputs", "synthesize", "outcome", "kept", "state_mismatch", "a<b"} <= set(texts)
    root = _parse(report.histogram([1, 2, 2, 3], "user turns", "turns", bins=2))
    bars = [r for r in root.iter(f"{SVG}rect") if r.get("fill") == "#55a868"]
    assert [float(b.get("height")) for b in bars][0] < float(bars[1].get("height"))
    root = _parse(report.bars(Counter({"b_tool": 1, "a_tool": 3}), "tool calls"))
    labels = [t.text for t in root.iter(f"{SVG}text")]
    assert labels.index("a_tool") < labels.index("b_tool")  # largest first, at the top


@pytest.mark.parametrize("chart", ["histogram", "bars"])
def test_empty_charts_say_no_data(chart):
    svg = report.histogram([], "t", "x") if chart == "histogram" else report.bars(Counter(), "t")
    assert "no data" in [t.text for t in _parse(svg).iter(f"{SVG}text")]
