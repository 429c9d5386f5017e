"""The scale benchmark at small sizes: candidate pairs per record stay flat as the templated
data set doubles (plain LSH buckets would grow them with the size), planted duplicates are all
found, and no bucket exceeds its cap (the per-worker memory bound). Counts, not time."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from bench_scale import run  # noqa: E402

from trajforge.pipelines.config import NearDupConfig, SemanticDupConfig  # noqa: E402


@pytest.mark.slow  # ~30 s of Beam pipelines at two sizes
def test_candidate_pairs_grow_linearly_and_buckets_stay_bounded():
    # Small caps, so buckets reach them at test sizes (the default caps saturate from ~1-2k).
    near, semantic = NearDupConfig(max_bucket=8), SemanticDupConfig(max_bucket=16)
    small, big = (
        run(n, dup=0.05, seed=0, families=("near", "semantic"), near=near, semantic=semantic)
        for n in (300, 1200)
    )
    for family, cap in (("near", near.max_bucket), ("semantic", semantic.max_bucket)):
        per_small = small[f"{family}_candidate_pairs"] / small["size"]
        per_big = big[f"{family}_candidate_pairs"] / big["size"]
        assert per_big <= 1.3 * per_small, (family, per_small, per_big)
        assert big[f"{family}_max_bucket"] <= cap
        assert small[f"{family}_recall"] == big[f"{family}_recall"] == 1.0
    # The same data through plain banding: pairs per record grow with the size (quadratic).
    plain_small = small["near_unbounded_pairs"] / small["size"]
    assert big["near_unbounded_pairs"] / big["size"] > 3 * plain_small
