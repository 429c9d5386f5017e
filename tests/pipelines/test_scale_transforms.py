"""TestPipeline tests of the scalable dedup, diversity and output transforms: bounded buckets,
near and semantic pairs found inside them, diversity from a CombineFn and a bounded sample,
sharded JSON Lines with the summary the manifest counts from."""

import json

import apache_beam as beam
import numpy as np
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to
from test_pipeline_transforms import tasks, trajectories  # noqa: F401 - shared fixtures

from trajforge.pipelines import io
from trajforge.pipelines.config import DiversityConfig, NearDupConfig, SemanticDupConfig
from trajforge.pipelines.transforms.buckets import BoundedBuckets
from trajforge.pipelines.transforms.dedup import DedupItem, NearDupPairs, SemanticPairs
from trajforge.pipelines.transforms.diversity import CoverageCombineFn, Diversity
from trajforge.pipelines.transforms.jsonl import WriteShardedJsonl, num_shards
from trajforge.schemas import Rejection
from trajforge.verifiers.content_key import ContentKey
from trajforge.verifiers.diversity import diversity_report


def options():
    return PipelineOptions(["--runner=FnApiRunner"])


def test_bounded_buckets_split_oversized_keys_by_refiner():
    # 10 records under key "big" (cap 4): split by refiner (r % 3); "small" stays whole.
    keyed = [("big", (r % 3, f"b{r}")) for r in range(10)] + [
        ("small", (0, "s0")),
        ("small", (1, "s1")),
    ]
    with BeamTestPipeline(options=options()) as p:
        out = (
            p
            | beam.Create(keyed)
            | BoundedBuckets(cap=4, metric_prefix="test")
            | beam.MapTuple(lambda k, members: (k, sorted(members)))
        )
        assert_that(
            out,
            equal_to(
                [
                    ("big/0", ["b0", "b3", "b6", "b9"]),
                    ("big/1", ["b1", "b4", "b7"]),
                    ("big/2", ["b2", "b5", "b8"]),
                    ("small", ["s0", "s1"]),
                ]
            ),
        )


def templated(i: int) -> str:
    return (
        f"user: hi i need help with order #w{1000000 + i} placed last week\n"
        f"assistant: sure can you confirm your email user{i}@example.com please\n"
        f"user: yes it is user{i}@example.com and my zip is {10000 + i}\n"
        "assistant: thank you the order is pending do you want me to cancel it"
    )


def item(rid: str, i: int, text: str | None = None) -> DedupItem:
    vals = (f"#w{1000000 + i}", f"user{i}@example.com", str(10000 + i))
    return DedupItem(
        id=rid, text=text or templated(i), intent=("cancel",), values=tuple(sorted(vals))
    )


def test_near_dup_pairs_on_templated_text_flag_only_the_copy():
    items = [item(f"r{i:03d}", i) for i in range(40)]
    copy = item("r999", 7, templated(7).replace("placed last week", "placed last week ok"))
    # cap 4: the template-shared buckets are oversized and split by content values
    cfg = NearDupConfig(max_bucket=4)
    with BeamTestPipeline(options=options()) as p:
        flags = p | beam.Create([*items, copy]) | NearDupPairs(cfg)
        assert_that(flags | beam.Distinct(), equal_to([("r999", ("near_duplicate", "r007"))]))


def _second(pair):
    return pair[1]


def test_near_dup_pairs_make_their_items_with_item_of():
    items = [item(f"r{i:03d}", i) for i in range(40)]
    copy = item("r999", 7, templated(7).replace("placed last week", "placed last week ok"))
    with BeamTestPipeline(options=options()) as p:
        wrapped = p | beam.Create([(it.id, it) for it in [*items, copy]])
        flags = wrapped | NearDupPairs(NearDupConfig(max_bucket=4), item_of=_second)
        assert_that(flags | beam.Distinct(), equal_to([("r999", ("near_duplicate", "r007"))]))


def test_the_splits_band_entries_reuse_dedups_signature():
    from trajforge.pipelines.transforms.dedup import near_band_entries, text_signature
    from trajforge.verifiers.dedup import minhash_signature

    cfg = NearDupConfig()
    text_signature.cache_clear()
    dedup = list(near_band_entries(item("r001", 1), cfg))
    split = list(near_band_entries(item("rec-1", 1), cfg))  # the record's id, the same text
    assert text_signature.cache_info().hits == 1
    sig = minhash_signature(item("r001", 1).text, num_perm=cfg.num_perm)
    assert [e[1][1] for e in dedup] == [("r001", sig)] * cfg.bands
    assert [e[1][1][0] for e in split] == ["rec-1"] * cfg.bands
    assert [e[0] for e in dedup] == [e[0] for e in split]


def test_semantic_pairs_need_close_vectors_and_the_same_content():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((12, 32)).astype(np.float32)
    key = {i: ContentKey(("cancel",), frozenset({f"v{i}", f"w{i}"})) for i in range(12)}
    embedded = [(f"e{i:02d}", base[i], key[i]) for i in range(12)]
    twin = base[3] + 0.01 * rng.standard_normal(32).astype(np.float32)
    embedded.append(("e90", twin, key[3]))  # close and same content: a duplicate
    embedded.append(("e91", base[5].copy(), key[6]))  # identical vector, other content: kept
    with BeamTestPipeline(options=options()) as p:
        flags = (
            p
            | beam.Create(embedded)
            | SemanticPairs(SemanticDupConfig(threshold=0.97, max_bucket=4))
            | beam.Map(lambda f: (f[0], f[1][0], f[1][1]))
            | beam.Distinct()
        )
        assert_that(flags, equal_to([("e90", "semantic_duplicate", "e03")]))


