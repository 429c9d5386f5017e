"""`trajforge finetune sft` and `trajforge eval`: argument parsing and the two commands.

pipelines/cli.py only registers these parsers and dispatches here, so finetune never imports
the Beam layer.

    trajforge finetune sft --data RUN_DIR --model MODEL_DIR --output OUT [--method lora|full] ...
    trajforge eval --model SPEC [--model SPEC ...]
                   (--tasks RUN_DIR [--split golden] [--max-tasks N] | --domain retail --num-tasks N)
                   --k K [--json OUT.json] [--transcripts OUT.jsonl]
    trajforge finetune opd --student DIR --teacher DIR --output OUT [--tasks RUN_DIR] ...
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the evaluation's types, without its imports at start-up
    from trajforge.finetune.evaluate import AttemptTranscript, EvalConfig, EvalReport, HeldOut
    from trajforge.generators.tooling import Domain

#: SFT flags: (flag, type, help). Field names are the flags with dashes as underscores.
_SFT_FLAGS: tuple[tuple[str, type, str], ...] = (
    ("--family", str, "chat-template family (default: detected from the tokenizer)"),
    ("--method", str, "lora (default) or full"),
    ("--learning-rate", float, "peak learning rate (default 2e-4)"),
    ("--max-steps", int, "stop after this many optimizer steps"),
    ("--epochs", int, "passes over the train split (default 1)"),
    ("--max-seq-len", int, "truncate samples to this many tokens (default 8192)"),
    ("--row-tokens", int, "packed row length in tokens (default 8192)"),
    ("--batch-size", int, "samples per padded micro-batch (with --no-packing)"),
    ("--grad-accum", int, "micro-batches per optimizer step (default 1)"),
    ("--warmup-steps", int, "linear warmup steps (default 0)"),
    ("--precision", str, "auto (bf16-mixed on a GPU that has bf16), fp32, bf16-mixed or bf16"),
    ("--gradient-checkpointing", str, "auto (on with a GPU), on or off"),
    ("--eval-every", int, "validation loss every N steps (default: at the end)"),
    ("--save-every", int, "checkpoint every N steps (default: at the end)"),
    ("--seed", int, "data order and init seed (default 0)"),
)

#: OPD flags, same convention (see finetune/opd/config.py for the fields).
_OPD_FLAGS: tuple[tuple[str, type, str], ...] = (
    ("--family", str, "chat-template family (default: detected from the student)"),
    ("--tasks", str, "run directory whose --split gives the training tasks"),
    ("--split", str, "split of --tasks to train on (default train)"),
    ("--domain", str, "domain of fresh tasks when --tasks is not given (default retail)"),
    ("--num-tasks", int, "fresh training tasks (default 16)"),
    ("--steps", int, "optimizer steps (default 20)"),
    ("--rollouts-per-step", int, "student rollouts per step (default 4)"),
    ("--learning-rate", float, "AdamW learning rate (default 1e-5)"),
    ("--temperature", float, "student sampling temperature (default 1.0)"),
    ("--max-new-tokens", int, "tokens per agent turn (default 256)"),
    ("--max-turns", int, "user turns per rollout (default 8)"),
    ("--eval-every", int, "held-out reverse KL and pass^1 every N steps (default: ends)"),
    ("--eval-rollouts", int, "held-out rollouts for the reverse KL (default 4)"),
    ("--eval-tasks", int, "held-out tasks for pass^1 (default 4)"),
    ("--save-every", int, "checkpoint every N steps (default: at the end)"),
    ("--sampler", str, "transformers (default) or vllm (GPU)"),
    ("--device", str, "auto (default), cpu or cuda"),
    ("--precision", str, "auto (bf16-mixed on a GPU that has bf16), fp32, bf16-mixed or bf16"),
    ("--seed", int, "task and sampling seed (default 0)"),
)


def _add_opd_parser(fsub: argparse._SubParsersAction) -> None:
    opd = fsub.add_parser(
        "opd", help="on-policy distillation: the student acts, a fixed teacher scores"
    )
    opd.add_argument("--student", required=True, help="local model directory (trained)")
    opd.add_argument("--teacher", required=True, help="local model directory, same tokenizer")
    opd.add_argument("--output", required=True, help="output directory")
    opd.add_argument("--config", default=None, help="YAML with OPDConfig fields (flags win)")
    for flag, kind, text in _OPD_FLAGS:
        opd.add_argument(flag, type=kind, default=None, help=text)
    opd.add_argument("--resume", action="store_true", help="continue from the latest checkpoint")
    opd.add_argument("--no-pass-k", action="store_true", help="skip pass^1 at evaluations")
    opd.add_argument(
        "--kl-only",
        action="store_true",
        help="print the student's held-out reverse KL to the teacher and stop: no training, "
        "nothing written (compare a student trained another way)",
    )


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Register `finetune sft` and `eval` on the top-level CLI's subparsers."""
    finetune = sub.add_parser("finetune", help="fine-tune a model on a run directory")
    fsub = finetune.add_subparsers(dest="finetune_command", required=True)
    sft = fsub.add_parser("sft", help="supervised fine-tuning (LoRA or full) on the train split")
    sft.add_argument(
        "--data",
        required=True,
        help="run directory, save_to_disk folder, data/<split>-*.parquet folder, JSONL file or "
        "cached Hub id; rows with `messages` (+ `tools`)",
    )
    sft.add_argument("--model", required=True, help="local model directory (transformers)")
    sft.add_argument("--output", required=True, help="output directory")
    sft.add_argument("--config", default=None, help="YAML with SFTConfig fields (flags win)")
    for flag, kind, text in _SFT_FLAGS:
        sft.add_argument(flag, type=kind, default=None, help=text)
    sft.add_argument("--no-packing", action="store_true", help="padded batches, no packing")
    sft.add_argument("--resume", action="store_true", help="continue from the latest checkpoint")
    sft.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_opd_parser(fsub)
    _add_eval_parser(sub)


