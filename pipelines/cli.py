"""`trajforge` command line: build verified datasets for tool-using agents, look at them,
re-check them, publish them, and fine-tune and evaluate models on them.

    trajforge build --config configs/quickstart.yaml --output runs/quick [--resume|--overwrite]
                    [any Beam pipeline option, e.g. --runner DataflowRunner --project ...]
    trajforge show RUN_DIR | report RUN_DIR | publish RUN_DIR --repo-id ORG/NAME
    trajforge verify --input FILE.jsonl|RUN_DIR --output VERDICTS.jsonl [--config CONFIG]
    trajforge calibrate --run RUN_DIR
    trajforge finetune sft --data RUN_DIR --model MODEL_DIR --output OUT   (see finetune/cli.py)
    trajforge eval --model SPEC --tasks RUN_DIR --k K                      (see finetune/cli.py)

Beam's own flags are passed to Beam unchanged; any other flag is refused with the closest
match (a typo such as `--ovewrite` never reaches Beam). Local runs default to
`--runner=FnApiRunner`, which never downloads a runner binary. Exit status: 0 success, 1 a
failed build (too few kept rows or too many dead letters; manifest written, no `_SUCCESS`),
2 a usage or config error (one line naming the flag or field and the fix).

Commands that read a run back resolve its domains from the run's own `config.json` (a plug-in
domain's import path lives there; records carry only its short name). Our own modules are
imported by the command that needs them, so `--help` and `--version` stay fast and never
import Beam: importing this module costs ~0.2 s of CPU; the command modules would add ~0.35 s
(the config and error types), ~0.5 s (the finished-run tools: pyarrow, huggingface_hub) and
~1.3 s (the build: Beam) (2 shared cores, `/usr/bin/time python -c "import ..."`).
"""

from __future__ import annotations

import argparse
import difflib
import logging
import os
import sys
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as dist_version
from typing import get_args

from trajforge.finetune import cli as finetune_cli
from trajforge.pipelines import allocators
from trajforge.pipelines.gc_tuning import tune_gc
from trajforge.pipelines.manifest import MANIFEST_FILE, Accounting, Manifest, read_status
from trajforge.schemas.dataset import Split

#: What `trajforge --help` says the tool is (one line).
DESCRIPTION = (
    "Build verified training data for tool-using LLM agents (Apache Beam), inspect, verify and "
    "publish it, and fine-tune and evaluate models on it."
)
SPLITS: tuple[str, ...] = get_args(Split)


class _DropOptionalGcpNotice(logging.Filter):
    """Beam warns at import that its optional GCP clients are absent; local builds need none."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("apitools not found")


# Installed before Beam is imported (by a command): the notice is logged on the root logger.
logging.getLogger().addFilter(_DropOptionalGcpNotice())


def version() -> str:
    """The installed distribution's version (the wheel's metadata, one source of truth)."""
    try:
        return dist_version("trajforge")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def _errors() -> tuple[type[Exception], ...]:
    """The errors a command reports as one line and exit code 2 (imported only once a command
    runs: their modules cost `--help` ~0.35 s, module docstring)."""
    # per command, not at the top: `--help` stays fast, no Beam (module docstring)
    from trajforge.generators.plugins import PluginError
    from trajforge.generators.run_domains import UnknownDomainError
    from trajforge.pipelines.config import ConfigError
    from trajforge.pipelines.preflight import PreflightError
    from trajforge.pipelines.run_dir import RunDirError

    return (
        ConfigError,
        UsageError,
        PreflightError,
        RunDirError,
        UnknownDomainError,
        PluginError,
        *finetune_cli.ERRORS,
    )


class UsageError(Exception):
    """A problem with how the command was called; the message says what to do."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trajforge", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"trajforge {version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="build a dataset from a config")
    build.add_argument("--config", required=True, help="YAML build config")
    build.add_argument("--output", required=True, help="run directory (local path or gs://...)")
    mode = build.add_mutually_exclusive_group()
    mode.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted build in --output (cached LLM calls are not repeated)",
    )
    mode.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the trajforge run in --output (only what a run wrote is deleted; the "
        "response cache is kept)",
    )
    cache = build.add_mutually_exclusive_group()
    cache.add_argument(
        "--clear-cache", action="store_true", help="delete the run's response cache first"
    )
    cache.add_argument(
        "--no-cache", action="store_true", help="neither read nor write the response cache"
    )
    build.add_argument("--no-progress", action="store_true", help="no progress bar")
    build.add_argument(
        "--local-workers",
        action="store_true",
        help="--runner PortableRunner's workers run on this machine (a Beam worker pool started "
        "here, --environment_type=EXTERNAL) and so may share a local --output",
    )
    calib = sub.add_parser(
        "calibrate", help="agreement of the run's LLM judge with the programmatic outcome"
    )
    calib.add_argument("--run", required=True, help="a finished run directory")
    calib.add_argument("--limit", type=int, default=None, help="judge at most this many")
    verify = sub.add_parser(
        "verify", help="run the gate over trajectories on disk, one verdict per line"
    )
    verify.add_argument("--input", required=True, help="Trajectory JSONL file or run directory")
    verify.add_argument("--output", required=True, help="verdicts JSONL to write")
    verify.add_argument(
        "--config",
        default=None,
        help="build config: its quality.filters and domains, and its judge when enabled",
    )
    finetune_cli.add_parsers(sub)
    _add_product_commands(sub)
    _no_abbreviations(parser)
    return parser


