"""The search corruption benchmark at small scale: every planted fault is refused, every good
variant kept (the full numbers are in benchmarks/README.md)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from search_corruption_bench import run  # noqa: E402


def test_search_faults_are_rejected_and_good_variants_kept():
    report = run(n_tasks=3, seed=0)
    assert report["bases"] == report["generated"] >= 4
    for name, c in report["classes"].items():
        if c["label"] == "good":
            assert c["rejected"] == 0, (name, c)
        else:
            assert c["rejected"] == c["n"], (name, c)
    assert report["summary"]["bad_n"] > 30 and report["summary"]["good_n"] > 15
