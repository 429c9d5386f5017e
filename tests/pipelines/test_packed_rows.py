"""The shard GroupByKey carries one packed blob per record and output (issue 30): the same rows
come out, and a record's step_prefix rows cost about one conversation, not one per prefix."""

from __future__ import annotations

import glob

import pyarrow.parquet as pq
import pytest
from apache_beam.coders.typecoders import registry

from trajforge.pipelines import packed_rows, shards, spill
from trajforge.pipelines.transforms.outputs import (
    SPILLED,
    _keyed_refs,
    _write,
    spill_rows,
    split_keys,
)
from trajforge.schemas import DatasetRecord


def records(run) -> list[DatasetRecord]:
    files = sorted(glob.glob(f"{run}/data/*.parquet"))
    return [DatasetRecord.model_validate(r) for f in files for r in pq.read_table(f).to_pylist()]


def test_unpack_gives_the_rows_back_with_prefixes_shared(built_run):
    record = max(records(built_run), key=lambda r: len(r.messages_json))
    rows = shards.rows_of("step_prefix", record)
    assert len(rows) >= 2
    back = packed_rows.unpack(packed_rows.pack(rows))
    assert back == rows
    assert back[-1]["prompt"][0] is back[0]["prompt"][0]  # one message object, as built


class _Plan:
    """Every output of every record in shard 0 of 1 of `split`, in cluster `c`."""

    def __init__(self, ids, split="train"):
        self.split = split
        self.cluster_of = {i: "c" for i in ids}

    def shard_of(self, output, record_id):
        return self.split, 0, 1


def _spilled(record, outputs, run, folder):
    """`spill_rows`' two outputs for one record: its SplitKeys and its spilled references."""
    keys, tagged = list(spill_rows(record, outputs, run, folder))
    assert tagged.tag == SPILLED
    return keys, tagged.value


def test_keyed_values_are_far_smaller_than_the_rows_coded_one_by_one(built_run, tmp_path):
    """The spilled blobs are a third of the rows coded one by one; the GroupByKey's values
    (references to them) are ~100 bytes each, and so is what waits for the plan."""
    coder = registry.get_coder(object)
    outputs = (shards.CANONICAL, "messages", "step_prefix", "steps", "sharegpt")
    packed = coded = 0
    run, folder = str(tmp_path), spill.folder_of("")
    for record in records(built_run):
        keys, refs = _spilled(record, outputs, run, folder)
        assert keys == split_keys(record, outputs)
        assert len(coder.encode(refs)) < 120 * len(outputs)
        keyed = _keyed_refs(refs, outputs, _Plan([record.id]))
        assert [key[0] for key, _ in keyed] == list(outputs)  # one value per output
        assert all(len(coder.encode(ref)) < 120 for _, ref in keyed)
        packed += sum(len(spill.read(run, folder, ref)[1]) for _, ref in keyed)
        coded += sum(len(coder.encode(r)) for o in outputs for r in shards.rows_of(o, record))
    assert packed < coded / 3, (packed, coded)


def test_canonical_rows_written_with_the_split_and_cluster_of_the_plan(built_run, tmp_path):
    """Rows are spilled before the plan (with the record's placeholder split): the writer gives
    the canonical rows the plan's split and cluster, equal to the rows of the record with both
    set (what the keying stage wrote when it built the rows after the plan)."""
    run, folder = str(tmp_path), spill.folder_of("")
    placeholder = {"split": "train", "cluster_id": ""}  # as the records reach the writer's input
    chosen = [r.model_copy(update=placeholder) for r in records(built_run)[:3]]
    refs = [_spilled(r, (shards.CANONICAL,), run, folder)[1][0] for r in chosen]
    key = (shards.CANONICAL, "golden", 0, 1)
    written = _write((key, refs), run, "", _Plan([r.id for r in chosen], split="golden"))
    got = {r["id"]: r for r in pq.read_table(written).to_pylist()}
    for record in chosen:
        assigned = record.model_copy(update={"split": "golden", "cluster_id": "c"})
        assert got[record.id] == shards.rows_of(shards.CANONICAL, assigned)[0]
    with pytest.raises(ValueError, match="split plan"):
        _write((key, refs), run, "")


def test_spill_rows_gives_the_near_duplicate_bands_of_the_record(built_run, tmp_path):
    """With the split's near-duplicate config, `spill_rows` also yields the record's band
    entries (tagged `NEAR_BANDS`), the ones the split's bucket transform made from the record
    in a stage of its own before (issue 30); without it, none."""
    from trajforge.pipelines.config import NearDupConfig
    from trajforge.pipelines.transforms.dedup import near_band_entries
    from trajforge.pipelines.transforms.outputs import NEAR_BANDS, _near_item

    near, outputs = NearDupConfig(), (shards.CANONICAL, "messages")
    run, folder = str(tmp_path), spill.folder_of("")
    for record in records(built_run)[:3]:
        out = list(spill_rows(record, outputs, run, folder, near))
        assert [getattr(o, "tag", None) for o in out[:2]] == [None, SPILLED]
        bands = [o.value for o in out[2:] if o.tag == NEAR_BANDS]
        assert len(bands) == len(out) - 2 > 0
        assert bands == list(near_band_entries(_near_item(record), near))
        assert len(list(spill_rows(record, outputs, run, folder))) == 2
