"""The per-response file cache: what a remote build's workers and a later --resume share."""

from __future__ import annotations

import pickle

from trajforge.generators.llm.file_cache import FileResponseCache
from trajforge.pipelines.resources import cache_location
from trajforge.schemas import ChatResponse, Message


def response(text: str) -> ChatResponse:
    return ChatResponse(message=Message(role="assistant", content=text), model="m")


def test_put_get_round_trip_sharded_and_atomic(tmp_path):
    cache = FileResponseCache(str(tmp_path / "cache" / "responses"))
    key = "ab" + "0" * 62
    assert cache.get(key) is None
    cache.put(key, response("hello"))
    assert cache.get(key) == response("hello")
    stored = tmp_path / "cache" / "responses" / "ab" / f"{key}.json"
    assert stored.exists()
    assert [p.name for p in stored.parent.iterdir()] == [stored.name], "a staging file was left"
    assert len(cache) == 1


def test_a_copy_elsewhere_answers_the_same(tmp_path):
    """A worker receives the cache pickled (a path only) and reads what another wrote."""
    cache = FileResponseCache(str(tmp_path / "r"))
    cache.put("cd" + "1" * 62, response("x"))
    worker = pickle.loads(pickle.dumps(cache))
    assert worker.get("cd" + "1" * 62) == response("x")


def test_remote_run_dirs_keep_their_cache_inside_the_run_dir():
    remote = cache_location("gs://bucket/run")
    assert (remote.store, remote.path) == ("files", "gs://bucket/run/cache/responses")
    local = cache_location("/data/run")
    assert (local.store, local.path) == ("sqlite", "/data/run/cache/responses.sqlite")
    forced = cache_location("/data/run", "files")
    assert (forced.store, forced.path) == ("files", "/data/run/cache/responses")


def test_a_builds_response_files_are_recorded_as_the_runs_own(tmp_path):
    """--overwrite / --clear-cache delete only recorded paths: every response file is one."""
    from trajforge.pipelines import ownership

    run = str(tmp_path / "run")
    cache = cache_location(run, "files").open()
    key = "ef" + "2" * 62
    cache.put(key, response("y"))
    assert cache.get(key) == response("y")
    assert f"cache/responses/ef/{key}.json" in ownership.recorded(run)
