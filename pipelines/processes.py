"""How many worker processes a local build runs, decided before it starts (issue 14).

One build process is CPU-bound: the synchronous stages and the event loop that keeps LLM calls
in flight share one GIL. Beam's local runner can run the stages in N worker processes
(`--direct_running_mode=multi_processing --direct_num_workers=N`); this module turns the
config's `runner.local_processes` (`auto` or N) into those flags, or leaves the flags the user
gave alone. Worker processes change only scheduling: seeds come from record ids, the limits
are divided between the processes (`resources.per_process`), so the rows are the same.

`auto` uses several processes only where that pays and costs nothing else:
- the runner is Beam's local FnApiRunner/DirectRunner (Dataflow and others have workers of
  their own);
- every LLM role is an HTTP endpoint (`kind: openai`): an in-process model (`local`, `vllm`)
  would be loaded once per process, multiplying memory (and a GPU would be shared);
- `num_tasks` reaches AUTO_MIN_TASKS (each worker process imports and sets up the stages,
  a few seconds of CPU that a small build does not win back);
- more than one core is available to this process (`os.sched_getaffinity`);
- each process keeps at least MIN_IN_FLIGHT_PER_PROCESS elements in flight.
The decision reads the config and the cores only, never the machine's load: it used the load
average at start, so the same config on the same machine ran with 1 or 2 processes from one
minute to the next (issue 28). On a shared machine, set `runner.local_processes: 1`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, field_validator

if TYPE_CHECKING:
    from trajforge.pipelines.config import BuildConfig

#: Runners that honour `--direct_running_mode` / `--direct_num_workers`.
MULTI_PROCESS_RUNNERS = ("FnApiRunner", "DirectRunner")
#: Measured (benchmarks/README.md, "Fourth round: processes"): each worker process costs ~3 s
#: of CPU to start and ~1.5 ms per task to exchange elements; at 400 tasks that outweighs the
#: second core, at 1,600 it does not.
AUTO_MIN_TASKS = 1000
#: A process with fewer elements in flight leaves the endpoint idle while it computes.
MIN_IN_FLIGHT_PER_PROCESS = 16
MODE_FLAG = "--direct_running_mode"
WORKERS_FLAG = "--direct_num_workers"


class RunnerConfig(BaseModel):
    """How a local build uses this machine. `local_processes`: `auto` (several worker
    processes when that pays, see pipelines/processes.py) or a number N (1 = one process).
    Beam flags given on the command line win over it. It decides scheduling only, so it is
    not part of the config hash."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    local_processes: Literal["auto"] | int = "auto"
    # Response cache: `auto` (SQLite locally, one file per response under gs://) or `files`.
    cache_store: Literal["auto", "files"] = "auto"

    @field_validator("local_processes", mode="before")
    @classmethod
    def _auto_or_count(cls, value: object) -> object:
        if value == "auto" or (type(value) is int and 1 <= value <= 256):
            return value
        raise ValueError(
            f"local_processes must be `auto` or a number of processes from 1 to 256 (e.g. 2); "
            f"got {value!r}"
        )


