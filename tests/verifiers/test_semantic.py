"""Semantic dedup with the packaged MiniLM model (loaded once for the session)."""

import numpy as np
import pytest

from trajforge.verifiers.semantic import (
    embed,
    find_semantic_duplicates,
    load_embedder,
    semantic_duplicates,
    similar_pairs,
)


@pytest.fixture(scope="session")
def embedder():
    return load_embedder()


def test_similar_pairs_blocked_matches_dense():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 8)).astype(np.float32)
    x[150] = x[3] + 0.01
    x[299] = x[150]
    pairs = similar_pairs(x, 0.99, block=64)
    assert [(i, j) for i, j, _ in pairs] == [(3, 150), (3, 299), (150, 299)]
    ids = [f"{i:03d}" for i in range(300)]
    assert semantic_duplicates(ids, x, 0.99) == {"150", "299"}


def test_paraphrases_are_semantic_duplicates(embedder):
    assert embedder is load_embedder()  # one model per process
    texts = [
        "user: please cancel my order #W1, i ordered it by mistake. assistant: done, order cancelled.",
        "user: I'd like to cancel order #W1 since I bought it by mistake. assistant: done, it is cancelled.",
        "user: what is the status of my laptop delivery? assistant: it ships tomorrow.",
    ]
    vectors = embed(texts)
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    sims = vectors @ vectors.T
    assert sims[0, 1] > 0.85 > sims[0, 2]
    assert find_semantic_duplicates(["a", "b", "c"], texts, threshold=0.85) == {"b"}