def _add_product_commands(sub) -> None:
    """show / report / publish: looking at a finished run and pushing it to the Hub."""
    show = sub.add_parser("show", help="print trajectories of a run readably")
    show.add_argument("run_dir", help="a finished run directory")
    show.add_argument("--split", choices=SPLITS, default=None, help="only this split")
    show.add_argument("--n", type=int, default=3, help="how many trajectories (default 3)")
    show.add_argument(
        "--rejected",
        nargs="?",
        const="*",
        default=None,
        metavar="REASON",
        help="show rejected trajectories instead (of one typed reason, or all)",
    )
    report = sub.add_parser("report", help="write the run's self-contained HTML report")
    report.add_argument("run_dir", help="a finished run directory")
    publish = sub.add_parser("publish", help="push a run to a Hugging Face dataset repo")
    publish.add_argument("run_dir", help="a finished run directory")
    publish.add_argument("--repo-id", required=True, help="ORG/NAME of the dataset repo")
    publish.add_argument("--private", action="store_true", help="create the repo private")
    publish.add_argument(
        "--dry-run", action="store_true", help="list what would be uploaded, upload nothing"
    )


def _no_abbreviations(parser: argparse.ArgumentParser) -> None:
    """Refuse prefixes of flags (`--resum` for `--resume`) in every (sub)command: a prefix
    silently means a flag the user may not have meant, and for `build` an unknown flag must
    reach the preflight's "did you mean" instead."""
    parser.allow_abbrev = False
    for action in parser._subparsers._group_actions if parser._subparsers else ():
        for child in action.choices.values():
            _no_abbreviations(child)


def local_path(path: str) -> str:
    """`~` expanded here, once (a shell leaves a quoted `'~/x'` alone, and a literal `~`
    folder in the working directory is never what was meant); trailing slashes dropped."""
    if "://" not in path:
        path = os.path.expanduser(path)
    return path.rstrip("/") or "/"


def with_default_runner(beam_args: list[str]) -> list[str]:
    if any(a == "--runner" or a.startswith("--runner=") for a in beam_args):
        return beam_args
    return ["--runner=FnApiRunner", *beam_args]


def _retries(manifest: Manifest) -> int:
    roles = manifest.llm.values()
    return sum(v for role in roles for k, v in role.items() if k.startswith("retries."))


