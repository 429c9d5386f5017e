"""The build pipeline: named composite transforms from seeds to sharded, verified datasets.

    seeds -> Reshuffle -> SynthesizeTasks -> VerifyTasks -> Generate (rollout | blueprint)
          -> VerifyOutcome -> ... -> ToDatasetRecords -> WriteOutputs (leakage-guarded splits,
          canonical data/ and views/<name>/ shards)
    every stage's rejected/dead-letter outputs -> WriteRejected / WriteDeadLetters

The driver then reads the outputs back, checks the accounting identity
(inputs = kept + rejected + dead-lettered), writes manifest.json and the dataset card, and marks
success last.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import platform
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

import apache_beam as beam
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.runners.runner import PipelineState

from trajforge.generators.llm.accounting import LATENCY, latency_summary
from trajforge.generators.llm.factory import model_name
from trajforge.pipelines import attempts, io, ownership, shards, stages
from trajforge.pipelines.config import BuildConfig, FailureConfig
from trajforge.pipelines.construction import build_options, one_local_worker
from trajforge.pipelines.dofn_specs import dofn_specs_once
from trajforge.pipelines.finished.card import dataset_card
from trajforge.pipelines.finished.report import write_report
from trajforge.pipelines.gc_tuning import freeze_startup
from trajforge.pipelines.local_runner import TrimmingFnApiRunner
from trajforge.pipelines.manifest import (
    MANIFEST_FILE,
    Accounting,
    FilterCount,
    LocalProcesses,
    Manifest,
    ModelRef,
    Outputs,
)
from trajforge.pipelines.preflight import LOCAL_RUNNERS
from trajforge.pipelines.processes import ProcessPlan, plan_processes
from trajforge.pipelines.progress import disposition
from trajforge.pipelines.resources import StageResources, per_process
from trajforge.pipelines.run_dir import STAGING_DIR
from trajforge.pipelines.split_figures import FIGURES_KEY, split_figures
from trajforge.pipelines.transforms.attempts import (
    DIFFICULTY,
    ExpandAttempts,
    GroupAttempts,
    WriteDifficulty,
)
from trajforge.pipelines.transforms.buckets import scale_report
from trajforge.pipelines.transforms.dedup import Dedup
from trajforge.pipelines.transforms.diversity import Diversity
from trajforge.pipelines.transforms.jsonl import WriteJsonlFolders
from trajforge.pipelines.transforms.outputs import WriteOutputs
from trajforge.pipelines.transforms.routing import (
    DEAD,
    FILTER_COUNTER_PREFIX,
    KEPT,
    METRICS_NAMESPACE,
    REJECTED,
    AsyncStageFn,
    FilterStageFn,
    RoutedStage,
    SyncStageFn,
)
from trajforge.schemas import DeadLetter, Rejection, canonical_json
from trajforge.verifiers.filters import build_filters


class BuildError(RuntimeError):
    """The build ran but its outputs are not trustworthy (e.g. the accounting is off)."""


class BuildFailed(BuildError):
    """The build finished but produced too little to count as a dataset (see `failure_reason`);
    the manifest is written, `_SUCCESS` is not."""

    def __init__(self, summary: str, manifest: Manifest):
        super().__init__(summary)
        self.manifest = manifest


def failure_reason(outputs: Outputs, inputs: int, cfg: FailureConfig) -> str | None:
    """Why a finished build counts as failed (None when it does not). Automation reads the exit
    status and `_SUCCESS`: a run with every call failing must not look like a good one."""
    kept, dead = outputs.kept, outputs.dead_lettered
    fraction = dead / inputs if inputs else 0.0
    if kept < cfg.min_kept:
        why = f"kept {kept} rows (failure.min_kept: {cfg.min_kept})"
    elif fraction > cfg.max_dead_letter_fraction:
        why = (
            f"dead-lettered {dead} of {inputs} ({fraction:.0%} > failure.max_dead_letter_fraction "
            f"{cfg.max_dead_letter_fraction:.0%})"
        )
    else:
        return None
    stages = ", ".join(f"{k}: {v}" for k, v in sorted(outputs.dead_letter_by_stage.items()))
    return f"build failed: {why}" + (f"; dead letters by stage: {stages}" if stages else "")


@dataclass(frozen=True)
class BuildResult:
    run_dir: str
    manifest: Manifest  # as written to manifest.json (`Manifest.to_json()`)


class _Stages:
    """What every stage of one pipeline shares: its resources, its in-flight limit, and the
    routed outputs whose rejections and dead letters are written at the end."""

    def __init__(self, config: BuildConfig, run_dir: str, processes: int):
        self.plain = StageResources(config, run_dir)
        self.with_llm = StageResources(config, run_dir, needs_llm=True, processes=processes)
        self.in_flight = per_process(config.concurrency.max_in_flight, processes)
        self.routed: list[Any] = []

    def stage(self, pcoll, label: str, fn: beam.DoFn):
        """`pcoll` through one routed stage; its kept records."""
        return self.add(pcoll | label >> RoutedStage(fn))[KEPT]

    def add(self, routed):
        self.routed.append(routed)
        return routed

    def llm(self, name: str, logic) -> AsyncStageFn:
        return AsyncStageFn(name, self.with_llm, logic, self.in_flight)


def build_pipeline(
    p: beam.Pipeline,
    config: BuildConfig,
    run_dir: str,
    rebalance: bool = True,
    processes: int = 1,
    spread_seeds: bool = True,
) -> None:
    """Compose the stages on pipeline `p`; disabled optional stages are left out entirely.

    `rebalance` reshuffles verified tasks before generation (remote runners: spread the
    expensive step over workers). A reshuffle is a barrier: a local runner would synthesize
    every task before the first LLM call, so local builds fuse synthesis into generation and
    the LLM latency overlaps the synchronous stages' CPU. `processes`: worker processes of a
    local multi-process run, which share the configured limits (`local_processes`).
    `spread_seeds`: reshuffle the seeds over the workers (False where one worker runs them all,
    `construction.one_local_worker`: a stage and an exchange for nothing)."""
    shared = _Stages(config, run_dir, processes)
    tasks = verified_tasks(p, config, shared, rebalance, spread_seeds)
    trajs = passing_trajectories(tasks, config, shared, run_dir)
    write_kept(trajs, config, shared, run_dir)
    write_failures(shared.routed, run_dir)


def _seeds(_impulse: bytes, num_tasks: int) -> Iterable[int]:
    """The task seeds `0..num_tasks-1` for `FlatMap`. Typed `Iterable[int]`, not `range`: Beam
    2.78 resolves string annotations (this module's, `from __future__ import annotations`) and
    `FlatMap` strips the iterable from the return type, which `range` is not to Beam's type hints
    (`TypeCheckError: Return value not iterable` while the graph is built); 2.77 read the string
    as `Any`. `Iterable` must stay a runtime import: Beam resolves the name in this module."""
    return range(num_tasks)


def verified_tasks(
    p: beam.Pipeline, config: BuildConfig, s: _Stages, rebalance: bool, spread_seeds: bool = True
):
    """Seeds -> synthesized, verified tasks (-> the no-tool baseline gate when on)."""
    # One reshuffle spreads the seeds over workers: `Create`'s own (on by default) was a second
    # barrier and stage before it, for nothing (a build's fixed cost, issue 14).
    # The seeds from one Impulse: `Create` pickles its values and decodes them in a Map, one
    # ParDo more (each costs the local runner ~8 ms of CPU per build, issue 30).
    seeds = p | "Seeds" >> beam.Impulse() | "SeedRange" >> beam.FlatMap(_seeds, config.num_tasks)
    if spread_seeds:
        seeds = seeds | "Reshuffle" >> beam.Reshuffle()
    tasks = s.stage(
        seeds, "SynthesizeTasks", SyncStageFn("synthesize", s.plain, stages.synthesize_task)
    )
    tasks = s.stage(tasks, "VerifyTasks", SyncStageFn("verify_task", s.plain, stages.verify_task))
    if rebalance:  # generation is the expensive step: rebalance its input across workers
        tasks = tasks | "ReshuffleTasks" >> beam.Reshuffle()
    if config.quality.shortcut.no_tool_baseline:
        tasks = s.stage(tasks, "NoToolBaseline", s.llm("baseline", stages.no_tool_baseline_gate))
    return tasks


def passing_trajectories(tasks, config: BuildConfig, s: _Stages, run_dir: str):
    """Tasks -> generated trajectories that pass the outcome, the judge (when on) and the
    shortcut filters; with k attempts per task, grouped per task (difficulty written)."""
    generate_stage = "blueprint" if config.mode == "blueprint" else "rollout"
    k, rolled_out, generate = config.rollout.attempts, tasks, stages.generate_trajectory
    if k > 1:  # k attempts per task (rollout mode only; the config refuses blueprint)
        tasks, generate = tasks | "ExpandAttempts" >> ExpandAttempts(k), stages.generate_attempt
    trajs = s.stage(tasks, "Generate", s.llm(generate_stage, generate))
    trajs = s.stage(trajs, "VerifyOutcome", SyncStageFn("outcome", s.plain, stages.verify_outcome))
    if config.quality.judge.enabled:
        trajs = s.stage(trajs, "Judge", s.llm("judge", stages.judge_trajectory))
    trajs = s.stage(
        trajs, "ShortcutFilters", FilterStageFn("shortcut", s.plain, stages.shortcut_filters)
    )
    if k == 1:
        return trajs
    grouped = s.add(
        {"task": rolled_out, "passed": trajs} | "GroupAttempts" >> GroupAttempts(k, run_dir)
    )
    grouped[DIFFICULTY] | "WriteDifficulty" >> WriteDifficulty(run_dir, k)
    return grouped[KEPT]


def write_kept(trajs, config: BuildConfig, s: _Stages, run_dir: str) -> None:
    """Dedup, then the dataset records into their splits' shards, and the diversity report."""
    quality = config.quality
    kept = s.add(trajs | "Dedup" >> Dedup(quality.dedup, run_dir))[KEPT]
    records = s.stage(
        kept, "ToDatasetRecords", SyncStageFn("split", s.plain, stages.to_dataset_record)
    )
    records | "WriteOutputs" >> WriteOutputs(run_dir, config, STAGING_DIR)
    kept | "Diversity" >> Diversity(
        quality.diversity, quality.dedup.semantic.enabled, config.domain_names, run_dir
    )


def failure_folder(record: Rejection | DeadLetter) -> str:
    """The folder a routed failure is written to: dead letters apart from rejections."""
    return io.DEAD_LETTER_DIR if isinstance(record, DeadLetter) else io.REJECTED_DIR


def write_failures(routed: list[Any], run_dir: str) -> None:
    """Every stage's rejections and dead letters, each into one sharded JSON Lines folder
    (both folders written by one set of transforms, `WriteJsonlFolders`)."""
    failures = [r[tag] for tag in (REJECTED, DEAD) for r in routed]
    folders = (io.REJECTED_DIR, io.DEAD_LETTER_DIR)
    (
        failures
        | "FlattenFailures" >> beam.Flatten()
        | "WriteFailures" >> WriteJsonlFolders(run_dir, failure_folder, folders)
    )


def progress_line(counters: dict[str, int]) -> str:
    """kept / rejected / failed / LLM calls, from the stage counters (same as the local bar)."""
    kept, rejected, failed, calls = disposition(counters)
    return f"kept={kept} rejected={rejected} failed={failed} llm_calls={calls}"


def poll_remote(result: Any, every_s: int = 30) -> None:
    """Remote runners (Dataflow, Flink, Spark): print the job's counters until it ends."""
    while not PipelineState.is_terminal(result.state):
        try:
            result.wait_until_finish(duration=every_s * 1000)
        except TypeError:  # runners without `duration` simply block until done
            result.wait_until_finish()
        print(f"[{result.state}] {progress_line(stage_counters(result))}", flush=True)
    if result.state != PipelineState.DONE:
        raise BuildError(f"the pipeline ended in state {result.state}")


def stage_counters(result: Any) -> dict[str, int]:
    """Counter values by name (`<stage>.kept`, `<stage>.rejected.<reason>`, tokens...)."""
    counters: dict[str, int] = {}
    try:
        query = result.metrics().query(MetricsFilter().with_namespace(METRICS_NAMESPACE))
    except Exception:  # noqa: BLE001 - some runners cannot report metrics; files still count
        return counters
    for c in query["counters"]:
        value = c.committed if c.committed is not None else c.attempted
        counters[c.key.metric.name] = counters.get(c.key.metric.name, 0) + int(value or 0)
    return counters


def package_versions() -> dict[str, str]:
    names = ["trajforge", "apache-beam", "pydantic", "openai", "transformers", "torch", "datasets"]
    versions = {"python": platform.python_version()}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def filter_counts(config: BuildConfig, counters: dict[str, int]) -> list[FilterCount]:
    """Per configured filter, in order: its name, kept count and rejections by reason."""
    out = []
    for flt in build_filters(config.quality.filters):
        prefix = f"{FILTER_COUNTER_PREFIX}{flt.name}."
        rejected = {
            k[len(prefix) + len("rejected.") :]: v
            for k, v in sorted(counters.items())
            if k.startswith(f"{prefix}rejected.")
        }
        out.append(
            FilterCount(name=flt.name, kept=counters.get(f"{prefix}kept", 0), rejected=rejected)
        )
    return out


def role_models(config: BuildConfig) -> dict[str, ModelRef]:
    """The backend and model of each role (user and judge default to the agent's)."""
    roles = config.roles
    return {
        role: ModelRef(kind=cfg.kind, model=model_name(cfg))
        for role, cfg in (
            ("agent", roles.agent),
            ("user", roles.user or roles.agent),
            ("judge", roles.judge or roles.agent),
        )
    }


def token_totals(counters: dict[str, int]) -> dict[str, int]:
    """The build's token and call totals (`tokens.*` counters; the usual ones always present)."""
    tokens = dict.fromkeys(
        ("llm_calls", "cached_calls", "prompt_tokens", "completion_tokens", "requests"), 0
    )
    tokens.update({k.split(".", 1)[1]: v for k, v in counters.items() if k.startswith("tokens.")})
    return tokens


def llm_by_role(counters: dict[str, int]) -> dict[str, dict[str, Any]]:
    """Per role: calls, cached_calls, requests, retries.<cause>, errors, tokens, and the
    latency histogram's counters folded into one `latency_ms` summary."""
    llm: dict[str, dict[str, Any]] = {}
    for key, value in counters.items():
        if key.startswith("llm."):
            _, role, name = key.split(".", 2)
            llm.setdefault(role, {})[name] = value
    for role, counts in llm.items():
        summary = latency_summary(counts)
        llm[role] = {k: v for k, v in counts.items() if not k.startswith(LATENCY)}
        if summary is not None:
            llm[role]["latency_ms"] = summary
    return llm


class SideSummaries(NamedTuple):
    """The summaries the pipeline wrote beside the data (`splits.json`, `diversity.json`,
    `difficulty.json`) and the kept rows' per-split figures it gathered."""

    splits: dict[str, Any]
    diversity: dict[str, Any] | None
    difficulty: dict[str, Any] | None
    tokens: dict[str, Any] | None  # the messages view's token summary (the card's)


def _side_file(run_dir: str, name: str) -> dict[str, Any] | None:
    path = io.join(run_dir, name)
    return json.loads(io.read_text(path)) if io.exists(path) else None


def side_summaries(run_dir: str) -> SideSummaries:
    """The side files, with the per-split figures (gap table, pass rates by split, token
    counts) moved from `splits.json` to their manifest sections: no shard is read again."""
    splits_json = _side_file(run_dir, io.SPLITS_FILE) or {}
    figures = splits_json.pop(FIGURES_KEY, None) or split_figures(())  # no splits.json: no rows
    splits_json["gap"] = figures["gap"]
    difficulty = _side_file(run_dir, io.DIFFICULTY_FILE)
    if difficulty is not None:
        difficulty["by_split"] = figures["difficulty_by_split"]
    diversity = _side_file(run_dir, io.DIVERSITY_FILE)
    return SideSummaries(splits_json, diversity, difficulty, figures["tokens"])


@dataclass(frozen=True)
class FinishedPipeline:
    """What the finished pipeline reports: its counters, dedup's scale figures, the outputs
    on disk and the side summaries."""

    counters: dict[str, int]
    dedup_scale: dict[str, dict[str, int | float]]
    outputs: Outputs
    side: SideSummaries


def build_failure(
    config: BuildConfig, acc: Accounting, outputs: Outputs, splits_json: dict[str, Any]
) -> str | None:
    """Why the build's outputs cannot be trusted or do not count as a dataset (None: they do):
    the accounting identity, split leakage, then the `failure` thresholds."""
    if not acc.holds:
        return (
            f"accounting identity failed ({acc.unit}s): inputs={acc.inputs} but kept+"
            f"rejected+dead_lettered={acc.kept}+{acc.rejected}+{acc.dead_lettered}"
        )
    leakage = splits_json.get("leakage", {})
    if leakage.get("total", 0):
        return f"split leakage: {leakage}"
    return failure_reason(outputs, acc.inputs, config.failure)


def make_manifest(
    config: BuildConfig, finished: FinishedPipeline, plan: ProcessPlan, runner: str, wall_s: float
) -> Manifest:
    """The manifest, built once from the typed pieces of the finished build."""
    counters, outputs = finished.counters, finished.outputs
    acc = attempts.accounting(config.num_tasks, config.rollout.attempts, outputs)
    failure = build_failure(config, acc, outputs, finished.side.splits)
    return Manifest(
        name=config.name,
        config=config.model_dump(mode="json"),
        config_hash=config.config_hash(),
        versions=package_versions(),
        models=role_models(config),
        runner=runner,
        inputs=config.num_tasks,
        outputs=outputs,
        accounting=acc,
        stage_counts={
            k: v
            for k, v in sorted(counters.items())
            if not k.startswith(("tokens.", "llm.", FILTER_COUNTER_PREFIX))
        },
        filters=filter_counts(config, counters),
        tokens=token_totals(counters),
        llm=llm_by_role(counters),
        dedup_scale=finished.dedup_scale,
        local_processes=LocalProcesses(**plan.model_dump(exclude={"beam_args"})),
        splits=finished.side.splits,
        diversity=finished.side.diversity,
        difficulty=finished.side.difficulty,
        wall_time_s=round(wall_s, 3),
        finished_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        status="failed" if failure else "succeeded",
        failure=failure,
    )


def placeholder_card(config: BuildConfig) -> str:
    """README.md while the build runs: its YAML points `load_dataset` at files that never
    exist, so loading an unfinished run fails (no data files found) instead of reading a
    partial split, or the run's side files (config.json, rejected/*.jsonl) as a dataset. The
    finished card replaces it last but one, just before `_SUCCESS`."""
    path = "build-not-finished/train-*.parquet"
    return (
        "---\nconfigs:\n- config_name: default\n  default: true\n  data_files:\n"
        f"  - split: train\n    path: {path}\n---\n\n# {config.name} (unfinished)\n\n"
        f"This trajforge build has not finished (no `{io.SUCCESS_MARKER}`): do not use it. "
        "Resume it with `trajforge build ... --resume`.\n"
    )


def publish_outputs(run_dir: str) -> None:
    """Rename the finished shards from the staging folder to `data/` and `views/` (one rename
    per folder: a reader sees no split or every shard of it)."""
    for name in (io.DATA_DIR, io.VIEWS_DIR):
        staged = f"{STAGING_DIR}/{name}"
        if io.exists(io.join(run_dir, staged)) or "://" in run_dir:
            ownership.move(run_dir, staged, name)
    if "://" not in run_dir:
        with contextlib.suppress(OSError):
            os.rmdir(io.join(run_dir, STAGING_DIR))


def run_build(
    config: BuildConfig,
    run_dir: str,
    beam_args: list[str],
    owns_process: bool = False,
    plan: ProcessPlan | None = None,
) -> BuildResult:
    """Run the pipeline into `run_dir` (prepared by the caller), then manifest + success marker.
    `owns_process`: the build is all this process does (the CLI), so start-up's objects may be
    frozen out of the garbage collector (`gc_tuning.freeze_startup`); a library caller keeps
    its collector as it is. `plan`: the local worker processes (decided from the config and
    `beam_args` when not given; the CLI decides first to print the decision)."""
    started = time.monotonic()
    plan = plan or plan_processes(config, beam_args)
    options = build_options(plan.beam_args)
    runner = options.get_all_options().get("runner") or "FnApiRunner"
    ownership.write_text(run_dir, "config.json", canonical_json(config.model_dump(mode="json")))
    ownership.write_text(run_dir, "README.md", placeholder_card(config))
    # Beam's FnApiRunner, whose worker processes (if any) skip the interpreter's teardown and
    # which hands freed memory back after each bundle (local_runner.py)
    p = beam.Pipeline(
        runner=TrimmingFnApiRunner() if runner == "FnApiRunner" else None, options=options
    )
    rebalance = runner not in LOCAL_RUNNERS
    spread_seeds = not one_local_worker(options)
    with dofn_specs_once():  # Beam's per-ParDo inspection, once per DoFn (dofn_specs.py)
        build_pipeline(p, config, run_dir, rebalance, plan.processes, spread_seeds)
        if owns_process:  # modules and the graph live to the end: out of every full collection
            freeze_startup()
        result = p.run()
        if runner in LOCAL_RUNNERS:
            result.wait_until_finish()
        else:
            poll_remote(result)
    shards.ensure_loadable(run_dir, [shards.CANONICAL, *config.output.views], STAGING_DIR)
    publish_outputs(run_dir)
    finished = FinishedPipeline(
        counters=stage_counters(result),
        dedup_scale=scale_report(result),
        outputs=io.count_outputs(run_dir),
        side=side_summaries(run_dir),
    )
    manifest = make_manifest(config, finished, plan, runner, time.monotonic() - started)
    return write_finished(run_dir, manifest, finished.side.tokens)


def write_finished(run_dir: str, manifest: Manifest, tokens: dict[str, Any] | None) -> BuildResult:
    """manifest.json, the report and the card (for a failed build too: they show what
    happened), then `_SUCCESS` last; a failed build raises `BuildFailed` instead."""
    ownership.write_text(run_dir, MANIFEST_FILE, manifest.to_json())
    # The card is last: until it replaces the placeholder, `load_dataset` refuses the run.
    write_report(run_dir, manifest)
    ownership.write_text(run_dir, "README.md", dataset_card(run_dir, manifest, tokens))
    if manifest.failure:
        raise BuildFailed(manifest.failure, manifest)
    ownership.write_text(run_dir, io.SUCCESS_MARKER, manifest.finished_at + "\n")
    return BuildResult(run_dir=run_dir, manifest=manifest)
