"""Scale benchmark for dedup and diversity: candidate pairs and per-worker memory by size.

Synthetic *templated* conversations (every record follows the same turn templates and differs
only in its slot values: the case where plain LSH buckets blow up), with planted near copies
(a few words edited, same values) and synthetic 384-d embeddings (a shared template direction
plus a per-task direction: different tasks sit at cosine ~0.9, planted copies at ~0.99). No LLM,
no embedding model. The real Beam composites run on the local FnApiRunner:

- near: `NearDupPairs` (MinHash bands, bounded buckets split by the content values' MinHash);
- semantic: `SemanticPairs` (hyperplane bands, bounded buckets, usearch neighbours per bucket);
- diversity: the hash-ordered `Top.Smallest` sample and the Vendi estimate on it.

Per-worker memory is what one bucket (or the diversity sample) needs: the largest bucket the
run produced is rebuilt and checked under tracemalloc. The process's peak RSS is printed too,
but it includes the local runner holding every shuffle in memory, which a distributed runner
spreads over workers.

    python benchmarks/bench_scale.py [--sizes 10000 20000 40000] [--dup 0.05]

Prints a table and writes benchmarks/results/bench_scale.json.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import tempfile
import time
import tracemalloc
from pathlib import Path

import apache_beam as beam
import numpy as np
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions

from trajforge.generators.values import extract_values
from trajforge.pipelines.config import DiversityConfig, NearDupConfig, SemanticDupConfig
from trajforge.pipelines.transforms.buckets import SCALE_NAMESPACE
from trajforge.pipelines.transforms.dedup import (
    DedupItem,
    NearDupPairs,
    SemanticPairs,
    semantic_bucket_pairs,
)
from trajforge.verifiers.buckets import sample_rank
from trajforge.verifiers.dedup import LSHParams, minhash_signature, verify_candidates
from trajforge.verifiers.diversity import vendi_estimate

TEMPLATES = (
    "user: hi i need help with my order {order}",
    "assistant: sure can you confirm your email address please",
    "user: my email is {email} and my zip code is {zip}",
    "assistant: thank you i found your account under user id {user}",
    "user: i would like to {verb} the {product} from that order",
    "assistant: the {product} in order {order} costs {amount} do you want to proceed",
    "user: yes please go ahead",
    "assistant: done the {product} has been processed and {amount} will be refunded",
    "user: thanks that is all",
)
SLOTS = {
    "verb": ("cancel", "return", "exchange"),
    "product": ("laptop", "t-shirt", "water bottle", "hiking boots", "desk lamp", "backpack"),
}
DIM = 384


def templated_text(rng: random.Random) -> str:
    values = {k: rng.choice(v) for k, v in SLOTS.items()}
    values |= {
        "order": f"#w{rng.randrange(10**6, 10**7)}",
        "email": f"user{rng.randrange(10**6)}@example.com",
        "zip": str(rng.randrange(10000, 99999)),
        "user": f"name_{rng.randrange(10**6)}",
        "amount": f"{rng.randrange(5, 900)}.{rng.randrange(100):02d}",
    }
    return "\n".join(t.format(**values) for t in TEMPLATES)


def edited(text: str, rng: random.Random) -> str:
    """A near copy: one or two plain words appended or swapped, every value kept."""
    words = text.split(" ")
    for _ in range(rng.randint(1, 2)):
        words.insert(rng.randrange(len(words)), rng.choice(("ok", "so", "well", "right")))
    return " ".join(words)


def dataset(size: int, dup: float, seed: int) -> tuple[list[DedupItem], list[tuple[str, str]]]:
    """`size` items, `dup` of them planted near copies of an original: (items, planted pairs)."""
    rng = random.Random(seed)
    n_dups = int(size * dup)
    items = []
    for i in range(size - n_dups):
        text = templated_text(rng)
        items.append(item(f"r{i:07d}", text))
    planted = []
    for j, original in enumerate(rng.sample(items, n_dups)):
        copy = item(f"r{size - n_dups + j:07d}", edited(original.text, rng))
        items.append(copy)
        planted.append((original.id, copy.id))
    return items, planted


def item(rid: str, text: str) -> DedupItem:
    intent = ("order_return",)
    return DedupItem(id=rid, text=text, intent=intent, values=tuple(sorted(extract_values(text))))


def embeddings(items: list[DedupItem], planted: list[tuple[str, str]], seed: int) -> dict:
    """id -> unit vector: template direction + per-task direction (copies: + small noise)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    template = rng.standard_normal(DIM)
    template /= np.linalg.norm(template)
    copy_of = {c: o for o, c in planted}
    vectors = {}
    for it in items:
        if it.id in copy_of:
            continue
        task = rng.standard_normal(DIM)
        v = 3.0 * template + task / np.linalg.norm(task)
        vectors[it.id] = v / np.linalg.norm(v)
    for copy, original in copy_of.items():
        noise = rng.standard_normal(DIM)
        v = vectors[original] + 0.08 * noise / np.linalg.norm(noise)
        vectors[copy] = v / np.linalg.norm(v)
    return {k: v.astype(np.float32) for k, v in vectors.items()}


def scale_metrics(result) -> dict[str, int]:
    found = result.metrics().query(MetricsFilter().with_namespace(SCALE_NAMESPACE))
    out = {c.key.metric.name: int(c.committed or c.attempted or 0) for c in found["counters"]}
    for d in found["distributions"]:
        data = d.committed or d.attempted
        out[d.key.metric.name + "_max"] = int(data.max) if data and data.count else 0
    return out


