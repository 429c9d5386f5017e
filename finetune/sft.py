"""Supervised fine-tuning on a trajforge run: one loop that reads top to bottom.

    conversations -> render + mask (family template) -> tokenised samples
    -> per epoch: seeded shuffle -> micro-batches (packed or padded) -> groups of grad_accum
    -> per step: loss = sum of trained-token losses / trained tokens in the step; clip; AdamW
    -> metrics.jsonl, validation loss, checkpoints; final model in OUTPUT/model

Why our own loop and not TRL's SFTTrainer: TRL's assistant-only loss needs `{% generation %}`
markers, i.e. a patched template per family (it ships them for some families only, none for
Llama 3.1 tool use or Hermes), and its Qwen3 markers also train the newline after each
`<|im_end|>`, a token the model never generates (tests/finetune/test_trl_masks.py). Here the
mask comes from the prefix-diff of the pinned real template for every family, and the step loss
is the exact mean over the step's trained tokens across accumulation and processes. It is also
faster than SFTTrainer on benchmarks/sft_bench.py with the same threads and timer scope (a
tiny model, so that measures per-step overhead; see benchmarks/README.md).

Multi-GPU: under a launcher the loop runs through accelerate (distributed.py), so
`accelerate launch --num_processes N -m trajforge.pipelines.cli finetune sft ...` trains
data-parallel (DDP): a step is grad_accum x N micro-batches, each process takes every N-th,
and process 0 writes the metrics, checkpoints and model.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict
from tqdm import tqdm

from trajforge.finetune import families
from trajforge.finetune.batching import (
    Batch,
    micro_batch_groups,
    micro_batches,
    share_of_step,
    to_batch,
    truncate,
)
from trajforge.finetune.checkpoint import latest_checkpoint, load_checkpoint, save_checkpoint
from trajforge.finetune.config import SFTConfig
from trajforge.finetune.distributed import start_processes, sum_over_processes
from trajforge.finetune.families import get_family
from trajforge.finetune.loss import backward_share, loss_sums
from trajforge.finetune.modeling import load_for_training, save_final
from trajforge.finetune.render import TemplateError, TokenizedSample, render_and_mask
from trajforge.finetune.sources import has_split, load_training_conversations
from trajforge.schemas import derive_seed

METRICS_FILE = "metrics.jsonl"


class StepMetrics(BaseModel):
    """One line of metrics.jsonl (`eval_loss` only on evaluation lines)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    step: int
    loss: float | None = None
    eval_loss: float | None = None
    lr: float | None = None
    trained_tokens: int = 0
    tokens: int = 0
    tokens_per_s: float = 0.0
    elapsed_s: float = 0.0


@dataclass(frozen=True)
class SFTResult:
    output: Path
    model_dir: Path
    steps: int
    first_loss: float
    last_loss: float
    eval_loss: float | None
    tokens_per_s: float


def resolve_family(cfg: SFTConfig) -> str:
    """The family to render with: `--family` if it fits the model's tokenizer, else detected
    (`families.resolve_family`); never a silent default."""
    # lazy, measured start-up cost: transformers ~560 ms
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(cfg.model)
    return families.resolve_family(tokenizer, cfg.family, cfg.model).name