def test_coverage_combine_matches_the_in_memory_report(trajectories):  # noqa: F811
    with BeamTestPipeline(options=options()) as p:
        tally = p | beam.Create(trajectories) | beam.CombineGlobally(CoverageCombineFn())
        expected = diversity_report(trajectories).coverage

        def same_coverage(tallies):
            from collections import Counter

            from trajforge.verifiers.diversity import coverage_from_tally

            (t,) = tallies
            assert t.n == len(trajectories)
            got = coverage_from_tally(Counter({(d, v): n for d, v, n in t.uses}))
            assert got == expected

        assert_that(tally, same_coverage)


def test_diversity_transform_writes_coverage_and_counts(trajectories, tmp_path):  # noqa: F811
    with BeamTestPipeline(options=options()) as p:
        _ = (
            p
            | beam.Create(trajectories)
            | Diversity(DiversityConfig(sample_size=2), False, ("retail",), str(tmp_path))
        )
    out = json.loads((tmp_path / io.DIVERSITY_FILE).read_text())
    assert out["n"] == len(trajectories) and out["vendi"] is None
    dims = {d["dimension"]: d for d in out["coverage"]}
    assert sum(dims["complexity"]["counts"].values()) == len(trajectories)
    assert dims["task_type"]["total"] > 0 and "prior_shortcut_rate" in out


def test_diversity_sample_is_bounded_and_hash_ordered():
    from trajforge.verifiers.buckets import sample_rank

    entries = [(sample_rank(f"t{i}"), f"t{i}") for i in range(300)]
    expected = sorted(entries)[:25]
    with BeamTestPipeline(options=options()) as p:
        sample = p | beam.Create(entries) | beam.combiners.Top.Smallest(25)
        assert_that(sample, equal_to([expected]))


def rejection(i: int, stage: str, reason: str) -> Rejection:
    return Rejection(
        record_id=f"r{i:04d}", stage=stage, reason=reason, detail="d", payload_json="x" * 200
    )


def test_rejected_records_are_sharded_by_size_with_a_summary(tmp_path):
    records = [rejection(i, "dedup", "near_duplicate") for i in range(30)]
    records += [rejection(100 + i, "outcome", "outcome_failed") for i in range(10)]
    total = sum(len(r.to_json()) + 1 for r in records)
    shard_bytes = -(-total // 5)  # 5 shards
    with BeamTestPipeline(options=options()) as p:
        _ = (
            p
            | beam.Create(records)
            | WriteShardedJsonl(str(tmp_path), io.REJECTED_DIR, shard_bytes=shard_bytes)
        )
    files = sorted((tmp_path / io.REJECTED_DIR).glob("*.jsonl"))
    n = num_shards(total, shard_bytes)
    assert n == 5 and [f.name for f in files] == [
        f"rejected-{i:05d}-of-00005.jsonl" for i in range(5)
    ]
    for f in files:  # lines sorted, so a rerun writes identical files
        lines = f.read_text().splitlines()
        key = [(json.loads(s)["stage"], json.loads(s)["reason"], s) for s in lines]
        assert key == sorted(key)
    summary = json.loads((tmp_path / io.REJECTED_DIR / io.JSONL_SUMMARY_FILE).read_text())
    assert sum(rows for _, rows in summary["shards"]) == 40
    assert io.jsonl_counts(str(tmp_path), io.REJECTED_DIR) == {
        ("dedup", "near_duplicate"): 30,
        ("outcome", "outcome_failed"): 10,
    }
    assert len(list(io.jsonl_records(str(tmp_path), io.REJECTED_DIR))) == 40


def test_no_rejected_records_give_no_shard_and_an_empty_summary(tmp_path):
    with BeamTestPipeline(options=options()) as p:
        _ = (
            p
            | beam.Create([]).with_output_types(Rejection)
            | WriteShardedJsonl(str(tmp_path), io.REJECTED_DIR)
        )
    assert not list((tmp_path / io.REJECTED_DIR).glob("*.jsonl"))
    summary = (tmp_path / io.REJECTED_DIR / io.JSONL_SUMMARY_FILE).read_text()
    assert summary == '{"counts": [], "shards": []}\n'


def test_split_inputs_gather_keys_by_id_and_pairs_sorted_and_distinct_across_merges():
    from trajforge.pipelines.splits import SplitKeys
    from trajforge.pipelines.transforms.outputs import GatherSplitInputs

    fn = GatherSplitInputs()
    b, a = SplitKeys(id="b", keys=("task:1",)), SplitKeys(id="a", keys=("task:2",))
    first = fn.create_accumulator()
    for value in [b, ("b", ("near_duplicate", "a")), ("d", ("near_duplicate", "c"))]:
        first = fn.add_input(first, value)
    second = fn.add_input(fn.create_accumulator(), ("b", ("near_duplicate", "a")))
    second = fn.add_input(second, a)
    merged = fn.merge_accumulators([first, second, fn.create_accumulator()])
    assert fn.extract_output(merged) == ([a, b], [("a", "b"), ("c", "d")])
    assert fn.extract_output(fn.create_accumulator()) == ([], [])
