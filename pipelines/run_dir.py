"""The run directory's safety rules: never mix runs, never delete what trajforge did not write.

A build marks its directory at start with `.trajforge-run` (JSON: config hash, and at the end
the top-level entries the run wrote). Only a marked directory is a trajforge run:
- `--resume` continues a marked run built with the same config (the response cache makes
  finished calls free), after clearing its partial outputs and its stale progress state;
- `--overwrite` deletes what the marked run wrote (its recorded entries and the known output
  names) and nothing else; the response cache under `cache/` is kept unless `--clear-cache`
  (a rerun of the same config then pays for no call twice);
- any other non-empty directory is refused for both: a mistyped `--output ~/data` must never
  be erased or written into.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable
from typing import Any

from trajforge.pipelines import io
from trajforge.pipelines.progress import PROGRESS_DIR, clear_progress
from trajforge.pipelines.resources import forget_process_clients

RUN_MARKER = ".trajforge-run"
CACHE_DIR = "cache"
#: What `--resume` clears: the partial outputs of the interrupted run (cache and config stay).
PARTIAL_OUTPUTS = (
    io.DATA_DIR,
    io.VIEWS_DIR,
    io.REJECTED_DIR,
    io.DEAD_LETTER_DIR,
    io.DIVERSITY_FILE,
    io.DIFFICULTY_FILE,
    io.DIFFICULTY_DIR,
    io.SPLITS_FILE,
    io.REPORT_FILE,
    io.SUCCESS_MARKER,
    "manifest.json",
)
#: Everything a build writes at the top of its run directory (besides beam-temp-* folders).
OWNED = (
    *PARTIAL_OUTPUTS,
    "config.json",
    "README.md",
    "calibration.json",
    PROGRESS_DIR,
    CACHE_DIR,
)


class RunDirError(Exception):
    """The output directory cannot be used as asked; the message says why and what to do."""


def read_marker(output: str) -> dict[str, Any] | None:
    path = io.join(output, RUN_MARKER)
    if not io.FileSystems.exists(path):
        return None
    try:
        return json.loads(io.read_text(path))
    except (ValueError, UnicodeDecodeError):
        return {}  # marked, but the marker is damaged: still ours


def write_marker(output: str, config_hash: str, entries: Iterable[str] = ()) -> None:
    body = {"config_hash": config_hash, "entries": sorted(set(entries) - {RUN_MARKER})}
    io.write_text(io.join(output, RUN_MARKER), json.dumps(body, sort_keys=True) + "\n")


def top_level_entries(output: str) -> list[str]:
    """Names directly under `output` (local: the folder; remote: first path components)."""
    if "://" not in output:
        return sorted(os.listdir(output)) if os.path.isdir(output) else []
    prefix = output.rstrip("/") + "/"
    return sorted({p[len(prefix) :].split("/", 1)[0] for p in io.matching(prefix + "**")})


def _delete(output: str, name: str) -> None:
    path = io.join(output, name)
    if "://" in output:
        io.delete_tree(path)
    elif os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.remove(path)


def _owned(name: str, recorded: Iterable[str]) -> bool:
    return name in OWNED or name in recorded or name.startswith("beam-temp-")


def _same_config(output: str, config_hash: str, marker: dict[str, Any]) -> bool:
    previous = marker.get("config_hash")
    if previous is None and io.FileSystems.exists(io.join(output, "config.json")):
        from trajforge.pipelines.config import BuildConfig

        old = json.loads(io.read_text(io.join(output, "config.json")))
        previous = BuildConfig.model_validate(old).config_hash()
    return previous is None or previous == config_hash


def prepare_run_dir(
    output: str, config_hash: str, resume: bool, overwrite: bool, clear_cache: bool = False
) -> None:
    """Make `output` ready for a build, or raise RunDirError (nothing is deleted then)."""
    if "://" not in output and os.path.exists(output) and not os.path.isdir(output):
        raise RunDirError(
            f"--output {output} is a file; name a directory (new, or a trajforge run)"
        )
    if io.is_nonempty_dir(output):
        marker = read_marker(output)
        if marker is None:
            raise RunDirError(
                f"--output {output} is not empty and is not a trajforge run directory (no "
                f"{RUN_MARKER}); nothing was changed. Use a new or empty --output"
            )
        if overwrite:
            recorded = marker.get("entries", ())
            for name in top_level_entries(output):
                if name == CACHE_DIR and not clear_cache:
                    continue
                if _owned(name, recorded) and name != RUN_MARKER:
                    _delete(output, name)
            if clear_cache:
                forget_process_clients(output)
        elif resume:
            if not _same_config(output, config_hash, marker):
                raise RunDirError(
                    f"--resume: {output} was built with a different config; "
                    "use a new --output or --overwrite"
                )
            for name in PARTIAL_OUTPUTS:
                _delete(output, name)
            if clear_cache:
                _delete(output, CACHE_DIR)
                forget_process_clients(output)
        else:
            raise RunDirError(
                f"output directory {output} exists and is not empty; pass --resume to continue "
                "an interrupted build (finished LLM calls are cached) or --overwrite to replace it"
            )
    try:
        io.ensure_dir(output)
    except OSError as err:
        raise RunDirError(f"--output {output} cannot be created ({err.strerror})") from err
    clear_progress(output)  # a killed run's tallies would be added to this run's progress
    write_marker(output, config_hash)


def record_entries(output: str, config_hash: str) -> None:
    """At the end of a run (failed or not): remember what it wrote, for a later --overwrite."""
    write_marker(output, config_hash, top_level_entries(output))