def _add_eval_parser(sub: argparse._SubParsersAction) -> None:
    ev = sub.add_parser("eval", help="pass@k / pass^k of agents on held-out tasks")
    ev.add_argument("--model", action="append", required=True, help="agent spec; repeat to compare")
    ev.add_argument("--tasks", default=None, help="run directory: evaluate every task of --split")
    ev.add_argument("--split", default=None, help="split of --tasks (default golden)")
    ev.add_argument(
        "--max-tasks", type=int, default=None, help="evaluate only the first N tasks of --split"
    )
    ev.add_argument("--domain", default="retail", help="fresh tasks from this domain")
    ev.add_argument(
        "--num-tasks", type=int, default=None, help="fresh tasks from seeds (default 8)"
    )
    ev.add_argument("--k", type=int, default=1, help="attempts per task (default 1)")
    ev.add_argument("--seed", type=int, default=0, help="seed of the fresh tasks (default 0)")
    ev.add_argument("--max-turns", type=int, default=20)
    ev.add_argument("--max-in-flight", type=int, default=8, help="attempts run at once")
    ev.add_argument(
        "--max-batch-size",
        type=int,
        default=8,
        help="rows per batched generate of a model directory (default 8; at most --max-in-flight)",
    )
    ev.add_argument("--temperature", type=float, default=0.0)
    ev.add_argument("--max-tokens", type=int, default=512, help="per agent turn")
    ev.add_argument(
        "--family", default=None, help="template family of model directories (default: detected)"
    )
    ev.add_argument("--base-url", default=None, help="endpoint for openai:MODEL agents")
    ev.add_argument(
        "--user", choices=("scripted", "llm"), default="scripted", help="simulated user"
    )
    ev.add_argument(
        "--user-model", default="local", help="model spec of --user llm (default: local)"
    )
    ev.add_argument("--json", default=None, help="write the reports here (JSON)")
    ev.add_argument(
        "--transcripts",
        default=None,
        help="write every attempt here, one JSON line each: agent, task, verdict, typed "
        "failures and the whole conversation",
    )


