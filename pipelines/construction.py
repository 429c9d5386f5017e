"""How the build's graph is constructed for Beam's in-process runner (issue 30, the fixed cost).

A 1-task build spent ~0.5 s of its ~2.4 s of CPU building the graph. Two parts of that buy
nothing when the pipeline runs in this process, on one worker (FnApiRunner, `in_memory`):

- Beam's construction-time type check and inference (`TypeOptions.pipeline_type_check`):
  every applied transform's output type inferred from its function's signature or bytecode,
  and each check building an argparse parser for `TypeOptions` (~0.2 s of CPU). Our
  functions' annotations are strings (`from __future__ import annotations`): Beam up to 2.77
  read them as `Any`, 2.78 resolves them, so there they are checked and choose coders; either
  way the local runner's coders give the same rows (the outputs are byte-identical with it
  off, `tests/pipelines/test_construction.py`). Remote runners keep it: there the element
  types travel in the job's graph to workers of another process.
- The reshuffle of the seeds, which spreads them over workers; with one worker it is a
  GroupByKey stage, four ParDos and an exchange for nothing.

`--no_pipeline_type_check` given on the command line is honoured everywhere, as before.
"""

from __future__ import annotations

from apache_beam.options.pipeline_options import (
    DirectOptions,
    PipelineOptions,
    StandardOptions,
    TypeOptions,
)

#: The runner whose `in_memory` mode runs every stage in this process, on one worker.
IN_PROCESS_RUNNER = "FnApiRunner"


def one_local_worker(options: PipelineOptions) -> bool:
    """The pipeline runs in this process on one worker: Beam's FnApiRunner (the CLI's
    default) in its `in_memory` mode (the default; `multi_processing`/`multi_threading` run
    several workers)."""
    runner = options.view_as(StandardOptions).runner or IN_PROCESS_RUNNER
    mode = options.view_as(DirectOptions).direct_running_mode
    return runner == IN_PROCESS_RUNNER and mode == "in_memory"


def build_options(beam_args: list[str] | tuple[str, ...]) -> PipelineOptions:
    """The Beam options of a build: `beam_args`, with the construction-time type check off
    where the pipeline runs in this process on one worker (see the module docstring)."""
    options = PipelineOptions(list(beam_args))
    if one_local_worker(options):
        options.view_as(TypeOptions).pipeline_type_check = False
    return options
