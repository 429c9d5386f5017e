"""SFT tokens/s: trajforge's loop vs TRL's SFTTrainer, same tiny model, same data, same steps.

What is held equal, so that the ratio measures the training loops and nothing else:

- threads: each run is a fresh process with the same torch thread count (`--threads N`,
  default: torch's own default, reported per run), so neither side inherits the other's warm-up
  and the runs alternate (ours, TRL, TRL, ours, ...) against drift on a shared machine;
- timer scope, two of them, the same on both sides: `steps` is from the end of the first
  optimizer step to the end of the last (trajforge: metrics.jsonl's per-step clock; TRL: a
  callback's `on_step_end`), tokens of those steps (warm-up excluded); `whole` is the whole call
  from a model directory and data to a saved model (model and tokenizer loading, rendering and
  tokenising, training, saving; trajforge also writes a checkpoint), imports excluded (both
  sides import the same libraries before the clock starts, `warm_imports`);
- model, data, precision, packing, optimizer: the same tiny Llama-architecture model (built from
  a config, seeded) and conversations rendered with the Qwen2.5 template, one conversation per
  micro-batch (no packing on either side, so the token counts are identical), full fine-tuning,
  one epoch, torch's AdamW unfused on both sides (transformers defaults TRL to the fused kernel;
  trajforge uses the plain one), clipping at 1.0; fp32 on CPU (on a GPU: fp32 weights with a
  bf16 forward and gradient checkpointing, both sides). TRL masks with
  `assistant_only_loss=True` and the training template TRL swaps in for Qwen2.5, and computes
  its per-step token accuracy and entropy as it always does.

    python benchmarks/sft_bench.py --rows 96 --repeats 2              # default threads
    python benchmarks/sft_bench.py --rows 96 --repeats 2 --threads 1
    python benchmarks/sft_bench.py --data runs/tiny-data --repeats 2
    python benchmarks/sft_bench.py --hidden 1024 --rows 48 --repeats 2   # on a GPU
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.finetune.conftest import write_run  # noqa: E402
from trajforge.finetune.canonical import canonical_messages  # noqa: E402
from trajforge.finetune.config import SFTConfig  # noqa: E402
from trajforge.finetune.data import load_conversations  # noqa: E402
from trajforge.finetune.families import get_family  # noqa: E402
from trajforge.finetune.render import mask_segments  # noqa: E402
from trajforge.finetune.tiny import save_tiny  # noqa: E402

FAMILY = get_family("qwen2.5")
LR = 1e-3


def prepare(data: str | None, work: Path, rows: int, hidden: int) -> tuple[Path, Path]:
    """(run dir, tiny model dir): the given run, or synthetic conversations written as one."""
    run = Path(data) if data else write_run(work / "run", {"train": rows})
    texts = [
        "".join(s.text for s in mask_segments(c.messages, c.tools, FAMILY))
        for c in load_conversations(run, "train")
    ]
    return run, save_tiny(work / "base", texts, FAMILY, hidden=hidden)


def _timing(whole_s: float, tokens: int, steps: int, clock: list[tuple[float, int]]) -> dict:
    """A run's figures from its step clock: (time, tokens so far) at the end of every step."""
    (t1, n1), (tn, nn) = clock[0], clock[-1]
    return {"tokens": tokens, "steps": steps, "whole_s": whole_s, "steps_s": tn - t1,
            "steps_tokens": nn - n1, "steps_tokens_per_s": (nn - n1) / (tn - t1),
            "whole_tokens_per_s": tokens / whole_s}  # fmt: skip


def ours(run: Path, model: Path, out: Path, max_len: int) -> dict:
    from trajforge.finetune.sft import run_sft

    started = time.perf_counter()
    cfg = SFTConfig(data=str(run), model=str(model), output=str(out), method="full",
                    packing=False, batch_size=1, max_seq_len=max_len, row_tokens=max_len,
                    learning_rate=LR, progress=False, family="qwen2.5")  # fmt: skip
    result = run_sft(cfg)
    whole = time.perf_counter() - started
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    clock = [(x["elapsed_s"], x["tokens"]) for x in lines if "loss" in x]
    return _timing(whole, clock[-1][1], result.steps, clock)