def _flag_values(args: argparse.Namespace, flags) -> dict:
    """Config field -> the flag's value (None when not given, so YAML or defaults apply)."""
    return {
        flag[2:].replace("-", "_"): getattr(args, flag[2:].replace("-", "_")) for flag, *_ in flags
    }


def cmd_sft(args: argparse.Namespace) -> int:
    # lazy, measured start-up cost: config ~120 ms, sft ~180 ms
    from trajforge.finetune.config import SFTConfig, load_model_config
    from trajforge.finetune.sft import run_sft

    values = _flag_values(args, _SFT_FLAGS)
    values.update(data=args.data, model=args.model, output=args.output)
    if args.no_packing:
        values["packing"] = False
    values["resume"] = args.resume or None
    values["progress"] = False if args.no_progress else None
    cfg = load_model_config(SFTConfig, values, args.config)
    result = run_sft(cfg)
    eval_text = f"{result.eval_loss:.4f}" if result.eval_loss is not None else "-"
    print(
        f"steps {result.steps}  train loss {result.first_loss:.4f} -> {result.last_loss:.4f}  "
        f"eval loss {eval_text}  {result.tokens_per_s:.0f} tokens/s"
    )
    print(f"model: {result.model_dir}  metrics: {result.output / 'metrics.jsonl'}")
    return 0


def _eval_source_flags(args: argparse.Namespace) -> None:
    """Refuse flags of the other task source: a run's split is evaluated whole (or capped
    by --max-tasks), fresh tasks are counted by --num-tasks."""
    # lazy, measured start-up cost: config ~120 ms
    from trajforge.finetune.config import FinetuneConfigError

    if args.tasks is not None and args.num_tasks is not None:
        raise FinetuneConfigError(
            "--num-tasks counts fresh tasks from seeds; with --tasks every task of --split is "
            "evaluated: cap them with --max-tasks N"
        )
    if args.tasks is None and args.split is not None:
        raise FinetuneConfigError("--split chooses a split of --tasks RUN; give --tasks")


#: EvalConfig fields that `trajforge eval` takes as flags of the same name.
_EVAL_FIELDS = (
    "tasks", "split", "max_tasks", "domain", "num_tasks", "k", "seed", "max_turns",
    "max_in_flight", "max_batch_size", "temperature", "max_tokens", "family", "base_url", "user",
    "user_model",
)  # fmt: skip


def cmd_eval(args: argparse.Namespace) -> int:
    # lazy, start-up: agents ~190 ms, config ~120 ms, evaluate ~300 ms
    from trajforge.finetune.agents import parse_agent
    from trajforge.finetune.config import FinetuneConfigError, load_model_config
    from trajforge.finetune.evaluate import (
        EvalConfig,
        format_table,
        run_attempts,
        score_attempts,
        transcripts_of,
    )

    _eval_source_flags(args)
    cfg = load_model_config(EvalConfig, {key: getattr(args, key) for key in _EVAL_FIELDS})
    try:
        specs = [parse_agent(m) for m in args.model]
    except ValueError as err:
        raise FinetuneConfigError(str(err)) from None
    domain, held = _held_out(cfg)
    if any(cfg.k > 1 and s.kind != "oracle" and cfg.temperature == 0 for s in specs):
        print("note: k > 1 at temperature 0 repeats greedy decoding; pass --temperature for spread")
    reports, transcripts = [], []
    for spec in specs:
        attempts = run_attempts(cfg, spec, held.tasks, domain)
        reports.append(score_attempts(cfg, spec, held.tasks, attempts, held.skipped, held.left_out))
        transcripts += transcripts_of(spec.label, attempts)
    print(format_table(reports))
    _write_eval_outputs(args, reports, transcripts)
    return 0