class ProcessPlan(BaseModel):
    """The decision, with its reason (printed before the build, kept in the manifest)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    processes: int
    source: Literal["flags", "config", "auto"]
    reason: str
    beam_args: tuple[str, ...]  # the Beam options the build runs with

    def line(self) -> str:
        return f"local processes: {self.processes} ({self.source}: {self.reason})"


def given_flags(beam_args: list[str] | tuple[str, ...]) -> bool:
    """Whether the user chose the running mode or worker count on the command line."""
    return any(a.split("=", 1)[0] in (MODE_FLAG, WORKERS_FLAG) for a in beam_args)


def runner_of(beam_args: list[str] | tuple[str, ...]) -> str:
    """The `--runner` the Beam options name (`--runner=X` or `--runner X`); Beam's default,
    the local FnApiRunner, when none. Preflight and the process plan both read it here."""
    for i, arg in enumerate(beam_args):
        if arg.startswith("--runner="):
            return arg.split("=", 1)[1]
        if arg == "--runner" and i + 1 < len(beam_args):
            return beam_args[i + 1]
    return "FnApiRunner"


def processes_of(beam_args: list[str] | tuple[str, ...]) -> int:
    """Worker processes the Beam options ask for (N=0 meaning one per core); 1 unless
    multi_processing (threads share a process)."""
    # Here, not at the top: every CLI command imports this module (preflight's error class),
    # and Beam's import costs ~0.7 s of CPU that `show`, `report`, `--help` never need.
    from apache_beam.options.pipeline_options import PipelineOptions

    opts = PipelineOptions(list(beam_args)).get_all_options()
    if opts.get("direct_running_mode") != "multi_processing":
        return 1
    workers = opts.get("direct_num_workers") or 0
    return max(1, workers if workers > 0 else (os.cpu_count() or 1))


def available_cores() -> int:
    """Cores this process may run on (its affinity mask, which containers and taskset set)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def in_process_roles(config: BuildConfig) -> list[str]:
    """`role (kind)` of every role whose backend is not an HTTP endpoint."""
    roles = config.roles
    bound = {"agent": roles.agent, "user": roles.user or roles.agent}
    bound["judge"] = roles.judge or roles.agent
    return [f"{role} ({cfg.kind})" for role, cfg in bound.items() if cfg.kind != "openai"]


def auto_processes(config: BuildConfig, cores: int) -> tuple[int, str]:
    """`auto`: the number of processes and why (see the module docstring), from the config
    and the `cores` this process may use, nothing else."""
    local = in_process_roles(config)
    if local:
        return 1, f"roles {', '.join(local)} are not HTTP endpoints (one model per process)"
    if config.num_tasks < AUTO_MIN_TASKS:
        return 1, f"num_tasks {config.num_tasks} < {AUTO_MIN_TASKS} (start-up would not pay)"
    if cores < 2:
        return 1, "one core available"
    by_flight = config.concurrency.max_in_flight // MIN_IN_FLIGHT_PER_PROCESS
    processes = max(1, min(cores, by_flight))
    if processes < 2:
        return 1, (
            f"concurrency.max_in_flight {config.concurrency.max_in_flight} < "
            f"{2 * MIN_IN_FLIGHT_PER_PROCESS} (too few in flight to split)"
        )
    limit = "cores" if processes == cores else f"max_in_flight / {MIN_IN_FLIGHT_PER_PROCESS}"
    return processes, (
        f"{cores} cores, {config.num_tasks} tasks >= {AUTO_MIN_TASKS}, all roles over HTTP, "
        f"{config.concurrency.max_in_flight} in flight; bounded by {limit}"
    )


def plan_processes(
    config: BuildConfig,
    beam_args: list[str] | tuple[str, ...],
    cores: int | None = None,
) -> ProcessPlan:
    """The worker processes of this build and the Beam options that run them (`cores`: this
    process's unless given)."""
    args = tuple(beam_args)
    runner = runner_of(args)
    if given_flags(args):
        return ProcessPlan(
            processes=processes_of(args) if runner in MULTI_PROCESS_RUNNERS else 1,
            source="flags",
            reason=f"{MODE_FLAG}/{WORKERS_FLAG} given on the command line",
            beam_args=args,
        )
    if runner not in MULTI_PROCESS_RUNNERS:
        return ProcessPlan(
            processes=1,
            source="config",
            reason=f"runner {runner} is not Beam's local FnApiRunner (it has its own workers)",
            beam_args=args,
        )
    wanted = config.runner.local_processes
    if wanted == "auto":
        cores = cores or available_cores()
        processes, reason = auto_processes(config, cores)
        source: Literal["config", "auto"] = "auto"
    else:
        processes, reason, source = wanted, f"runner.local_processes: {wanted}", "config"
    if processes > 1:
        args = (*args, f"{MODE_FLAG}=multi_processing", f"{WORKERS_FLAG}={processes}")
    return ProcessPlan(processes=processes, source=source, reason=reason, beam_args=args)
