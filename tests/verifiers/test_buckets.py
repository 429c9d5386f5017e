"""Bounded buckets, hyperplane bands, pair flags, samples and the Vendi estimate: pure logic."""

import numpy as np
import pytest

from trajforge.verifiers.buckets import (
    INT63,
    band_match_probability,
    chunks,
    hyperplane_bands,
    hyperplanes,
    mix64,
    pair_flag,
    refined_key,
    sample_rank,
)
from trajforge.verifiers.dedup import set_minhash, verify_candidates
from trajforge.verifiers.diversity import vendi_estimate, vendi_score
from trajforge.verifiers.semantic import neighbour_pairs, similar_pairs


def test_refined_key_splits_only_oversized_buckets():
    assert refined_key("3:ab", 17, count=64, cap=64) == "3:ab"
    assert refined_key("3:ab", 17, count=65, cap=64) == "3:ab/17"


def test_chunks_are_id_ordered_and_bounded():
    assert chunks(["c", "a", "e", "b", "d"], 2) == [["a", "b"], ["c", "d"], ["e"]]
    assert chunks([], 4) == [[]]


def test_mix64_and_sample_rank_fit_beams_signed_int_coder():
    for v in (0, 1, 2**64 - 1, 123456789):
        assert 0 <= mix64(v) <= INT63
    ranks = [sample_rank(f"id{i}") for i in range(2000)]
    assert all(0 <= r <= INT63 for r in ranks)
    assert ranks == [sample_rank(f"id{i}") for i in range(2000)]  # deterministic
    assert sample_rank("id1", seed=1) != sample_rank("id1", seed=0)
    # A uniform order: the 10% smallest ranks take about 10% of any id range.
    cut = sorted(ranks)[199]
    first_half = sum(1 for r in ranks[:1000] if r <= cut)
    assert 70 <= first_half <= 130


def test_set_minhash_slots_agree_with_jaccard():
    a = {f"v{i}" for i in range(100)}
    b = {f"v{i}" for i in range(20, 120)}  # Jaccard 80/120
    sa, sb = set_minhash(a, 512), set_minhash(b, 512)
    assert np.mean(np.array(sa) == np.array(sb)) == pytest.approx(80 / 120, abs=0.07)
    assert set_minhash(a, 8) == set_minhash(sorted(a, reverse=True), 8)
    assert set_minhash([], 4) == (0, 0, 0, 0)


def test_hyperplane_bands_match_for_close_vectors_not_for_far_ones():
    rng = np.random.default_rng(0)
    planes = hyperplanes(64, 8 * 8, seed=7)
    assert np.array_equal(planes, hyperplanes(64, 8 * 8, seed=7))
    close = far = 0
    for _ in range(200):
        x = rng.standard_normal(64)
        noise = rng.standard_normal(64)
        y = x + 0.15 * np.linalg.norm(x) * noise / np.linalg.norm(noise)  # cosine ~0.99
        z = rng.standard_normal(64)  # cosine ~0
        bx, by, bz = (hyperplane_bands(v, planes, 8) for v in (x, y, z))
        assert len(bx) == 8
        close += any(a == b for a, b in zip(bx, by, strict=True))
        far += any(a == b for a, b in zip(bx, bz, strict=True))
    assert close >= 195 and far <= 20
    assert band_match_probability(0.97, rows=8, bands=8) > 0.99
    assert band_match_probability(0.0, rows=8, bands=8) < 0.04


def test_pair_flag_marks_the_larger_id():
    assert pair_flag(("b", "a"), "near_duplicate") == ("b", ("near_duplicate", "a"))
    assert pair_flag(("a", "b"), "near_duplicate") == ("b", ("near_duplicate", "a"))


def test_verify_candidates_counts_all_pairs_then_a_chain():
    members = [(f"r{i}", (i % 2,) * 8) for i in range(6)]
    pairs, examined = verify_candidates(members, threshold=0.9, cap=64)
    assert examined == 15 and len(pairs) == 6  # 3 + 3 pairs of equal signatures
    pairs, examined = verify_candidates(members, threshold=0.9, cap=4)
    assert examined == 5 and pairs == []  # chain r0-r1-...: neighbours always differ


def test_neighbour_pairs_finds_what_all_pairs_finds_within_k():
    rng = np.random.default_rng(1)
    base = rng.standard_normal((30, 16)).astype(np.float32)
    dups = base[:5] + 0.01 * rng.standard_normal((5, 16)).astype(np.float32)
    vectors = np.vstack([base, dups])
    ids = [f"x{i:02d}" for i in range(35)]
    expected = {(ids[i], ids[j]) for i, j, _ in similar_pairs(vectors, 0.97)}
    found, examined = neighbour_pairs(ids, vectors, 0.97, neighbours=4)
    assert set(found) == expected and len(expected) == 5
    assert examined == 35 * 4  # k per record, not all pairs
    assert neighbour_pairs(ids[::-1], vectors[::-1], 0.97, 4)[0] == found  # order-independent


def test_vendi_estimate_states_the_spread_of_half_samples():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((200, 8))
    est = vendi_estimate(x, subsamples=10, seed=3)
    assert est.score == pytest.approx(vendi_score(x))
    assert est.sample_size == 200 and est.subsamples == 10
    assert est.half_sample_p5 <= est.half_sample_p95 <= 8.0
    assert est == vendi_estimate(x, subsamples=10, seed=3)
    same = vendi_estimate(np.ones((50, 4)), subsamples=5, seed=0)
    assert same.half_sample_p5 == pytest.approx(1.0) == same.score