class DataStats(BaseModel):
    """What became of a split's conversations (written to OUT/data.json): every drop typed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    split: str
    conversations: int
    kept: int
    truncated: int  # kept, cut to max_seq_len
    dropped: dict[str, int]  # reason -> count ("template_error", "no_trained_tokens")


def tokenise_split(
    cfg: SFTConfig, split: str, tokenizer: Any, family_name: str
) -> tuple[list[TokenizedSample], DataStats]:
    """Render, mask and tokenise a split; conversations that cannot train are counted, not kept."""
    family = get_family(family_name)
    conversations = load_training_conversations(cfg.data, split)
    kept: list[TokenizedSample] = []
    dropped: dict[str, int] = {}
    truncated = 0
    for c in conversations:
        try:
            full = render_and_mask(c.id, c.messages, c.tools, family, tokenizer)
        except TemplateError:
            dropped["template_error"] = dropped.get("template_error", 0) + 1
            continue
        sample = truncate(full, cfg.max_seq_len)
        truncated += sample is not full
        if sample.num_trained == 0:
            dropped["no_trained_tokens"] = dropped.get("no_trained_tokens", 0) + 1
            continue
        kept.append(sample)
    stats = DataStats(
        split=split,
        conversations=len(conversations),
        kept=len(kept),
        truncated=truncated,
        dropped=dropped,
    )
    return kept, stats


def epoch_groups(
    cfg: SFTConfig, samples: Sequence[TokenizedSample], epoch: int
) -> list[list[TokenizedSample]]:
    """One epoch's micro-batches as samples, in the seeded order of that epoch."""
    order = list(range(len(samples)))
    random.Random(derive_seed("sft", cfg.seed, epoch)).shuffle(order)
    return micro_batch_groups(
        [samples[i] for i in order],
        packing=cfg.packing,
        tokens=cfg.row_tokens,
        batch_size=cfg.batch_size,
    )


def step_schedule(
    cfg: SFTConfig, samples: Sequence[TokenizedSample], pad_id: int, processes: int = 1
) -> Iterator[list[Batch]]:
    """The optimizer steps' micro-batch groups (grad_accum per process), epoch after epoch: a
    pure function of the seed, the same in every process. Tensors are built a step at a time."""
    per_step = cfg.grad_accum * processes
    for epoch in range(cfg.epochs):
        groups = epoch_groups(cfg, samples, epoch)
        for i in range(0, len(groups), per_step):
            yield [
                to_batch(g, packing=cfg.packing, pad_id=pad_id) for g in groups[i : i + per_step]
            ]


def total_steps(cfg: SFTConfig, samples: Sequence[TokenizedSample], processes: int = 1) -> int:
    """The schedule's length, counted without building a tensor and only as far as `max_steps`
    (with `--epochs 1000 --max-steps N`, building every epoch's batches to count them cost
    minutes of CPU before the first step)."""
    per_step = cfg.grad_accum * processes
    steps = 0
    for epoch in range(cfg.epochs):
        steps += -(-len(epoch_groups(cfg, samples, epoch)) // per_step)
        if cfg.max_steps and steps >= cfg.max_steps:
            return cfg.max_steps
    return steps


def _scheduler(optimizer: Any, warmup: int, total: int) -> Any:
    """Linear warmup, then linear decay to 10% of the peak learning rate."""
    # lazy, measured start-up cost: torch ~1.1 s
    import torch

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.1, 1.0 - 0.9 * (step - warmup) / max(1, total - warmup))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def _write(output: Path, metrics: StepMetrics) -> None:
    with (output / METRICS_FILE).open("a") as f:
        f.write(json.dumps(metrics.model_dump(exclude_none=True)) + "\n")


def _trained_share(micro: Sequence[Batch], rank: int, processes: int) -> tuple[list[Batch], int]:
    """(this process's micro-batches of a step, the step's trained tokens over all processes).
    Batches with nothing to train are left out before sharing, as one process always did."""
    trained = [b for b in micro if b.num_trained]
    total = sum(b.num_trained for b in trained)
    return (share_of_step(trained, rank, processes) if trained else []), total


@dataclass
class _Run:
    """What the steps of one training run share (built by `_start`)."""

    cfg: SFTConfig
    world: Any  # accelerate's Accelerator (distributed.start_processes)
    output: Path
    model: Any  # prepared for the processes (DDP-wrapped under a launcher)
    raw: Any  # the unwrapped model: what is evaluated and saved
    optimizer: Any
    scheduler: Any
    params: list[Any]
    precision: Any
    pad_id: int
    steps: int
    start: int
    eval_batches: list[Batch]

    @property
    def main(self) -> bool:
        return bool(self.world.is_main_process)

    @property
    def device(self) -> str:
        return str(self.world.device)


