"""Near-duplicate detection benchmark: time per dataset size, recall on planted near-duplicates,
false-positive rate.

Synthetic support conversations (shared templates + random slots and filler, so unrelated
conversations overlap like real ones do) with planted near-duplicates: copies with a few words
edited, kept only when their true word-3-shingle Jaccard with the original is >= 0.8, and as
many hard negatives (copies edited down to a true Jaccard < 0.7) to measure false positives. Detection
runs the same steps the pipeline runs (signature per record, band keys, group by key, verify
pairs per bucket, resolve clusters), in process.

    python benchmarks/dedup_bench.py [--sizes 1000 2000 5000 10000 20000] [--plant 0.1]

Prints a table and writes benchmarks/results/dedup_bench.json.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from trajforge.verifiers.dedup import (
    LSHParams,
    lsh_band_keys,
    minhash_signature,
    resolve_clusters,
    verified_pairs_in_bucket,
)

TEMPLATES = (
    "user: hi i need help with my order {id}",
    "assistant: sure i can help with that can you confirm your email {email}",
    "user: my email is {email} and my zip code is {zip}",
    "assistant: thank you i found your account under user id {user}",
    "user: i would like to {verb} the {product} i bought last {day}",
    "assistant: the {product} in order {id} costs {amount} do you want to proceed",
    "user: yes please go ahead and {verb} it",
    "assistant: done the {product} has been processed and {amount} will be refunded",
    "user: can you also tell me when order {id} will arrive",
    "assistant: order {id} is {status} and should arrive on {day}",
    "user: what payment method did i use for {id}",
    "assistant: you paid with {card} ending in {zip}",
    "user: thanks that is all ###STOP###",
    "assistant: is there anything else i can help you with today",
)
SLOTS = {
    "verb": ("cancel", "return", "exchange", "modify", "update"),
    "product": ("laptop", "t-shirt", "water bottle", "hiking boots", "desk lamp", "backpack"),
    "day": ("monday", "tuesday", "friday", "week", "month"),
    "status": ("pending", "delivered", "processed", "shipped"),
    "card": ("credit card", "gift card", "paypal"),
}
VOCAB = [f"word{i}" for i in range(3000)]


def fill(template: str, rng: random.Random) -> str:
    values = {k: rng.choice(v) for k, v in SLOTS.items()}
    values |= {
        "id": f"#w{rng.randrange(10**6, 10**7)}",
        "email": f"user{rng.randrange(10**5)}@example.com",
        "zip": str(rng.randrange(10000, 99999)),
        "user": f"name_{rng.randrange(10**4)}",
        "amount": f"{rng.randrange(5, 900)}.{rng.randrange(100):02d}",
    }
    return template.format(**values)


def conversation(rng: random.Random) -> str:
    turns = []
    for _ in range(rng.randrange(8, 15)):
        filler = " ".join(rng.choices(VOCAB, weights=_ZIPF, k=rng.randrange(5, 16)))
        turns.append(f"{fill(rng.choice(TEMPLATES), rng)} {filler}")
    return "\n".join(turns)


_ZIPF = [1.0 / (i + 1) for i in range(len(VOCAB))]


def shingles(text: str, k: int = 3) -> set[tuple[str, ...]]:
    words = text.split()
    return {tuple(words[i : i + k]) for i in range(len(words) - k + 1)}


def jaccard(a: str, b: str) -> float:
    sa, sb = shingles(a), shingles(b)
    return len(sa & sb) / len(sa | sb)


def near_copy(text: str, rng: random.Random, min_jaccard: float) -> str:
    """Edit 2-10 words; fall back to fewer edits until the true Jaccard is >= min_jaccard
    (so planted pairs spread over ~0.8-0.97, the hard end included)."""
    for n_edits in range(rng.randint(2, 10), 0, -1):
        words = text.split()
        for i in rng.sample(range(len(words)), n_edits):
            words[i] = rng.choice(VOCAB)
        copy = " ".join(words)
        if jaccard(text, copy) >= min_jaccard:
            return copy
    return text + " ok"


def far_copy(text: str, rng: random.Random, max_jaccard: float) -> str:
    """A hard negative: edit words until the true Jaccard drops below max_jaccard."""
    words = text.split()
    positions = list(range(len(words)))
    rng.shuffle(positions)
    for start in range(0, len(positions), 3):
        for i in positions[start : start + 3]:
            words[i] = rng.choice(VOCAB)
        copy = " ".join(words)
        if jaccard(text, copy) < max_jaccard:
            return copy
    return " ".join(words)


def dataset(size: int, plant_fraction: float, seed: int, min_jaccard: float):
    """`size` records: originals, planted near copies (true Jaccard >= min_jaccard) and as many
    hard negatives (copies edited to a true Jaccard just below min_jaccard - 0.1).
    Returns (records, planted (orig, copy), hard negatives (orig, copy))."""
    rng = random.Random(seed)
    n_planted = int(size * plant_fraction)
    records: list[tuple[str, str]] = []
    planted: list[tuple[str, str]] = []
    negatives: list[tuple[str, str]] = []
    n_originals = size - 2 * n_planted
    for i in range(n_originals):
        records.append((f"r{i:06d}", conversation(rng)))
    sources = rng.sample(records, 2 * n_planted)
    for j, (orig_id, text) in enumerate(sources):
        copy_id = f"r{n_originals + j:06d}"
        if j < n_planted:
            records.append((copy_id, near_copy(text, rng, min_jaccard)))
            planted.append((orig_id, copy_id))
        else:
            records.append((copy_id, far_copy(text, rng, min_jaccard - 0.1)))
            negatives.append((orig_id, copy_id))
    return records, planted, negatives


@dataclass
class Row:
    size: int
    planted: int
    planted_jaccard_min: float
    planted_jaccard_mean: float
    signature_s: float
    banding_s: float
    verify_s: float
    total_s: float
    us_per_record: float
    candidate_pairs: int
    verified_pairs: int
    recall: float
    hard_negative_jaccard_max: float
    hard_negative_fp_rate: float
    false_positive_rate: float
    max_bucket: int


def detect(records, params: LSHParams):
    t0 = time.perf_counter()
    signatures = {
        rid: minhash_signature(text, params.num_perm, params.seed, params.shingle)
        for rid, text in records
    }
    t1 = time.perf_counter()
    buckets: dict[str, list[str]] = defaultdict(list)  # the GroupByKey
    for rid, sig in signatures.items():
        for key in lsh_band_keys(sig, params.bands, params.rows):
            buckets[key].append(rid)
    t2 = time.perf_counter()
    pairs: set[tuple[str, str]] = set()
    candidates = 0
    for members in buckets.values():
        if len(members) > 1:
            candidates += len(members) * (len(members) - 1) // 2
            batch = [(rid, signatures[rid]) for rid in members]
            pairs.update(verified_pairs_in_bucket(batch, params.verify_threshold))
    dropped = resolve_clusters(pairs)
    t3 = time.perf_counter()
    max_bucket = max(len(m) for m in buckets.values())
    return pairs, dropped, (t1 - t0, t2 - t1, t3 - t2), candidates, max_bucket


def run(size: int, plant_fraction: float, params: LSHParams, seed: int) -> Row:
    records, planted, negatives = dataset(size, plant_fraction, seed, params.threshold)
    pairs, dropped, (sig_s, band_s, verify_s), candidates, max_bucket = detect(records, params)
    texts = dict(records)
    found = sum(1 for pair in planted if tuple(sorted(pair)) in pairs)
    planted_copies = {c for _, c in planted}
    negative_hits = sum(1 for pair in negatives if tuple(sorted(pair)) in pairs)
    negative_j = [jaccard(texts[a], texts[b]) for a, b in negatives] or [0.0]
    # A false positive: a dropped record that is no planted copy, paired with a record it is
    # not truly >= threshold similar to (hard negatives included).
    wrong = {
        b
        for a, b in pairs
        if b not in planted_copies and jaccard(texts[a], texts[b]) < params.threshold
    } & dropped
    originals = size - len(planted)  # every record that is no planted near copy
    planted_j = [jaccard(texts[a], texts[b]) for a, b in planted] or [1.0]
    total = sig_s + band_s + verify_s
    return Row(
        size=size,
        planted=len(planted),
        planted_jaccard_min=round(min(planted_j), 3),
        planted_jaccard_mean=round(sum(planted_j) / len(planted_j), 3),
        signature_s=round(sig_s, 3),
        banding_s=round(band_s, 3),
        verify_s=round(verify_s, 3),
        total_s=round(total, 3),
        us_per_record=round(1e6 * total / size, 1),
        candidate_pairs=candidates,
        verified_pairs=len(pairs),
        recall=round(found / len(planted), 4) if planted else 1.0,
        hard_negative_jaccard_max=round(max(negative_j), 3),
        hard_negative_fp_rate=round(negative_hits / len(negatives), 4) if negatives else 0.0,
        false_positive_rate=round(len(wrong) / originals, 5),
        max_bucket=max_bucket,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 5000, 10000, 20000])
    parser.add_argument("--plant", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    params = LSHParams()
    rows = [run(size, args.plant, params, args.seed) for size in args.sizes]
    header = list(asdict(rows[0]))
    print(" ".join(f"{h:>16}" for h in header))
    for row in rows:
        print(" ".join(f"{v!s:>16}" for v in asdict(row).values()))
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "dedup_bench.json"
    path.write_text(
        json.dumps({"params": asdict(params), "rows": [asdict(r) for r in rows]}, indent=2)
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
