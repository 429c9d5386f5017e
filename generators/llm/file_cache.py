"""The response cache as one small file per response on any Beam filesystem (gs://, a local or
mounted folder), so every worker of a remote build and every later `--resume` share it.

A SQLite file (generators/llm/cache.py) only works where all writers share one local disk. A
remote run directory cannot hold one, and a cache on each worker's own disk made `--resume`
after a killed Dataflow job pay for every call again. Here a response lives at
`ROOT/<first two hex digits of its key>/<key>.json` (256 shards keep listings short), written
atomically: an object store (`gs://`) makes an object visible only once its upload completed,
and on a filesystem with folders the file is written under a temporary name and renamed, so a
reader never sees half an answer. Two workers writing the same key write the same bytes.
"""

from __future__ import annotations

import uuid
from typing import Protocol

from apache_beam.io.filesystem import BeamIOError
from apache_beam.io.filesystems import FileSystems

from trajforge.schemas import ChatResponse


class FileWriter(Protocol):
    """Writes `data` at `rel` (a path under the cache's root) atomically. A build passes one
    that also records the file as the run's own (pipelines/resources.OwnedWriter)."""

    def __call__(self, rel: str, data: bytes) -> None: ...


class FileResponseCache:
    """Key -> ChatResponse under `root`, through Beam's FileSystems. Picklable (a path and a
    writer)."""

    def __init__(self, root: str, write: FileWriter | None = None):
        self.root = root.rstrip("/")
        self.write = write or self._write_atomically

    @staticmethod
    def rel_for(key: str) -> str:
        return f"{key[:2]}/{key}.json"

    def path_for(self, key: str) -> str:
        return FileSystems.join(self.root, *self.rel_for(key).split("/"))

    def get(self, key: str) -> ChatResponse | None:
        try:
            with FileSystems.open(self.path_for(key)) as handle:
                data = handle.read()
        except (OSError, BeamIOError):  # absent (a miss); a torn file cannot exist
            return None
        return ChatResponse.model_validate_json(data)

    def put(self, key: str, response: ChatResponse) -> None:
        self.write(self.rel_for(key), response.to_json().encode())

    def __len__(self) -> int:
        pattern = FileSystems.join(self.root, "*", "*.json")
        found = FileSystems.match([pattern])[0].metadata_list
        return sum(1 for meta in found if not meta.path.rsplit("/", 1)[-1].startswith("."))

    def _write_atomically(self, rel: str, data: bytes) -> None:
        path = FileSystems.join(self.root, *rel.split("/"))
        if not FileSystems.get_filesystem(path).has_dirs():  # object store: atomic upload
            self._write(path, data)
            return
        parent, _, name = path.rpartition("/")
        staging = f"{parent}/.{name}.tmp-{uuid.uuid4().hex[:12]}"
        self._write(staging, data)
        FileSystems.rename([staging], [path])

    @staticmethod
    def _write(path: str, data: bytes) -> None:
        with FileSystems.create(path) as handle:
            handle.write(data)
