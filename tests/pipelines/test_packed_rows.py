"""The shard GroupByKey carries one packed blob per record and output (issue 30): the same rows
come out, and a record's step_prefix rows cost about one conversation, not one per prefix."""

from __future__ import annotations

import glob

import pyarrow.parquet as pq
from apache_beam.coders.typecoders import registry

from trajforge.pipelines import packed_rows, shards, spill
from trajforge.pipelines.transforms.outputs import _keyed_rows
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
    """Every output of every record in shard 0 of 1 of `train`."""

    cluster_of = {}

    def shard_of(self, output, record_id):
        return "train", 0, 1

    def __getattr__(self, name):
        raise AttributeError(name)


def test_keyed_values_are_far_smaller_than_the_rows_coded_one_by_one(built_run, tmp_path):
    """The spilled blobs are a third of the rows coded one by one; the GroupByKey's values
    (references to them) are ~100 bytes each."""
    coder = registry.get_coder(object)
    outputs = (shards.CANONICAL, "messages", "step_prefix", "steps", "sharegpt")
    packed = coded = 0
    run, folder = str(tmp_path), spill.folder_of("")
    for record in records(built_run):
        plan = _Plan()
        plan.cluster_of = {record.id: "c"}
        keyed = _keyed_rows(packed_rows.pack_record(record), outputs, plan, run, folder)
        assert [key[0] for key, _ in keyed] == list(outputs)  # one value per output
        assert all(len(coder.encode(ref)) < 120 for _, ref in keyed)
        packed += sum(len(spill.read(run, folder, ref)[1]) for _, ref in keyed)
        assigned = record.model_copy(update={"split": "train", "cluster_id": "c"})
        coded += sum(len(coder.encode(r)) for o in outputs for r in shards.rows_of(o, assigned))
    assert packed < coded / 3, (packed, coded)


def test_records_wait_for_the_plan_packed(built_run):
    """The records the keying stage reads come back equal, at under a third of Beam's coding."""
    coder = registry.get_coder(object)
    for record in records(built_run):
        packed = packed_rows.pack_record(record)
        assert packed_rows.unpack_record(packed) == record
        assert len(packed[1]) < len(coder.encode(record)) / 3
