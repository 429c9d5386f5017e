"""Exact and near-duplicate detection over conversation text, shaped for Beam.

Exact duplicates: sha256 of the normalised conversation text. Near duplicates: MinHash over word
shingles, then LSH banding. The pipeline computes one signature per record (a Map), emits one
key per band (a FlatMap), groups by band key (GroupByKey), verifies the pairs inside each bucket
by estimated Jaccard, and resolves the verified pairs into clusters (union-find, keep the
smallest id). Every step is linear in the dataset; no all-pairs comparison.

Hashing is deterministic across processes (blake2b, fixed seeds; never Python's salted `hash`),
so signatures computed on different workers agree.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations, pairwise

import numpy as np

from trajforge.generators.values import normalise

MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)
DEFAULT_NUM_PERM = 128
DEFAULT_BANDS = 21  # 21 bands x 6 rows: P(candidate) 0.998 at Jaccard 0.8, 0.27 at 0.5
DEFAULT_ROWS = 6
DEFAULT_SHINGLE = 3
DEFAULT_THRESHOLD = 0.8
#: Buckets larger than this are paired as a chain in id order instead of all pairs, so one
#: boilerplate-heavy bucket cannot make the cost quadratic (the pipeline first splits such
#: buckets by content, see verifiers/buckets.py; the chain is the last resort).
MAX_BUCKET_ALL_PAIRS = 64


def exact_hash(text: str) -> str:
    """sha256 of the normalised text: equal for conversations equal up to case and spacing."""
    return hashlib.sha256(normalise(text).encode("utf-8")).hexdigest()


def exact_duplicates(items: Iterable[tuple[str, str]]) -> set[str]:
    """Ids to drop among (id, text): every id but the smallest of each exact-hash group."""
    keep: dict[str, str] = {}
    drop: set[str] = set()
    for record_id, text in items:
        key = exact_hash(text)
        current = keep.get(key)
        if current is None:
            keep[key] = record_id
        else:
            drop.add(max(current, record_id))
            keep[key] = min(current, record_id)
    return drop


# ---------------------------------------------------------------------------------------------
# MinHash


def _word_hash(word: str) -> int:
    return int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest(), "little")


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser: spreads combined word hashes over all 64 bits."""
    with np.errstate(over="ignore"):
        x = x ^ (x >> np.uint64(30))
        x = x * np.uint64(0xBF58476D1CE4E5B9)
        x = x ^ (x >> np.uint64(27))
        x = x * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def shingle_hashes(text: str, shingle: int = DEFAULT_SHINGLE) -> np.ndarray:
    """Distinct 64-bit hashes of the word k-shingles of the normalised text."""
    words = normalise(text).split()
    if not words:
        return np.zeros(1, dtype=np.uint64)
    cache: dict[str, int] = {}
    ids = np.fromiter(
        (cache.setdefault(w, _word_hash(w)) for w in words), dtype=np.uint64, count=len(words)
    )
    k = min(shingle, len(ids))
    combined = np.zeros(len(ids) - k + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for offset in range(k):
            combined = _mix64(combined ^ ids[offset : len(ids) - k + 1 + offset])
    return np.unique(combined)


@functools.lru_cache(maxsize=16)
def _permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Multiply-shift hash parameters: odd 64-bit multipliers and 64-bit offsets. Made once
    per (num_perm, seed), read-only and shared: a build's signatures use the same two (a new
    generator per call was ~0.5% of a blueprint build's CPU, py-spy, issue 30)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    a = rng.integers(1, 2**63, size=num_perm, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    b = rng.integers(0, 2**63, size=num_perm, dtype=np.uint64)
    a.flags.writeable = b.flags.writeable = False
    return a, b


def minhash_signature(
    text: str, num_perm: int = DEFAULT_NUM_PERM, seed: int = 1, shingle: int = DEFAULT_SHINGLE
) -> tuple[int, ...]:
    """MinHash of the text's word shingles: num_perm 32-bit minima (vectorised with numpy)."""
    x = shingle_hashes(text, shingle)
    a, b = _permutations(num_perm, seed)
    with np.errstate(over="ignore"):
        hashed = (a[:, None] * x[None, :] + b[:, None]) >> np.uint64(32)
    return tuple(int(v) for v in hashed.min(axis=1))


def set_minhash(items: Iterable[str], num_perm: int, seed: int = 2) -> tuple[int, ...]:
    """MinHash of a set of strings (e.g. a conversation's content values): slot i of two sets
    is equal with probability their Jaccard. Empty sets give all zeros."""
    hashes = np.fromiter((_word_hash(v) for v in sorted(set(items))), dtype=np.uint64)
    if len(hashes) == 0:
        return (0,) * num_perm
    a, b = _permutations(num_perm, seed)
    with np.errstate(over="ignore"):
        hashed = (a[:, None] * hashes[None, :] + b[:, None]) >> np.uint64(32)
    return tuple(int(v) for v in hashed.min(axis=1))


def estimated_jaccard(a: Sequence[int], b: Sequence[int]) -> float:
    """Fraction of equal MinHash slots: an unbiased estimate of the shingle-set Jaccard."""
    if len(a) != len(b):
        raise ValueError("signatures of different lengths")
    return float(np.mean(np.asarray(a) == np.asarray(b)))


def lsh_band_keys(
    signature: Sequence[int], bands: int = DEFAULT_BANDS, rows: int = DEFAULT_ROWS
) -> list[str]:
    """One key per band (`band:digest`): records sharing any key are candidate duplicates."""
    if bands * rows > len(signature):
        raise ValueError(f"{bands} bands x {rows} rows exceed a signature of {len(signature)}")
    sig = np.asarray(signature, dtype=np.uint32)
    keys = []
    for band in range(bands):
        chunk = sig[band * rows : (band + 1) * rows].tobytes()
        keys.append(f"{band}:{hashlib.blake2b(chunk, digest_size=8).hexdigest()}")
    return keys


# ---------------------------------------------------------------------------------------------
# Candidates, verification and clusters


def bucket_pairs(
    member_ids: Sequence[str], cap: int = MAX_BUCKET_ALL_PAIRS
) -> Iterator[tuple[str, str]]:
    """Candidate pairs inside one LSH bucket (sorted id pairs; a chain for huge buckets)."""
    ids = sorted(set(member_ids))
    if len(ids) <= cap:
        yield from combinations(ids, 2)
    else:
        yield from pairwise(ids)


def verified_pairs_in_bucket(
    members: Sequence[tuple[str, Sequence[int]]],
    threshold: float = DEFAULT_THRESHOLD,
    cap: int = MAX_BUCKET_ALL_PAIRS,
) -> list[tuple[str, str]]:
    """The Beam unit after GroupByKey: candidate pairs of a bucket whose estimated Jaccard
    reaches `threshold`. `members` are (id, signature)."""
    return verify_candidates(members, threshold, cap)[0]


def verify_candidates(
    members: Sequence[tuple[str, Sequence[int]]], threshold: float, cap: int
) -> tuple[list[tuple[str, str]], int]:
    """(verified pairs, candidate pairs examined) of one bucket: the count is what the scale
    benchmark and the manifest report, so a quadratic blow-up shows up as a number."""
    signatures = dict(members)
    candidates = list(bucket_pairs(list(signatures), cap))
    verified = [
        (a, b)
        for a, b in candidates
        if estimated_jaccard(signatures[a], signatures[b]) >= threshold
    ]
    return verified, len(candidates)


def resolve_clusters(pairs: Iterable[tuple[str, str]]) -> set[str]:
    """Ids to drop: union-find over duplicate pairs, keeping the smallest id per component."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return {x for x in parent if find(x) != x}


@dataclass(frozen=True)
class LSHParams:
    """Near-duplicate settings. `threshold` is the true shingle Jaccard that defines a near
    duplicate; candidates are verified against `verify_threshold` = threshold - margin because
    the 128-slot estimate has a standard deviation of ~0.035 near 0.8: verifying at the
    threshold itself would miss about half of the pairs that sit just above it."""

    num_perm: int = DEFAULT_NUM_PERM
    bands: int = DEFAULT_BANDS
    rows: int = DEFAULT_ROWS
    shingle: int = DEFAULT_SHINGLE
    threshold: float = DEFAULT_THRESHOLD
    margin: float = 0.05
    seed: int = 1

    @property
    def verify_threshold(self) -> float:
        return self.threshold - self.margin


class NearDupIndex:
    """In-memory near-duplicate detection for datasets that fit one process (tests, small runs).

    Same steps as the pipeline: signatures, band buckets, verified pairs, clusters.
    """

    def __init__(self, params: LSHParams = LSHParams()):
        self.params = params
        self._signatures: dict[str, tuple[int, ...]] = {}
        self._buckets: dict[str, list[str]] = {}

    def add(self, record_id: str, text: str) -> None:
        p = self.params
        self.add_signature(record_id, minhash_signature(text, p.num_perm, p.seed, p.shingle))

    def add_signature(self, record_id: str, signature: tuple[int, ...]) -> None:
        if record_id in self._signatures:
            raise ValueError(f"duplicate id {record_id}")
        self._signatures[record_id] = signature
        for key in lsh_band_keys(signature, self.params.bands, self.params.rows):
            self._buckets.setdefault(key, []).append(record_id)

    def query(self, text: str) -> list[str]:
        """Ids already indexed whose estimated Jaccard with `text` reaches the threshold."""
        p = self.params
        sig = minhash_signature(text, p.num_perm, p.seed, p.shingle)
        found = {
            rid for key in lsh_band_keys(sig, p.bands, p.rows) for rid in self._buckets.get(key, ())
        }
        return sorted(
            rid
            for rid in found
            if estimated_jaccard(sig, self._signatures[rid]) >= p.verify_threshold
        )

    def duplicate_pairs(self) -> set[tuple[str, str]]:
        pairs: set[tuple[str, str]] = set()
        for members in self._buckets.values():
            if len(members) > 1:
                batch = [(rid, self._signatures[rid]) for rid in members]
                pairs.update(verified_pairs_in_bucket(batch, self.params.verify_threshold))
        return pairs

    def duplicates(self) -> set[str]:
        """Ids to drop so that one record per near-duplicate cluster remains."""
        return resolve_clusters(self.duplicate_pairs())
