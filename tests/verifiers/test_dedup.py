import random

import numpy as np
import pytest
from trajectory_builders import Convo, cancel_convo, make_persona, make_task

from trajforge.generators.domains.retail.tasks import VOCABULARY as RETAIL
from trajforge.verifiers.dedup import (
    LSHParams,
    NearDupIndex,
    bucket_pairs,
    estimated_jaccard,
    exact_duplicates,
    exact_hash,
    lsh_band_keys,
    minhash_signature,
    resolve_clusters,
    shingle_hashes,
    verified_pairs_in_bucket,
)
from trajforge.verifiers.diversity import coverage, diversity_report, vendi_score
from trajforge.verifiers.text import conversation_text

WORDS = [f"w{i}" for i in range(5000)]


def doc(seed: int, n: int = 150) -> str:
    return " ".join(random.Random(seed).choices(WORDS, k=n))


def edit(text: str, n_words: int, seed: int = 0) -> str:
    words = text.split()
    rng = random.Random(seed)
    for i in rng.sample(range(len(words)), n_words):
        words[i] = "edited"
    return " ".join(words)


def true_jaccard(a: str, b: str, k: int = 3) -> float:
    sa = {tuple(a.split()[i : i + k]) for i in range(len(a.split()) - k + 1)}
    sb = {tuple(b.split()[i : i + k]) for i in range(len(b.split()) - k + 1)}
    return len(sa & sb) / len(sa | sb)


def test_exact_hash_ignores_case_and_spacing():
    assert exact_hash("Hello  World\n") == exact_hash("hello world")
    assert exact_hash("hello world") != exact_hash("hello world!")
    drop = exact_duplicates(
        [("b", "Hi there"), ("a", "hi  there"), ("c", "other"), ("d", "HI THERE")]
    )
    assert drop == {"b", "d"}


def test_exact_duplicate_trajectories_by_conversation_text(good_trajectory):
    other_persona = cancel_convo().build(make_task(persona=make_persona(name="Bo Li")))
    assert other_persona.id != good_trajectory.id
    assert exact_hash(conversation_text(other_persona)) == exact_hash(
        conversation_text(good_trajectory)
    )
    changed = Convo().user("hello").build()
    assert exact_hash(conversation_text(changed)) != exact_hash(conversation_text(good_trajectory))


def test_minhash_is_deterministic_and_estimates_jaccard():
    a = doc(1)
    b = edit(a, 5)
    assert minhash_signature(a) == minhash_signature(a)
    assert minhash_signature(a, seed=2) != minhash_signature(a)
    est = estimated_jaccard(minhash_signature(a, num_perm=256), minhash_signature(b, num_perm=256))
    assert est == pytest.approx(true_jaccard(a, b), abs=0.1)
    assert estimated_jaccard(minhash_signature(a), minhash_signature(doc(2))) < 0.1
    assert len(shingle_hashes("one two")) == 1 and len(shingle_hashes("")) == 1


def test_band_keys_shape_and_validation():
    sig = minhash_signature(doc(1))
    keys = lsh_band_keys(sig, bands=21, rows=6)
    assert len(keys) == 21 and len(set(keys)) == 21 and keys[0].startswith("0:")
    with pytest.raises(ValueError):
        lsh_band_keys(sig, bands=30, rows=6)


def test_resolve_clusters_keeps_smallest_id_per_component():
    assert resolve_clusters([("c", "b"), ("b", "a"), ("x", "y"), ("z", "z")]) == {"b", "c", "y"}
    assert resolve_clusters([]) == set()


def test_bucket_pairs_all_pairs_then_chain():
    assert list(bucket_pairs(["b", "a", "c"])) == [("a", "b"), ("a", "c"), ("b", "c")]
    big = [f"{i:03d}" for i in range(100)]
    assert len(list(bucket_pairs(big))) == 99


def test_verified_pairs_filter_by_threshold():
    a = doc(1)
    members = [
        ("a", minhash_signature(a)),
        ("b", minhash_signature(edit(a, 2))),
        ("c", minhash_signature(doc(3))),
    ]
    assert verified_pairs_in_bucket(members, 0.8) == [("a", "b")]


def test_verify_threshold_has_a_margin_below_the_definition():
    params = LSHParams(threshold=0.8, margin=0.05)
    assert params.verify_threshold == pytest.approx(0.75)
    assert params.bands * params.rows <= params.num_perm


def test_near_dup_index_finds_planted_pairs_and_keeps_distinct():
    index = NearDupIndex(LSHParams())
    planted = set()
    for i in range(60):
        base = doc(i)
        index.add(f"{i:03d}", base)
        if i % 3 == 0:
            dup = edit(base, 3, seed=i)
            assert true_jaccard(base, dup) >= 0.8
            index.add(f"{i:03d}-dup", dup)
            planted.add(f"{i:03d}-dup")
    assert index.duplicates() == planted
    assert index.query(edit(doc(5), 2)) == ["005"]
    assert index.query(doc(999)) == []
    with pytest.raises(ValueError):
        index.add("000", "again")


# --- diversity ----------------------------------------------------------------------------


def test_vendi_score_bounds():
    assert vendi_score(np.eye(4)) == pytest.approx(4.0)
    assert vendi_score(np.ones((6, 3))) == pytest.approx(1.0)
    two_clusters = np.array([[1, 0]] * 5 + [[0, 1]] * 5, dtype=float)
    assert vendi_score(two_clusters) == pytest.approx(2.0)
    big = np.random.default_rng(0).normal(size=(500, 16))  # n > d path
    assert 1.0 < vendi_score(big) <= 16.0


def test_coverage_counts_closed_set():
    cov = coverage("x", ("a", "b", "c", "d"), ["a", "a", "c", "zz"])
    assert cov.counts == {"a": 2, "b": 0, "c": 1, "d": 0, "zz": 1}
    assert (cov.covered, cov.total, cov.fraction) == (2, 4, 0.5)


def test_diversity_report_over_trajectories(good_trajectory):
    other = cancel_convo().build(
        make_task(
            task_types=("order_status", "return_items"),
            persona=make_persona(patience="high"),
            complexity=3,
        )
    )
    report = diversity_report(
        [good_trajectory, other],
        embeddings=np.eye(2),
        tool_names=("get_order_details", "cancel_pending_order", "return_delivered_order_items"),
        task_types=RETAIL.task_types,
    )
    dims = {d.dimension: d for d in report.coverage}
    assert report.n == 2 and report.vendi_score == pytest.approx(2.0)
    assert dims["trait.patience"].counts["low"] == 1 and dims["trait.patience"].counts["high"] == 1
    assert dims["trait.patience"].total == 5
    assert dims["task_type"].covered == 3 and dims["task_type"].total == 9
    assert dims["complexity"].counts == {"1": 1, "2": 0, "3": 1, "4": 0, "5": 0}
    assert dims["tool"].covered == 2 and dims["tool"].fraction == pytest.approx(2 / 3)
    assert diversity_report([]).vendi_score is None
