"""`trajforge publish`: push a finished run to a Hugging Face dataset repo in one commit.

Uploaded: the card (README.md, whose YAML names every config's files), every Parquet shard the
card's configs point at, and manifest.json (the recipe). Not uploaded: rejected/, dead_letter/,
the HTML report, progress and cache files. The token comes from the environment (`HF_TOKEN`) only and is
passed straight to the client: never printed, never written.
"""

from __future__ import annotations

import os

from huggingface_hub import CommitOperationAdd, HfApi
from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

from trajforge.pipelines import io
from trajforge.pipelines.finished.card import outputs_on_disk, with_repo_id

TOKEN_ENV = "HF_TOKEN"


class PublishError(RuntimeError):
    """The run cannot be published as asked; the message says what to do."""


def files_to_upload(run_dir: str) -> list[str]:
    """Paths relative to the run directory, in upload order (card first)."""
    if not io.exists(io.join(run_dir, io.SUCCESS_MARKER)):
        raise PublishError(
            f"{run_dir} is not a finished run (no {io.SUCCESS_MARKER}); build it first"
        )
    shards = sorted(
        f for by_split in outputs_on_disk(run_dir).values() for fs in by_split.values() for f in fs
    )
    return ["README.md", "manifest.json", *shards]


def commit_operations(run_dir: str, repo_id: str | None = None) -> list[CommitOperationAdd]:
    """One CommitOperationAdd per file, path in repo = path in the run directory; with
    `repo_id`, the card's usage snippet loads that repo instead of the placeholder."""
    ops = []
    for f in files_to_upload(run_dir):
        source: str | bytes = os.path.join(run_dir, f)
        if f == "README.md" and repo_id is not None:
            source = with_repo_id(io.read_text(source), repo_id).encode("utf-8")
        ops.append(CommitOperationAdd(path_in_repo=f, path_or_fileobj=source))
    return ops


def publish(run_dir: str, repo_id: str, private: bool, api: HfApi | None = None) -> str:
    """Create the dataset repo if needed and push every file in one commit; returns its URL."""
    if "://" in run_dir:
        raise PublishError("publish reads a local run directory; copy the run locally first")
    token = os.environ.get(TOKEN_ENV)
    if not token:
        raise PublishError(f"set {TOKEN_ENV} in the environment to a Hugging Face write token")
    api = api or HfApi(token=token)
    operations = commit_operations(run_dir, repo_id)
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        info = api.create_commit(
            repo_id,
            operations,
            commit_message=f"trajforge: publish {os.path.basename(run_dir.rstrip('/'))}",
            repo_type="dataset",
        )
    except Exception as err:  # noqa: BLE001 - every Hub failure becomes one line with its fix
        raise PublishError(hub_failure(err, repo_id)) from err
    return info.commit_url


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0][:200] if text else type(err).__name__


def hub_failure(err: BaseException, repo_id: str) -> str:
    """One line: what went wrong talking to the Hub and what to do (no traceback: the client's
    exceptions ran to 72 lines for a machine without a network)."""
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    if isinstance(err, OfflineModeIsEnabled):
        return "the Hub client is in offline mode (HF_HUB_OFFLINE is set); unset it to publish"
    if isinstance(err, HfHubHTTPError):
        status = getattr(getattr(err, "response", None), "status_code", None)
        if status in (401, 403):
            return (
                f"the Hub refused the token for datasets/{repo_id} (HTTP {status}); set "
                f"{TOKEN_ENV} to a token with write access to that namespace"
            )
        return f"the Hub answered HTTP {status} for datasets/{repo_id}: {_first_line(err)}"
    name = f"{type(err).__module__}.{type(err).__name__}"
    if isinstance(err, OSError | TimeoutError) or any(
        word in name for word in ("Connect", "Timeout", "Network", "Proxy", "SSL")
    ):
        return (
            f"cannot reach the Hugging Face Hub at {endpoint} ({type(err).__name__}: "
            f"{_first_line(err)}); check the network or HF_ENDPOINT, then rerun publish"
        )
    return f"publishing to datasets/{repo_id} failed ({type(err).__name__}: {_first_line(err)})"