def _latency_lines(manifest: Manifest) -> list[str]:
    """Per role that paid for calls: the mean latency the build saw, and the p90's bound."""
    # per command, not at the top: `--help` stays fast, no Beam (module docstring)
    from trajforge.generators.llm.accounting import LATENCY_BOUNDS_MS

    lines = []
    for role, counts in sorted(manifest.llm.items()):
        lat = counts.get("latency_ms")
        if isinstance(lat, dict):  # absent for a role with no timed call (all cached)
            p90 = lat["p90_at_most"]
            p90_text = f"<={p90}" if p90 is not None else f">{LATENCY_BOUNDS_MS[-1]}"
            lines.append(
                f"{'LLM latency ms, ' + role + ' (mean, p90)':<44}{lat['mean']:>8.0f} ({p90_text})"
            )
    return lines


def _attempt_lines(acc: Accounting) -> list[str]:
    """With `rollout.attempts` K > 1 the identity counts attempts (tasks x K), not tasks."""
    if acc.unit != "attempt":
        return []
    return [
        f"{'attempts (tasks x ' + str(acc.attempts_per_task) + ')':<44}{acc.inputs:>8}",
        f"{'attempts rejected (incl. refused tasks x K)':<44}{acc.rejected:>8}",
        f"{'attempts dead-lettered':<44}{acc.dead_lettered:>8}",
        f"{'tasks without a passing attempt':<44}{acc.tasks_without_passing_attempt:>8}",
    ]


def summary_table(manifest: Manifest) -> str:
    """What `trajforge build` prints at the end, from the build's own manifest."""
    out, tokens, plan = manifest.outputs, manifest.tokens, manifest.local_processes
    lines = [
        f"{'stage counter':<44}{'count':>8}",
        "-" * 52,
        *(f"{k:<44}{v:>8}" for k, v in manifest.stage_counts.items()),
        "-" * 52,
        f"{'inputs':<44}{manifest.inputs:>8}",
        *(f"{'kept: ' + s:<44}{v.rows:>8}" for s, v in out.splits.items()),
        f"{'rejected':<44}{out.rejected:>8}",
        f"{'dead-lettered':<44}{out.dead_lettered:>8}",
        *_attempt_lines(manifest.accounting),
        f"{'accounting identity holds':<44}{str(manifest.accounting.holds):>8}",
        f"{'LLM calls (cached)':<44}"
        f"{tokens.get('llm_calls', 0):>8} ({tokens.get('cached_calls', 0)})",
        f"{'HTTP requests (retries)':<44}{tokens.get('requests', 0):>8} ({_retries(manifest)})",
        *_latency_lines(manifest),
        f"{'wall time (s)':<44}{manifest.wall_time_s:>8.1f}",
        f"{'local processes (' + plan.source + ')':<44}{plan.processes:>8}",
    ]
    balance = manifest.splits.get("balance") or {}
    if balance.get("note"):  # only when the split is far from its ratio or golden was capped
        lines.append(f"note: {balance['note']}")
    return "\n".join(lines)


def _our_flags(command: str) -> list[str]:
    """The option strings of one subcommand (for "did you mean" on a typo)."""
    parser = _parser()
    for action in parser._subparsers._group_actions if parser._subparsers else ():
        sub = action.choices.get(command)
        if sub is not None:
            return sorted(o for a in sub._actions for o in a.option_strings if o.startswith("--"))
    return []


def _unknown_flags_message(command: str, extra: list[str]) -> str:
    """`trajforge COMMAND` got arguments it does not take; name them and the closest flag."""
    flags = [a.split("=", 1)[0] for a in extra if a.startswith("--")]
    close = difflib.get_close_matches(flags[0], _our_flags(command), n=1) if flags else []
    hint = f"did you mean {close[0]}?" if close else f"see `trajforge {command} --help`"
    return f"trajforge {command}: unrecognized arguments: {' '.join(extra)}; {hint}"


def _tune_build_process() -> None:
    """The collector's thresholds (gc_tuning.py) and the allocators' settings, which must come
    before pyarrow loads here or in a worker process (allocators.py says why)."""
    tune_gc()
    allocators.arrow_pool_env()
    allocators.limit_arenas()