def run_flags(build) -> tuple[list, dict[str, int], float]:
    """Run one pipeline; returns (its output, scale metrics, seconds). The output goes through
    a file: the runner pickles every closure, so appending to a list here would be lost."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        p = beam.Pipeline(options=PipelineOptions(["--runner=FnApiRunner"]))
        (
            build(p)
            | "Json" >> beam.Map(json.dumps)
            | "Write" >> beam.io.WriteToText(f"{tmp}/out", num_shards=1, shard_name_template="")
        )
        result = p.run()
        result.wait_until_finish()
        with open(f"{tmp}/out") as f:
            out = [json.loads(line) for line in f]
    return out, scale_metrics(result), time.perf_counter() - started


def recall(flags, planted) -> float:
    found = {(partner, rid) for rid, (_, partner) in flags}  # flags: [id, [reason, partner]]
    return sum(1 for pair in planted if pair in found) / len(planted) if planted else 1.0


def traced_peak_mb(fn, *args) -> float:
    tracemalloc.start()
    fn(*args)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return round(peak / 2**20, 2)


def unbounded_near_pairs(items, cfg: NearDupConfig) -> int:
    """Candidate pairs plain LSH banding would check (all pairs of every band bucket, no
    refinement): the quadratic baseline the bounded buckets avoid."""
    from collections import Counter

    from trajforge.verifiers.dedup import lsh_band_keys

    sizes: Counter[str] = Counter()
    for it in items:
        sizes.update(lsh_band_keys(minhash_signature(it.text, cfg.num_perm), cfg.bands, cfg.rows))
    return sum(s * (s - 1) // 2 for s in sizes.values())


def near_row(items, planted, cfg: NearDupConfig) -> dict:
    flags, m, secs = run_flags(lambda p: p | beam.Create(items) | NearDupPairs(cfg))
    biggest = m.get("near.bucket_size_max", 0)
    sigs = [(it.id, minhash_signature(it.text, cfg.num_perm)) for it in items[:biggest]]
    threshold = LSHParams(threshold=cfg.threshold).verify_threshold
    return {
        "near_candidate_pairs": m.get("near.candidate_pairs", 0),
        "near_unbounded_pairs": unbounded_near_pairs(items, cfg),
        "near_verified_pairs": m.get("near.verified_pairs", 0),
        "near_recall": round(recall(flags, planted), 4),
        "near_max_bucket": biggest,
        "near_bucket_peak_mb": traced_peak_mb(verify_candidates, sigs, threshold, cfg.max_bucket),
        "near_s": round(secs, 1),
    }


def semantic_row(items, planted, vectors, cfg: SemanticDupConfig) -> dict:
    embedded = [(it.id, vectors[it.id], it.content_key()) for it in items]
    flags, m, secs = run_flags(lambda p: p | beam.Create(embedded) | SemanticPairs(cfg))
    biggest = m.get("semantic.bucket_size_max", 0)
    return {
        "semantic_candidate_pairs": m.get("semantic.candidate_pairs", 0),
        "semantic_verified_pairs": m.get("semantic.verified_pairs", 0),
        "semantic_recall": round(recall(flags, planted), 4),
        "semantic_max_bucket": biggest,
        "semantic_bucket_peak_mb": traced_peak_mb(semantic_bucket_pairs, embedded[:biggest], cfg),
        "semantic_s": round(secs, 1),
    }


def diversity_row(items, vectors, cfg: DiversityConfig) -> dict:
    entries = [(sample_rank(it.id, cfg.seed), it.id) for it in items]
    samples, _, secs = run_flags(
        lambda p: p | beam.Create(entries) | beam.combiners.Top.Smallest(cfg.sample_size)
    )
    sample = np.stack([vectors[rid] for _, rid in samples[0]])
    tracemalloc.start()
    estimate = vendi_estimate(sample, cfg.subsamples, cfg.seed)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {
        "diversity_sample": estimate.sample_size,
        "vendi": round(estimate.score, 2),
        "vendi_half_p5_p95": [
            round(estimate.half_sample_p5, 2),
            round(estimate.half_sample_p95, 2),
        ],
        "diversity_peak_mb": round(peak / 2**20, 2),
        "diversity_s": round(secs, 1),
    }


def run(
    size: int,
    dup: float,
    seed: int,
    families: tuple[str, ...],
    near: NearDupConfig = NearDupConfig(),
    semantic: SemanticDupConfig = SemanticDupConfig(),
) -> dict:
    """One size through the chosen families (`near`, `semantic`, `diversity`)."""
    items, planted = dataset(size, dup, seed)
    row: dict = {"size": size, "planted": len(planted)}
    if "near" in families:
        row |= near_row(items, planted, near)
    vectors = embeddings(items, planted, seed) if {"semantic", "diversity"} & set(families) else {}
    if "semantic" in families:
        row |= semantic_row(items, planted, vectors, semantic)
    if "diversity" in families:
        row |= diversity_row(items, vectors, DiversityConfig())
    row["process_peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000, 20000, 40000])
    parser.add_argument("--dup", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--families", nargs="+", default=["near", "semantic", "diversity"])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    rows = []
    for size in args.sizes:
        rows.append(run(size, args.dup, args.seed, tuple(args.families)))
        print(json.dumps(rows[-1]), flush=True)
    per_record = [
        {k: round(r[k] / r["size"], 2) for k in r if k.endswith("candidate_pairs")} for r in rows
    ]
    print("candidate pairs per record:", json.dumps(per_record))
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "bench_scale.json"
    path.write_text(json.dumps({"rows": rows, "per_record": per_record}, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