def run_sft(cfg: SFTConfig) -> SFTResult:
    """Train as configured; resumable from the latest checkpoint with `resume=True`. In every
    process of an `accelerate launch`; process 0 alone writes to the output directory."""
    world = start_processes()
    output = _claim_output(cfg, world)
    _seed_torch(cfg.seed)  # before the model is built: a model from a config draws its weights
    family = resolve_family(cfg)
    model, tokenizer, precision = load_for_training(cfg, str(world.device))
    train, validation = _tokenised_data(cfg, tokenizer, family, output, world.is_main_process)
    run = _start(cfg, world, output, model, precision, tokenizer.pad_token_id, train, validation)
    started = time.perf_counter()
    losses, tokens_seen = _train(run, train, started)
    eval_loss = _evaluate(run, run.steps)
    if run.main:
        save_checkpoint(output, run.steps, run.raw, run.optimizer, run.scheduler)
    elapsed = time.perf_counter() - started
    model_dir = output / "model"
    if run.main:
        model_dir = save_final(run.raw, tokenizer, output, family, precision.save_dtype(cfg.model))
    world.wait_for_everyone()  # no process returns before the model is written
    return SFTResult(
        output=output,
        model_dir=model_dir,
        steps=run.steps,
        first_loss=losses[0] if losses else math.nan,
        last_loss=losses[-1] if losses else math.nan,
        eval_loss=eval_loss,
        tokens_per_s=tokens_seen / elapsed if elapsed else 0.0,
    )


def _seed_torch(seed: int) -> None:
    import torch  # lazy: the CLI imports this module, and torch costs seconds to import

    torch.manual_seed(seed)


def _claim_output(cfg: SFTConfig, world: Any) -> Path:
    """The output directory, made; a previous run there is refused unless resuming."""
    output = Path(cfg.output)
    output.mkdir(parents=True, exist_ok=True)
    if not cfg.resume and (latest_checkpoint(output) or (output / METRICS_FILE).exists()):
        raise FileExistsError(f"{output} holds a previous run; pass --resume or a new --output")
    world.wait_for_everyone()  # every process has looked before process 0 writes
    return output


def _tokenised_data(
    cfg: SFTConfig, tokenizer: Any, family: str, output: Path, main: bool
) -> tuple[list[TokenizedSample], list[TokenizedSample]]:
    """The train and validation samples; what became of each split goes to OUT/data.json."""
    train, train_stats = tokenise_split(cfg, "train", tokenizer, family)
    validation, val_stats = (
        tokenise_split(cfg, "validation", tokenizer, family)
        if has_split(cfg.data, "validation")
        else ([], None)
    )
    if main:
        stats = [s.model_dump() for s in (train_stats, val_stats) if s is not None]
        (output / "data.json").write_text(json.dumps(stats, indent=2))
    if not train:
        raise ValueError(f"{cfg.data}: no trainable train conversations ({train_stats.dropped})")
    return train, validation


def _start(
    cfg: SFTConfig,
    world: Any,
    output: Path,
    model: Any,
    precision: Any,
    pad_id: int,
    train: Sequence[TokenizedSample],
    validation: Sequence[TokenizedSample],
) -> _Run:
    """Seeded optimizer and schedule over the planned steps, the latest checkpoint loaded
    when resuming, everything prepared for the processes."""
    import torch  # lazy: the CLI imports this module, and torch costs seconds to import

    steps = total_steps(cfg, train, world.num_processes)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    scheduler = _scheduler(optimizer, cfg.warmup_steps, steps)
    checkpoint = latest_checkpoint(output) if cfg.resume else None
    start = load_checkpoint(checkpoint, model, optimizer, scheduler) if checkpoint else 0
    raw = model
    model, optimizer, scheduler = world.prepare(model, optimizer, scheduler)
    eval_batches = micro_batches(
        list(validation),
        packing=cfg.packing,
        tokens=cfg.row_tokens,
        batch_size=cfg.batch_size,
        pad_id=pad_id,
    )
    return _Run(cfg, world, output, model, raw, optimizer, scheduler, params, precision,
                pad_id, steps, start, eval_batches)  # fmt: skip