def trl(run: Path, model_dir: Path, out: Path, max_len: int) -> dict:
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import SFTConfig as TRLConfig
    from trl import SFTTrainer

    class Counting(SFTTrainer):
        """SFTTrainer that counts the tokens it trains on (the same count as trajforge's)."""

        tokens_seen = 0

        def training_step(self, model, inputs, *args, **kwargs):
            self.tokens_seen += int(inputs["input_ids"].numel())
            return super().training_step(model, inputs, *args, **kwargs)

    class Clock(TrainerCallback):
        def __init__(self, trainer: Counting) -> None:
            self.trainer, self.ticks = trainer, []

        def on_step_end(self, args, state, control, **kwargs):
            self.ticks.append((time.perf_counter(), self.trainer.tokens_seen))

    started = time.perf_counter()
    convs = load_conversations(run, "train")
    rows = [
        {"messages": canonical_messages(c.messages, FAMILY), "tools": list(c.tools)} for c in convs
    ]
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    # what trajforge's `auto` does: on a GPU, fp32 weights with a bf16 forward (the Trainer's
    # bf16 over an fp32 model) and gradient checkpointing; on CPU, fp32 and no checkpointing
    gpu = torch.cuda.is_available()
    args = TRLConfig(output_dir=str(out), per_device_train_batch_size=1, num_train_epochs=1,
                     learning_rate=LR, max_length=max_len, assistant_only_loss=True,
                     packing=False, report_to=[], save_strategy="no", logging_steps=1000,
                     use_cpu=not gpu, dataloader_num_workers=0, disable_tqdm=True,
                     bf16=gpu and torch.cuda.is_bf16_supported(), gradient_checkpointing=gpu,
                     lr_scheduler_type="linear", optim="adamw_torch", weight_decay=0.0,
                     max_grad_norm=1.0)  # fmt: skip
    trainer = Counting(model=model, args=args, train_dataset=Dataset.from_list(rows),
                       processing_class=tokenizer)  # fmt: skip
    clock = Clock(trainer)
    trainer.add_callback(clock)
    trainer.train()
    trainer.save_model(str(out / "model"))
    whole = time.perf_counter() - started
    return _timing(whole, trainer.tokens_seen, trainer.state.global_step, clock.ticks)


RUNNERS = {"trajforge": ours, "trl": trl}


def warm_imports(name: str) -> None:
    """Import, before the clock starts, what either side imports lazily (so `whole` excludes
    imports on both sides alike): the libraries both use, and the runner's own entry point."""
    import accelerate  # noqa: F401
    import datasets  # noqa: F401
    import transformers.models.llama.modeling_llama  # noqa: F401
    from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: F401

    if name == "trl":
        import trl  # noqa: F401
    else:
        import trajforge.finetune.sft  # noqa: F401


def worker(args: argparse.Namespace) -> None:
    """One run in this (fresh) process; its figures as the last line of stdout."""
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    warm_imports(args.worker)
    result = RUNNERS[args.worker](Path(args.run), Path(args.model), Path(args.out), args.max_len)
    print(json.dumps({**result, "threads": torch.get_num_threads()}))


def spawn(name: str, run: Path, model: Path, out: Path, args: argparse.Namespace) -> dict:
    env = dict(os.environ)
    if args.threads:
        env.update(OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads))
    cmd = [sys.executable, __file__, "--worker", name, "--run", str(run), "--model", str(model),
           "--out", str(out), "--max-len", str(args.max_len), "--threads", str(args.threads)]  # fmt: skip
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{name} run failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=None, help="run directory (train split)")
    parser.add_argument("--rows", type=int, default=24, help="synthetic conversations")
    parser.add_argument("--max-len", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--hidden", type=int, default=64, help="tiny model width (GPU: 512+)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    parser.add_argument("--worker", choices=sorted(RUNNERS), help=argparse.SUPPRESS)
    parser.add_argument("--run", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    results: dict[str, list[dict]] = {"trajforge": [], "trl": []}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        run, model = prepare(args.data, work, args.rows, args.hidden)
        for r in range(args.repeats):
            order = ["trajforge", "trl"] if r % 2 == 0 else ["trl", "trajforge"]
            for name in order:
                results[name].append(spawn(name, run, model, work / f"{name}{r}", args))
    print(json.dumps(results, indent=1))
    print(f"{'runner':<11}{'threads':>8}{'tokens':>8}{'steps':>6}"
          f"{'steps tok/s (each run)':>28}{'whole tok/s (each run)':>28}")  # fmt: skip
    for name, runs in results.items():
        steps = ", ".join(f"{x['steps_tokens_per_s']:.0f}" for x in runs)
        whole = ", ".join(f"{x['whole_tokens_per_s']:.0f}" for x in runs)
        print(f"{name:<11}{runs[0]['threads']:>8}{runs[0]['tokens']:>8}{runs[0]['steps']:>6}"
              f"{steps:>28}{whole:>28}")  # fmt: skip
    for scope in ("steps", "whole"):
        key = f"{scope}_tokens_per_s"
        best = {k: max(x[key] for x in v) for k, v in results.items()}
        print(f"ratio trajforge / trl, {scope} scope, best of {args.repeats}: "
              f"{best['trajforge'] / best['trl']:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
