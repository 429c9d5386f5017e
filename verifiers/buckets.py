"""Bounded LSH buckets, duplicate-pair resolution and bounded samples: the pure logic behind
the scalable dedup and diversity transforms (no Beam here; pipelines/transforms wires it).

Why bound buckets: on templated data most records share LSH bands (the template dominates the
text and the embedding), so one band key can hold thousands of records. Grouping them on one
worker makes memory and candidate pairs grow with the dataset. A bucket above `cap` members
(known from a cheap Beam count per key) is split by a *refiner*: the band's slot of a MinHash
over the record's content values (ids, amounts, emails: what differs between tasks). Two
records share a slot with probability equal to their content Jaccard, so duplicates (same
values) still meet while template-only look-alikes (different values) spread out. Semantic
duplicates must share content anyway (content_key.same_content), so this costs them little;
more hyperplane bits could not do it: at cosine 0.9 between different templated tasks, each
extra bit splits them barely more often than it splits true duplicates.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Sequence

import numpy as np

#: Keys and ranks stay below 2**63: Beam's integer coder takes signed 64-bit values only.
INT63 = (1 << 63) - 1


def refined_key(key: str, refiner: int, count: int, cap: int) -> str:
    """`key` when its bucket holds at most `cap` records, else `key/<refiner>`: an oversized
    bucket splits into one sub-bucket per content slot."""
    return key if count <= cap else f"{key}/{refiner}"


def chunks(ids: Sequence[str], cap: int) -> list[list[str]]:
    """A bucket that is still over `cap` after refinement, cut into id-ordered chunks of at most
    `cap` (deterministic; pairs across chunks are not compared, which the scale counters show)."""
    ordered = sorted(ids)
    return [ordered[i : i + cap] for i in range(0, len(ordered), cap)] or [[]]


def mix64(value: int) -> int:
    """splitmix64 finaliser on a Python int: a MinHash minimum is skewed towards small values;
    mixing it makes its low bits uniform, so they can pick a sub-bucket. 63 bits: Beam's
    integer coder takes signed 64-bit values only."""
    x = value & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return (x ^ (x >> 31)) & INT63


# ---------------------------------------------------------------------------------------------
# Random-hyperplane LSH over embeddings (semantic dedup)


@functools.lru_cache(maxsize=8)
def hyperplanes(dim: int, count: int, seed: int) -> np.ndarray:
    """`count` random hyperplane normals (dim x count), the same on every worker for a seed;
    drawn once per process (read-only), not once per record."""
    rng = np.random.Generator(np.random.PCG64(seed))
    planes = rng.standard_normal((dim, count)).astype(np.float32)
    planes.setflags(write=False)
    return planes


def pack_bits(bits: np.ndarray) -> int:
    """Booleans -> int with bit i = bits[i], so the low `d` bits are the first `d` planes."""
    return int(sum(1 << i for i, b in enumerate(bits.tolist()) if b))


def hyperplane_bands(vector: np.ndarray, planes: np.ndarray, rows: int) -> list[int]:
    """Band bits per band (`planes` holds bands x rows normals). Two vectors at angle θ agree
    on each bit with probability 1 - θ/π, so a band matches with (1 - θ/π)**rows."""
    bits = (np.asarray(vector, dtype=np.float32) @ planes) >= 0
    return [pack_bits(bits[start : start + rows]) for start in range(0, len(bits), rows)]


def band_match_probability(cosine: float, rows: int, bands: int) -> float:
    """P(two vectors at `cosine` share at least one band): the recall of the candidate step."""
    p = 1.0 - math.acos(max(-1.0, min(1.0, cosine))) / math.pi
    return 1.0 - (1.0 - p**rows) ** bands


# ---------------------------------------------------------------------------------------------
# Pairs -> drops, and bounded samples


def pair_flag(pair: tuple[str, str], reason: str) -> tuple[str, tuple[str, str]]:
    """(larger id, (reason, smaller id)): a verified pair flags its larger id. Each record is
    then decided from its own flags (grouped by id, smallest partner wins), so no worker ever
    holds every pair, and the smallest id of each cluster always stays."""
    a, b = pair
    return (b, (reason, a)) if a < b else (a, (reason, b))


def sample_rank(record_id: str, seed: int = 0) -> int:
    """A record's place in the deterministic sample order: the k smallest ranks are a uniform
    sample of size k that every worker and every rerun agrees on."""
    digest = hashlib.blake2b(f"{seed}:{record_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & INT63