def _evaluate(run: _Run, step: int) -> float | None:
    """Each process evaluates every N-th validation batch; the sums are added up."""
    if not run.eval_batches:
        return None
    world = run.world
    run.raw.eval()
    mine = run.eval_batches[world.process_index :: world.num_processes]
    total, count = loss_sums(run.raw, mine, run.device, run.precision)
    run.raw.train()
    total = sum_over_processes(world, total)
    count = round(sum_over_processes(world, count))
    value = total / count if count else float("nan")
    if run.main:
        _write(run.output, StepMetrics(step=step, eval_loss=value))
    return value


def _train(run: _Run, train: Sequence[TokenizedSample], started: float) -> tuple[list[float], int]:
    """The optimizer steps after `run.start`, with metrics, evaluations and checkpoints as
    configured (throughput timed from `started`): (each step's loss, tokens seen)."""

    cfg, world = run.cfg, run.world
    run.model.train()
    losses: list[float] = []
    tokens_seen = 0
    shown = cfg.progress and run.main
    bar = tqdm(total=run.steps, initial=run.start, desc="sft", unit="step", disable=not shown)
    schedule = step_schedule(cfg, train, run.pad_id, world.num_processes)
    for step, micro in enumerate(schedule, start=1):
        if step > run.steps:
            break
        if step <= run.start:
            continue
        loss, trained = _optimizer_step(run, micro)
        losses.append(loss)
        tokens_seen += sum(b.num_tokens for b in micro)
        elapsed = time.perf_counter() - started
        if run.main and (step % cfg.log_every == 0 or step == run.steps):
            _write(run.output, _step_metrics(run, step, loss, trained, tokens_seen, elapsed))
        bar.update(1)
        bar.set_postfix(loss=f"{loss:.3f}")
        _between_steps(run, step)
    bar.close()
    return losses, tokens_seen


def _optimizer_step(run: _Run, micro: Sequence[Batch]) -> tuple[float, int]:
    """One step over its micro-batches: (the mean loss over the step's trained tokens in
    every process, those tokens)."""
    world = run.world
    share, trained = _trained_share(micro, world.process_index, world.num_processes)
    loss = 0.0
    if trained:
        local = backward_share(run.model, share, trained, processes=world.num_processes,
                               sync=world, device=run.device, precision=run.precision)  # fmt: skip
        loss = sum_over_processes(world, local) / trained
    if run.cfg.max_grad_norm:
        world.clip_grad_norm_(run.params, run.cfg.max_grad_norm)
    run.optimizer.step()
    run.scheduler.step()
    run.optimizer.zero_grad(set_to_none=True)
    return loss, trained


def _step_metrics(
    run: _Run, step: int, loss: float, trained: int, tokens_seen: int, elapsed: float
) -> StepMetrics:
    return StepMetrics(
        step=step,
        loss=loss,
        lr=run.scheduler.get_last_lr()[0],
        trained_tokens=trained,
        tokens=tokens_seen,
        tokens_per_s=tokens_seen / elapsed,
        elapsed_s=elapsed,
    )


def _between_steps(run: _Run, step: int) -> None:
    """An evaluation and a checkpoint when they fall due (the last step has its own)."""
    cfg = run.cfg
    if cfg.eval_every and step % cfg.eval_every == 0 and step < run.steps:
        _evaluate(run, step)
    if run.main and cfg.save_every and step % cfg.save_every == 0 and step < run.steps:
        save_checkpoint(run.output, step, run.raw, run.optimizer, run.scheduler)