def cmd_build(args: argparse.Namespace, beam_args: list[str]) -> int:
    _tune_build_process()  # first: before anything imports pyarrow
    # per command, not at the top: `--help` stays fast, no Beam (module docstring)
    from trajforge.pipelines import io
    from trajforge.pipelines.build import BuildFailed, run_build
    from trajforge.pipelines.config import load_config
    from trajforge.pipelines.preflight import preflight
    from trajforge.pipelines.processes import plan_processes
    from trajforge.pipelines.progress import ProgressReporter
    from trajforge.pipelines.requirements import missing_requirements
    from trajforge.pipelines.run_dir import finish_run, prepare_run_dir

    config = load_config(args.config)
    missing = missing_requirements(config)
    if missing:  # before anything is written or paid for
        raise UsageError("cannot start the build:\n  " + "\n  ".join(m.message() for m in missing))
    if args.no_cache:
        config = config.model_copy(
            update={"cache": config.cache.model_copy(update={"enabled": False})}
        )
    output = local_path(args.output)
    rollout = config.rollout
    if rollout.attempts > 1 and rollout.agent == "llm" and config.sampling.temperature == 0:
        print(  # the attempts differ only through the seeds the backend may ignore at t=0
            f"note: rollout.attempts {rollout.attempts} at sampling.temperature 0 repeats "
            "greedy decoding; set a temperature for distinct attempts and a meaningful pass rate"
        )
    preflight(config, output, beam_args, _our_flags("build"), args.local_workers)
    prepare_run_dir(output, config.config_hash(), args.resume, args.overwrite, args.clear_cache)
    beam_args = with_default_runner(beam_args)
    plan = plan_processes(config, beam_args)  # before the build, so the decision is seen
    print(plan.line(), flush=True)
    local = "://" not in output
    try:
        with ProgressReporter(
            output,
            config.num_tasks,
            enabled=local and not args.no_progress,
            attempts=config.rollout.attempts,
        ):
            result = run_build(config, output, beam_args, owns_process=True, plan=plan)
    except BuildFailed as failed:
        print(summary_table(failed.manifest))
        print(
            f"error: {failed} (manifest: {output}/manifest.json; no {io.SUCCESS_MARKER})",
            file=sys.stderr,
        )
        return 1
    finally:
        finish_run(output)
    print(summary_table(result.manifest))
    train_split = result.manifest.outputs.splits.get("train")
    train = train_split.rows if train_split is not None else 0
    print(
        f"\nDataset written to {output}/data ({train} train rows); manifest: {output}/manifest.json"
    )
    print(f'Load it with: datasets.load_dataset("{output}")  # the messages view; see README.md')
    print(f"Report: {output}/report.html; look at rows with: trajforge show {output}")
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    # per command, not at the top: `--help` stays fast, no Beam (module docstring)
    from trajforge.pipelines.finished.calibrate import calibrate_run

    run = _finished(args.run)
    report = calibrate_run(run, args.limit)
    for key in ("judge", "n", "skipped", "ungradeable", "accuracy", "precision", "recall"):
        print(f"{key:<14}{report[key]}")
    kappa = report["cohen_kappa"]
    shown = f"{kappa:.3f}" if kappa is not None else f"undefined ({report['kappa_note']})"
    print(f"{'cohen_kappa':<14}{shown}")
    if report["warning"]:
        print(f"warning: {report['warning']}")
    print(f"\nWritten to {run}/calibration.json")
    if report.get("problem"):  # the figures above are 0/0 or compare constants
        print(f"error: {report['problem']}", file=sys.stderr)
        return 1
    return 0


def _finished(run_dir: str, failed_ok: bool = True) -> str:
    """A run whose build ended: `_SUCCESS`, or (`failed_ok`: show and report, which a user
    wants exactly for a failed build) a manifest that records the build as failed, written
    after every output was. A build that was killed, or is still running, is refused: its
    files may be partial."""
    # per command, not at the top: `--help` stays fast, no Beam (module docstring)
    from trajforge.pipelines import io

    run = local_path(run_dir)
    if io.exists(io.join(run, io.SUCCESS_MARKER)):
        return run
    if failed_ok and read_status(run) == "failed":
        return run
    raise UsageError(
        f"{run} is not a finished run (no {io.SUCCESS_MARKER}): its build was interrupted or "
        "is still running; finish it with `trajforge build ... --resume`"
    )