def _held_out(cfg: EvalConfig) -> tuple[Domain, HeldOut]:
    """(domain, HeldOut) of an EvalConfig: a run's split, read once (its tasks carry their
    domain), or fresh tasks of `domain`; what was skipped or left out is said."""
    # lazy, start-up: evaluate ~300 ms, domains ~200 ms
    from trajforge.finetune.evaluate import first_tasks, read_split, select_tasks
    from trajforge.generators.domains import get_domain

    if cfg.tasks is not None:
        run = read_split(cfg.tasks, cfg.split)
        domain, held = run.domain, first_tasks(run.tasks, cfg.max_tasks)
    else:
        domain = get_domain(cfg.domain)
        held = select_tasks(cfg, domain)
    if held.skipped:
        print(f"fresh tasks skipped (reason: count): {held.skipped}")
    if held.left_out:
        total = len(held.tasks) + held.left_out
        print(
            f"--max-tasks {cfg.max_tasks}: evaluating {len(held.tasks)} of {total} {cfg.split} "
            f"tasks, {held.left_out} left out"
        )
    return domain, held


def _write_eval_outputs(
    args: argparse.Namespace, reports: list[EvalReport], transcripts: list[AttemptTranscript]
) -> None:
    """`--json` (the reports) and `--transcripts` (every attempt), each written whole."""
    # lazy, start-up: evaluate ~300 ms
    from trajforge.finetune.evaluate import write_atomically, write_transcripts

    if args.json:
        write_atomically(
            args.json, json.dumps([r.model_dump(mode="json") for r in reports], indent=2)
        )
        print(f"\nReports written to {args.json}")
    if args.transcripts:
        write_transcripts(args.transcripts, transcripts)
        print(f"Transcripts ({len(transcripts)} attempts) written to {args.transcripts}")


def cmd_opd(args: argparse.Namespace) -> int:
    # lazy, measured start-up cost: config ~120 ms, train ~1.6 s
    from trajforge.finetune.config import load_model_config
    from trajforge.finetune.opd.config import OPDConfig
    from trajforge.finetune.opd.train import measure_heldout_kl, run_opd

    values = _flag_values(args, _OPD_FLAGS)
    values.update(student=args.student, teacher=args.teacher, output=args.output)
    values["resume"] = args.resume or None
    values["eval_pass_k"] = False if args.no_pass_k else None
    cfg = load_model_config(OPDConfig, values, args.config)
    if args.kl_only:
        print(f"held-out reverse KL {measure_heldout_kl(cfg):.4f}")
        return 0
    result = run_opd(cfg)
    print(
        f"steps {result.steps}  held-out reverse KL {result.heldout_kl_before:.4f} -> "
        f"{result.heldout_kl_after:.4f}"
    )
    print(f"model: {result.model_dir}  metrics: {result.output / 'metrics.jsonl'}")
    return 0


class FinetuneCommandError(ValueError):
    """A finetune or eval command refused its config (the message names the field and the
    fix). Defined here so the top-level CLI can catch it without importing the configs (and
    pydantic models) of finetune at start-up, which every `trajforge build` would pay for."""


def run(args: argparse.Namespace) -> int:
    """Dispatch a parsed `finetune ...` or `eval` command."""
    # lazy, measured start-up cost: config ~120 ms, families ~120 ms, sources ~190 ms
    from trajforge.finetune.config import FinetuneConfigError
    from trajforge.finetune.families import FamilyError
    from trajforge.finetune.sources import DataSourceError

    try:
        if args.command == "eval":
            return cmd_eval(args)
        if args.finetune_command == "opd":
            return cmd_opd(args)
        return cmd_sft(args)
    except (FinetuneConfigError, FamilyError, DataSourceError) as err:
        raise FinetuneCommandError(str(err)) from err


ERRORS = (FinetuneCommandError, FileExistsError, FileNotFoundError)
