"""Files of a run directory: local paths through the standard library, remote ones (gs://,
s3://, ...) through Beam's `FileSystems`.

Why not Beam's `FileSystems` for both: the finished-run tools (`trajforge show`, `report`,
`publish`, `verify`, `calibrate`, the card) read a run on this machine and never run a
pipeline, and importing Beam costs them ~0.7 s of CPU at start-up (Beam 2.77, 2 cores:
`python -c "import apache_beam.io.filesystems"` 0.81 s user against 0.12 s for
`import pyarrow.parquet` alone). So Beam is imported only when a remote path is used.

Local behaviour is Beam's `LocalFileSystem`'s for what the project uses: `create` makes the
parent folders, `delete` removes a file or a whole folder, `match` takes `*` (within one
folder, dotfiles included) and `**` (across folders). Beam's automatic (de)compression by
file extension is not reproduced: no run file has a compressed extension.
"""

from __future__ import annotations

import os
import re
import shutil
from typing import IO, Any


def is_remote(path: str) -> bool:
    return "://" in path


def _beam() -> Any:
    # Remote paths only: Beam's import is the ~0.7 s this module exists to avoid (docstring).
    from apache_beam.io.filesystems import FileSystems

    return FileSystems


def join(base: str, *parts: str) -> str:
    return _beam().join(base, *parts) if is_remote(base) else os.path.join(base, *parts)


def exists(path: str) -> bool:
    return _beam().exists(path) if is_remote(path) else os.path.exists(path)


def open_read(path: str) -> IO[bytes]:
    return _beam().open(path) if is_remote(path) else open(path, "rb")  # noqa: SIM115


def create(path: str) -> IO[bytes]:
    """A new binary file for writing; its parent folders are made (as Beam's local one does)."""
    if is_remote(path):
        return _beam().create(path)
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    return open(path, "wb")  # noqa: SIM115 - the caller closes it (a `with` block)


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    """`**` -> anything, `*` -> anything but a slash, `?` -> one character (Beam's syntax,
    without `[...]` classes: no run pattern uses one)."""
    pieces = (
        re.escape(p).replace(r"\*", r"[^/\\]*").replace(r"\?", ".") for p in pattern.split("**")
    )
    return re.compile("(?ms)" + ".*".join(pieces) + r"\Z")


def match(pattern: str) -> list[str]:
    """The files matching `pattern`, sorted."""
    if is_remote(pattern):
        return sorted(m.path for m in _beam().match([pattern])[0].metadata_list)
    prefix = re.match(r"^[^[*?]*", pattern).group(0)
    if prefix == pattern:
        return [pattern] if os.path.exists(pattern) else []
    regex, top = _pattern_regex(pattern), os.path.dirname(prefix)
    found = (os.path.join(d, name) for d, _, names in os.walk(top) if top for name in names)
    return sorted(p for p in found if regex.match(p))


def delete(paths: list[str]) -> None:
    """Delete files or whole folders (each must exist)."""
    if paths and is_remote(paths[0]):
        _beam().delete(paths)
        return
    for path in paths:
        if os.path.isdir(path):
            shutil.rmtree(path)
        else:
            os.remove(path)


def rename(sources: list[str], destinations: list[str]) -> None:
    if sources and is_remote(sources[0]):
        _beam().rename(sources, destinations)
        return
    for src, dst in zip(sources, destinations, strict=True):
        os.rename(src, dst)


def has_dirs(path: str) -> bool:
    """Whether the path's file system has real folders (object stores do not)."""
    return _beam().get_filesystem(path).has_dirs() if is_remote(path) else True