def _run_inputs_finished(args: argparse.Namespace) -> None:
    """finetune / eval read a run's rows: only a successful build's (`_SUCCESS`)."""
    # per command, not at the top: `--help` stays fast, no Beam (module docstring)
    from trajforge.pipelines.run_dir import RUN_MARKER

    for attr in ("data", "tasks"):
        value = getattr(args, attr, None)
        if not isinstance(value, str):
            continue
        path = local_path(value)
        if any(os.path.exists(os.path.join(path, n)) for n in (RUN_MARKER, MANIFEST_FILE)):
            _finished(value, failed_ok=False)


def cmd_show(args: argparse.Namespace) -> int:
    # per command, not at the top: `--help` stays fast, no Beam (module docstring)
    from trajforge.pipelines.finished.show import show

    if args.n < 1:
        raise UsageError(f"--n must be at least 1, got {args.n}")
    reason = None if args.rejected in (None, "*") else args.rejected
    text = show(
        _finished(args.run_dir),
        split=args.split,
        n=args.n,
        reason=reason,
        rejected_only=args.rejected is not None,
        colour=sys.stdout.isatty(),
    )
    print(text)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    # per command, not at the top: `--help` stays fast, no Beam (module docstring)
    from trajforge.pipelines.finished.report import write_report

    print(f"Report written to {write_report(_finished(args.run_dir))}")
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    # per command, not at the top: `--help` stays fast, no Beam (module docstring)
    from trajforge.pipelines.finished.publish import PublishError, files_to_upload, publish

    run = _finished(args.run_dir, failed_ok=False)
    try:
        if args.dry_run:
            files = files_to_upload(run)
            print(f"Would upload {len(files)} files to datasets/{args.repo_id}:")
            print("\n".join(f"  {f}" for f in files))
            return 0
        print(f"Published: {publish(run, args.repo_id, args.private)}")
    except PublishError as err:
        raise UsageError(str(err)) from err
    return 0


COMMANDS = {"show": cmd_show, "report": cmd_report, "publish": cmd_publish}


def cmd_verify(args: argparse.Namespace) -> int:
    # per command, not at the top: `--help` stays fast, no Beam (module docstring)
    from trajforge.pipelines.config import load_config
    from trajforge.pipelines.finished.verify import verify_file
    from trajforge.pipelines.requirements import missing_requirements

    if not os.path.exists(args.input):
        raise UsageError(f"--input {args.input} does not exist (a JSONL file or a run directory)")
    config = load_config(args.config) if args.config else None
    if config is not None and config.quality.judge.enabled:
        missing = missing_requirements(config, roles=("judge",), embedder=False)
        if missing:  # the judge's model must be there before any verdict is written
            raise UsageError(
                "cannot run the judge:\n  " + "\n  ".join(m.message() for m in missing)
            )
    counts = verify_file(args.input, args.output, config)
    for key in sorted(counts):
        print(f"{key:<44}{counts[key]:>8}")
    print(f"\nVerdicts written to {args.output}")
    return 0


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args, beam_args = _parser().parse_known_args(argv)
    if beam_args and args.command != "build":  # only build passes flags on (to Beam)
        print(f"error: {_unknown_flags_message(args.command, beam_args)}", file=sys.stderr)
        return 2
    try:
        if args.command == "build":
            return cmd_build(args, beam_args)
        if args.command == "calibrate":
            return cmd_calibrate(args)
        if args.command == "verify":
            return cmd_verify(args)
        if args.command in ("finetune", "eval"):
            _run_inputs_finished(args)
            return finetune_cli.run(args)
        if args.command in COMMANDS:
            return COMMANDS[args.command](args)
    except _errors() as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 1


if __name__ == "__main__":
    sys.exit(main())
