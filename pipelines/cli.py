"""`trajforge` command line: build datasets (and, later, inspect them).

    trajforge build --config configs/quickstart.yaml --output runs/quick [--resume|--overwrite]
                    [any Beam pipeline option, e.g. --runner DataflowRunner --project ...]
    trajforge verify --input FILE.jsonl|RUN_DIR --output VERDICTS.jsonl [--config CONFIG]

Unknown flags are passed to Beam unchanged. Local runs default to `--runner=FnApiRunner`, which
never downloads a runner binary.
"""

from __future__ import annotations

import argparse
import logging
import sys


class _DropOptionalGcpNotice(logging.Filter):
    """Beam warns at import that its optional GCP clients are absent; local builds need none."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("apitools not found")


# Installed before Beam is imported (below): the notice is logged on the root logger at import.
logging.getLogger().addFilter(_DropOptionalGcpNotice())

from trajforge.pipelines import io  # noqa: E402
from trajforge.pipelines.config import ConfigError, load_config  # noqa: E402


class UsageError(Exception):
    """A problem with how the command was called; the message says what to do."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="trajforge", description=__doc__.split("\n")[0])
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
    mode.add_argument("--overwrite", action="store_true", help="delete --output first")
    build.add_argument("--no-progress", action="store_true", help="no progress bar")
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
    verify.add_argument("--config", default=None, help="build config whose quality.filters to run")
    return parser


def with_default_runner(beam_args: list[str]) -> list[str]:
    if any(a == "--runner" or a.startswith("--runner=") for a in beam_args):
        return beam_args
    return ["--runner=FnApiRunner", *beam_args]


def prepare_run_dir(output: str, config_hash: str, resume: bool, overwrite: bool) -> None:
    """Refuse to mix runs: a non-empty output needs --resume (same config) or --overwrite."""
    if io.is_nonempty_dir(output):
        if overwrite:
            io.delete_tree(output)
        elif resume:
            previous = io.join(output, "config.json")
            if io.FileSystems.exists(previous):
                import json

                old = json.loads(io.read_text(previous))
                from trajforge.pipelines.config import BuildConfig

                if BuildConfig.model_validate(old).config_hash() != config_hash:
                    raise UsageError(
                        f"--resume: {output} was built with a different config; "
                        "use a new --output or --overwrite"
                    )
            for sub in (
                io.DATA_DIR,
                io.REJECTED_DIR,
                io.DEAD_LETTER_DIR,
                io.DIVERSITY_FILE,
                io.SUCCESS_MARKER,
            ):
                io.delete_tree(io.join(output, sub))
        else:
            raise UsageError(
                f"output directory {output} exists and is not empty; pass --resume to continue "
                "an interrupted build (finished LLM calls are cached) or --overwrite to replace it"
            )
    io.ensure_dir(output)


def summary_table(manifest: dict) -> str:
    out = manifest["outputs"]
    lines = [
        f"{'stage counter':<44}{'count':>8}",
        "-" * 52,
        *(f"{k:<44}{v:>8}" for k, v in manifest["stage_counts"].items()),
        "-" * 52,
        f"{'inputs':<44}{manifest['inputs']:>8}",
        *(f"{'kept: ' + s:<44}{v['rows']:>8}" for s, v in out["splits"].items()),
        f"{'rejected':<44}{out['rejected']:>8}",
        f"{'dead-lettered':<44}{out['dead_lettered']:>8}",
        f"{'accounting identity holds':<44}{str(manifest['accounting']['holds']):>8}",
        f"{'LLM calls (cached)':<44}"
        f"{manifest['tokens'].get('llm_calls', 0):>8} ({manifest['tokens'].get('cached_calls', 0)})",
        f"{'wall time (s)':<44}{manifest['wall_time_s']:>8.1f}",
    ]
    return "\n".join(lines)


def cmd_build(args: argparse.Namespace, beam_args: list[str]) -> int:
    from trajforge.pipelines.build import run_build
    from trajforge.pipelines.progress import ProgressReporter
    from trajforge.pipelines.requirements import missing_requirements

    config = load_config(args.config)
    missing = missing_requirements(config)
    if missing:  # before anything is written or paid for
        raise UsageError("cannot start the build:\n  " + "\n  ".join(m.message() for m in missing))
    output = args.output.rstrip("/")
    prepare_run_dir(output, config.config_hash(), args.resume, args.overwrite)
    beam_args = with_default_runner(beam_args)
    local = "://" not in output
    with ProgressReporter(output, config.num_tasks, enabled=local and not args.no_progress):
        result = run_build(config, output, beam_args)
    print(summary_table(result.manifest))
    train = result.manifest["outputs"]["splits"].get("train", {}).get("rows", 0)
    print(
        f"\nDataset written to {output}/data ({train} train rows); manifest: {output}/manifest.json"
    )
    print(f'Load it with: datasets.load_dataset("parquet", data_dir="{output}/data")')
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from trajforge.pipelines.calibrate import calibrate_run

    run = args.run.rstrip("/")
    if not io.FileSystems.exists(io.join(run, io.SUCCESS_MARKER)):
        raise UsageError(f"{run} is not a finished run directory (no {io.SUCCESS_MARKER})")
    report = calibrate_run(run, args.limit)
    for key in ("judge", "n", "skipped", "ungradeable", "accuracy", "precision", "recall"):
        print(f"{key:<14}{report[key]}")
    print(f"{'cohen_kappa':<14}{report['cohen_kappa']:.3f}")
    print(f"\nWritten to {run}/calibration.json")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    import os

    from trajforge.pipelines.verify import verify_file
    from trajforge.verifiers.filters import DEFAULT_FILTERS

    if not os.path.exists(args.input):
        raise UsageError(f"--input {args.input} does not exist (a JSONL file or a run directory)")
    specs = load_config(args.config).quality.filters if args.config else DEFAULT_FILTERS
    counts = verify_file(args.input, args.output, specs)
    for key in sorted(counts):
        print(f"{key:<44}{counts[key]:>8}")
    print(f"\nVerdicts written to {args.output}")
    return 0


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args, beam_args = _parser().parse_known_args(argv)
    try:
        if args.command == "build":
            return cmd_build(args, beam_args)
        if args.command == "calibrate":
            return cmd_calibrate(args)
        if args.command == "verify":
            return cmd_verify(args)
    except (ConfigError, UsageError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 1


if __name__ == "__main__":
    sys.exit(main())
