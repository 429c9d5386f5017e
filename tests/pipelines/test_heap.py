"""The shard writer hands freed heap pages back after each shard (issue 30, `pipelines/heap.py`);
off glibc the call is a no-op."""

from __future__ import annotations

import pytest

from trajforge.pipelines import allocators, heap, packed_rows, spill
from trajforge.pipelines.transforms import outputs


def sharegpt_row(i: int) -> dict:
    turns = [{"from": "human", "value": f"hi {i}"}, {"from": "gpt", "value": "hello"}]
    return {"id": f"r{i}", "task_id": "t", "domain": "toy", "system": "s", "tools": "[]",
            "conversations": turns}  # fmt: skip


@pytest.mark.skipif(allocators.glibc() is None, reason="glibc only")
def test_trims_on_glibc():
    assert heap.release_free_heap() is True


def test_no_op_off_linux(off_linux):
    assert heap.release_free_heap() is False


def test_the_writer_releases_after_each_shard(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(heap, "release_free_heap", lambda: calls.append(1) or True)
    for shard in range(2):
        refs = [
            spill.write(
                str(tmp_path),
                spill.folder_of(""),
                f"r{shard * 10 + i}",
                [packed_rows.pack([sharegpt_row(shard * 10 + i)])],
            )[0]
            for i in range(3)
        ]
        outputs._write((("sharegpt", "train", shard, 2), refs), str(tmp_path), "")
        assert len(calls) >= 2 * (shard + 1)  # before the shard (and its caches) and after
    assert len(list(tmp_path.glob("views/sharegpt/train-*.parquet"))) == 2


def test_arrows_pool_is_released_too(monkeypatch):
    """Arrow keeps freed tables' pages (mimalloc); the writer hands them back with the heap's."""
    released = []

    class Pool:
        def release_unused(self):
            released.append(1)

    monkeypatch.setattr(heap.pa, "default_memory_pool", Pool)
    heap.release_free_heap()
    assert released == [1]


def test_a_shard_kept_whole_is_written_after_a_release(tmp_path, monkeypatch):
    """What converting a shard freed (Arrow's builders, kept by mimalloc) goes back before the
    Parquet writer allocates its own buffers (issue 30: 166 -> 127 MB for a 742-row shard)."""
    from trajforge.pipelines import shards

    events = []
    monkeypatch.setattr(heap, "release_free_heap", lambda: events.append("release") or True)
    write_table = shards.pq.write_table
    monkeypatch.setattr(
        shards.pq, "write_table", lambda *a, **k: events.append("write") or write_table(*a, **k)
    )
    rows = [sharegpt_row(i) for i in range(3)]
    shards.write_shard(str(tmp_path / "s.parquet"), rows, shards.features_of("sharegpt"))
    assert events[-2:] == ["release", "write"]
