"""Checks that run before a build starts, so a user error costs one line, not a traceback after
task synthesis and a half-written run directory.

- flags: arguments our parser did not take go to Beam only when Beam knows them; a near miss of
  one of ours (`--ovewrite`) or of Beam's gets "did you mean";
- runner: a known Beam runner (or a dotted class path); a remote runner needs a shared
  `--output` (workers would otherwise write to their own disks);
- output: its filesystem must be available (gs:// needs the `dataflow` extra);
- API keys: every openai role's key variable must be set unless its config says the endpoint
  needs none (`needs_api_key: false`) or the key comes from Secret Manager.
"""

from __future__ import annotations

import difflib
import functools
import importlib.util
import os

from trajforge.generators.llm.factory import OpenAIBackendConfig
from trajforge.generators.llm.openai_wire import base_url_problem
from trajforge.pipelines.config import BuildConfig
from trajforge.pipelines.processes import runner_of

LOCAL_RUNNERS = ("FnApiRunner", "DirectRunner", "BundleBasedDirectRunner", "PrismRunner")
REMOTE_RUNNERS = (
    "DataflowRunner",
    "TestDataflowRunner",
    "FlinkRunner",
    "SparkRunner",
    "PortableRunner",
)
KNOWN_RUNNERS = (*LOCAL_RUNNERS, "SwitchingDirectRunner", "TestDirectRunner", *REMOTE_RUNNERS)


class PreflightError(Exception):
    """A problem found before the build started; the message names the flag or field and fix."""


@functools.cache
def beam_flags() -> frozenset[str]:
    """Every option string Beam's own parser accepts (`--runner`, `--project`, ...), read from
    the parser Beam builds for `get_all_options` (its hook hands us that parser)."""
    # Here and below, not at the top: every CLI command imports this module (PreflightError),
    # and Beam's import costs ~0.7 s of CPU that `show`, `report`, `--help` never need.
    from apache_beam.options.pipeline_options import PipelineOptions

    parsers: list = []
    PipelineOptions([]).get_all_options(add_extra_args_fn=parsers.append)
    return frozenset(opt for action in parsers[0]._actions for opt in action.option_strings)


def check_flags(beam_args: list[str], our_flags: list[str]) -> None:
    """Refuse `--flags` that are neither ours nor Beam's, suggesting the closest name."""
    known = beam_flags()
    for arg in beam_args:
        if not arg.startswith("--"):
            continue  # a value of the previous flag
        name = arg.split("=", 1)[0]
        if name in known:
            continue
        ours = difflib.get_close_matches(name, our_flags, n=1, cutoff=0.75)
        theirs = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
        if ours:
            hint = f"did you mean {ours[0]}?"
        elif theirs:
            hint = f"did you mean the Beam option {theirs[0]}?"
        else:
            hint = "see `trajforge build --help` (Beam's own options are passed through)"
        raise PreflightError(f"unknown flag {name}; {hint}")


#: The one remote runner whose workers may share a local `--output`: its job service can run
#: in the launcher (`--job_endpoint=embed`) and its workers in a worker pool on this machine.
SAME_MACHINE_RUNNER = "PortableRunner"


def check_runner(runner: str, output: str, local_workers: bool = False) -> None:
    """`local_workers`: the user says the runner's workers run on this machine (a worker pool
    started here), so they see a local `--output` as the launcher does; only PortableRunner."""
    short = runner.rsplit(".", 1)[-1]
    if "." not in runner and runner not in KNOWN_RUNNERS:
        close = difflib.get_close_matches(runner, KNOWN_RUNNERS, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]}?" if close else f"known: {', '.join(KNOWN_RUNNERS)}"
        raise PreflightError(f"--runner {runner} is not a Beam runner; {hint}")
    if local_workers and short != SAME_MACHINE_RUNNER:
        raise PreflightError(
            f"--local-workers is only for --runner {SAME_MACHINE_RUNNER} with a worker pool on "
            f"this machine, not --runner {runner}; drop --local-workers"
        )
    if short in REMOTE_RUNNERS and "://" not in output and not local_workers:
        raise PreflightError(
            f"--output {output} is a local path but --runner {runner} runs on remote workers "
            "(each would write to its own disk); use a shared path such as gs://bucket/run"
            + (
                ", or add --local-workers when its workers run on this machine"
                if short == SAME_MACHINE_RUNNER
                else ""
            )
        )


def check_output_filesystem(output: str) -> None:
    if "://" not in output:
        return
    from apache_beam.io.filesystems import FileSystems  # (Beam: see beam_flags)

    scheme = output.split("://", 1)[0]
    try:
        FileSystems.get_filesystem(output)
    except ValueError as err:
        raise _no_filesystem(output, scheme) from err
    if scheme == "gs" and not gcs_client_installed():
        raise _no_filesystem(output, scheme)


def gcs_client_installed() -> bool:
    """Whether google-cloud-storage (the `dataflow` extra) can be imported. Why asked apart from
    Beam's filesystem: from Beam 2.78 its GCS filesystem is registered without the client
    (`gcsio` imports it optionally), so `gs://` passed the filesystem check and the build failed
    at its first write."""
    try:
        return importlib.util.find_spec("google.cloud.storage") is not None
    except ModuleNotFoundError:  # no `google` or `google.cloud` package at all
        return False


def _no_filesystem(output: str, scheme: str) -> PreflightError:
    fix = "pip install 'trajforge[dataflow]'" if scheme == "gs" else "install its Beam extra"
    return PreflightError(f"--output {output}: no filesystem for {scheme}:// is installed; {fix}")


def _openai_roles(config: BuildConfig) -> list[tuple[str, OpenAIBackendConfig]]:
    roles = config.roles
    bound = {"agent": roles.agent, "user": roles.user, "judge": roles.judge}
    return [(r, c) for r, c in bound.items() if isinstance(c, OpenAIBackendConfig)]


def check_api_keys(config: BuildConfig) -> None:
    """The key problems a build would only hit on its first LLM call, after task synthesis."""
    for role, cfg in _openai_roles(config):
        if cfg.base_url is None and os.environ.get("OPENAI_BASE_URL"):
            problem = base_url_problem(os.environ["OPENAI_BASE_URL"])
            if problem:
                raise PreflightError(f"roles.{role}: $OPENAI_BASE_URL: {problem}")
        if cfg.api_key_secret or not cfg.needs_api_key or os.environ.get(cfg.api_key_env):
            continue
        raise PreflightError(
            f"roles.{role}: the environment variable {cfg.api_key_env} (api_key_env) is not set; "
            f"export it, or set roles.{role}.needs_api_key: false for a local server that "
            "needs no key"
        )


def preflight(
    config: BuildConfig,
    output: str,
    beam_args: list[str],
    our_flags: list[str],
    local_workers: bool = False,
) -> str:
    """Run every check; return the runner the build will use."""
    check_flags(beam_args, our_flags)
    runner = runner_of(beam_args)
    check_runner(runner, output, local_workers)
    check_output_filesystem(output)
    check_api_keys(config)
    return runner
