"""The run directory's safety rules: never mix runs, never delete what trajforge did not write.

A build's ledger `.trajforge-run` (`ownership.py`) records every file and folder the run
creates, by the writer, before it is created. Only a folder whose ledger has a valid header is
a trajforge run (an empty or damaged `.trajforge-run` is not):
- `--resume` continues a run built with the same config (the response cache makes finished
  calls free), after deleting its recorded partial outputs and progress files;
- `--overwrite` deletes what the run recorded and nothing else; the response cache under
  `cache/` is kept unless `--clear-cache` (a rerun of the same config then pays for no call
  twice);
- any other non-empty directory is refused for both: a mistyped `--output ~/data` must never
  be erased or written into. So is a run another live build is writing to, a run whose output
  names (`data/`, `README.md`, ...) now hold something the run did not write (a user's file, a
  symlink), and a run made by an older trajforge that did not record what it wrote.
Every refusal happens before anything is deleted.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from trajforge.pipelines import io, ownership
from trajforge.pipelines.progress import PROGRESS_DIR, clear_progress
from trajforge.pipelines.resources import forget_process_clients

RUN_MARKER = ownership.LEDGER
CACHE_DIR = "cache"
#: Shards are written here and renamed to `data/` and `views/` at the end of the build, so no
#: reader (and no `load_dataset`) ever sees a split that is still being written. Hidden: the
#: Hub's data-file resolution skips dot-folders.
STAGING_DIR = ".trajforge-partial"
#: What `--resume` clears: the partial outputs of the interrupted run (cache and config stay).
PARTIAL_OUTPUTS = (
    io.DATA_DIR,
    io.VIEWS_DIR,
    STAGING_DIR,
    io.REJECTED_DIR,
    io.DEAD_LETTER_DIR,
    io.DIVERSITY_FILE,
    io.DIFFICULTY_FILE,
    io.DIFFICULTY_DIR,
    io.SPLITS_FILE,
    io.REPORT_FILE,
    io.SUCCESS_MARKER,
    "manifest.json",
    "README.md",
    PROGRESS_DIR,
    ownership.REMOTE_LEDGER_DIR,
)
#: Names the build writes whole (renamed into place): anything there the run did not record
#: would be replaced, so it is refused up front.
RESERVED = (
    io.DATA_DIR,
    io.VIEWS_DIR,
    STAGING_DIR,
    "config.json",
    "manifest.json",
    "README.md",
    io.REPORT_FILE,
    io.SUCCESS_MARKER,
    io.SPLITS_FILE,
    io.DIVERSITY_FILE,
    io.DIFFICULTY_FILE,
)


class RunDirError(Exception):
    """The output directory cannot be used as asked; the message says why and what to do."""


#: Folders the build writes into (beside the reserved names): a symlink there would send
#: the run's files into someone else's folder.
WRITTEN_INTO = (io.REJECTED_DIR, io.DEAD_LETTER_DIR, io.DIFFICULTY_DIR, PROGRESS_DIR, CACHE_DIR)


def _foreign(output: str, owned: set[str], deleting: set[str]) -> list[str]:
    """Paths under the reserved names that the run did not record (or that stay after the
    deletion), and links where the build writes: it would have to replace them or write
    through them, so it must not start."""
    if "://" in output:
        return []
    found = [n for n in WRITTEN_INTO if os.path.islink(os.path.join(output, n))]
    for name in RESERVED:
        path = os.path.join(output, name)
        if os.path.islink(path):
            found.append(name)
        elif os.path.isfile(path):
            if name not in owned:
                found.append(name)
        elif os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                for entry in [*dirs, *files]:
                    rel = os.path.relpath(os.path.join(root, entry), output).replace(os.sep, "/")
                    if rel not in owned or os.path.islink(os.path.join(root, entry)):
                        found.append(rel)
            if name in (io.DATA_DIR, io.VIEWS_DIR, STAGING_DIR) and name not in deleting:
                found.append(name)  # ours but kept: the build renames its own over it
    return sorted(found)


def _refuse_foreign(output: str, owned: set[str], deleting: set[str], flag: str) -> None:
    foreign = _foreign(output, owned, deleting)
    if foreign:
        shown = ", ".join(foreign[:3]) + (
            f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        )
        raise RunDirError(
            f"{flag}: {output} holds {shown}, which this run did not write, where the build "
            "writes its outputs; move it elsewhere (nothing was changed)"
        )


def _require_run(output: str) -> dict:
    pid = ownership.holder(output)
    if pid is not None:
        raise RunDirError(
            f"another build (pid {pid}) is writing to {output}; wait for it to end or use "
            "another --output (nothing was changed)"
        )
    head = ownership.header(output)
    if head is not None:
        return head
    if ownership.legacy_marker(output):
        raise RunDirError(
            f"{output} was built by an older trajforge that did not record which files it "
            "wrote, so nothing in it can be deleted safely; use a new --output, or delete it "
            "yourself"
        )
    raise RunDirError(
        f"--output {output} is not empty and is not a trajforge run directory (no valid "
        f"{RUN_MARKER}); nothing was changed. Use a new or empty --output"
    )


def _nonempty(output: str) -> bool:
    """Non-empty, not counting a stale lock a killed build left in an otherwise new folder."""
    if "://" in output or not os.path.isdir(output):
        return io.is_nonempty_dir(output)
    names = set(os.listdir(output))
    if names == {ownership.LOCK} and ownership.holder(output) is None:
        return False
    return bool(names)


def prepare_run_dir(
    output: str, config_hash: str, resume: bool, overwrite: bool, clear_cache: bool = False
) -> None:
    """Make `output` ready for a build, or raise RunDirError (nothing is deleted then).
    The caller releases the folder with `finish_run` when the build ends."""
    if "://" not in output and os.path.exists(output) and not os.path.isdir(output):
        raise RunDirError(
            f"--output {output} is a file; name a directory (new, or a trajforge run)"
        )
    keep: Iterable[str] = ()
    if _nonempty(output):
        head = _require_run(output)
        if not (overwrite or resume):
            raise RunDirError(
                f"output directory {output} exists and is not empty; pass --resume to continue "
                "an interrupted build (finished LLM calls are cached) or --overwrite to replace it"
            )
        if resume and head.get("config_hash") != config_hash:
            raise RunDirError(
                f"--resume: {output} was built with a different config; "
                "use a new --output or --overwrite"
            )
        owned = ownership.recorded(output)
        if overwrite:
            selected = (lambda rel: True) if clear_cache else (lambda rel: not _in_cache(rel))
        else:
            under_partial = ownership.under(*PARTIAL_OUTPUTS)

            def partial(rel: str) -> bool:  # and a killed writer's temporary files
                return under_partial(rel) or ownership.is_temporary(rel)

            selected = (lambda rel: partial(rel) or _in_cache(rel)) if clear_cache else partial
        deleting = {p for p in owned if selected(p)}
        _refuse_foreign(output, owned, deleting, "--overwrite" if overwrite else "--resume")
        try:
            ownership.acquire(output)
        except ownership.OwnershipError as err:
            raise RunDirError(str(err)) from err
        keep = ownership.delete_recorded(output, selected)
        if clear_cache:
            forget_process_clients(output)
    else:
        try:
            io.ensure_dir(output)
            ownership.acquire(output)
        except OSError as err:
            raise RunDirError(f"--output {output} cannot be created ({err.strerror})") from err
        except ownership.OwnershipError as err:
            raise RunDirError(str(err)) from err
    ownership.start(output, config_hash, keep)
    clear_progress(output)  # this process's tallies of an earlier build into the same folder


def _in_cache(rel: str) -> bool:
    return rel.split("/", 1)[0] == CACHE_DIR


def finish_run(output: str) -> None:
    """At the end of a build (failed or not): drop the ledger's paths that no longer exist,
    then let the next build into the folder."""
    try:
        ownership.compact(output)
    finally:
        ownership.release(output)
