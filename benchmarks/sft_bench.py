"""SFT tokens/s: trajforge's loop vs TRL's SFTTrainer, same tiny model, same data, same steps.

Both train the same tiny Llama-architecture model (built from a config, seeded) on the same
conversations rendered with the same Qwen2.5 template, one conversation per micro-batch (no
packing on either side, so the token counts are identical), full fine-tuning, fp32 on CPU (on
a GPU: fp32 weights with a bf16 forward and gradient checkpointing, both sides), for one epoch.
Tokens/s = tokens in the epoch / wall time of the training loop (model and data loading
excluded on both sides). TRL masks with
`assistant_only_loss=True` and the training template TRL swaps in for Qwen2.5.

    python benchmarks/sft_bench.py --data runs/tiny-data --repeats 2
    python benchmarks/sft_bench.py                 # synthetic conversations, no run dir needed
    python benchmarks/sft_bench.py --hidden 1024 --rows 64 --repeats 2   # on a GPU
"""

from __future__ import annotations

import argparse
import json
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
from trajforge.finetune.sft import run_sft  # noqa: E402
from trajforge.finetune.tiny import save_tiny  # noqa: E402

FAMILY = get_family("qwen2.5")


def prepare(data: str | None, work: Path, rows: int, hidden: int) -> tuple[Path, Path]:
    """(run dir, tiny model dir): the given run, or synthetic conversations written as one."""
    run = Path(data) if data else write_run(work / "run", {"train": rows})
    texts = [
        "".join(s.text for s in mask_segments(c.messages, c.tools, FAMILY))
        for c in load_conversations(run, "train")
    ]
    return run, save_tiny(work / "base", texts, FAMILY, hidden=hidden)


def ours(run: Path, model: Path, out: Path, max_len: int) -> dict:
    cfg = SFTConfig(data=str(run), model=str(model), output=str(out), method="full",
                    packing=False, batch_size=1, max_seq_len=max_len, row_tokens=max_len,
                    learning_rate=1e-3, progress=False, family="qwen2.5")  # fmt: skip
    result = run_sft(cfg)
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    last = [x for x in lines if "loss" in x][-1]
    return {"tokens": last["tokens"], "seconds": last["elapsed_s"], "steps": result.steps,
            "tokens_per_s": last["tokens"] / last["elapsed_s"]}  # fmt: skip


def trl(run: Path, model_dir: Path, out: Path, max_len: int) -> dict:
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig as TRLConfig
    from trl import SFTTrainer

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
                     learning_rate=1e-3, max_length=max_len, assistant_only_loss=True,
                     packing=False, report_to=[], save_strategy="no", logging_steps=1000,
                     use_cpu=not gpu, dataloader_num_workers=0, disable_tqdm=True,
                     bf16=gpu and torch.cuda.is_bf16_supported(), gradient_checkpointing=gpu,
                     lr_scheduler_type="linear")  # fmt: skip
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows),
                         processing_class=tokenizer)  # fmt: skip
    tokens = sum(len(x["input_ids"]) for x in trainer.train_dataset)
    started = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - started
    return {"tokens": tokens, "seconds": seconds, "steps": trainer.state.global_step,
            "tokens_per_s": tokens / seconds}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=None, help="run directory (train split)")
    parser.add_argument("--rows", type=int, default=24, help="synthetic conversations")
    parser.add_argument("--max-len", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--hidden", type=int, default=64, help="tiny model width (GPU: 512+)")
    args = parser.parse_args()
    results = {"trajforge": [], "trl": []}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        run, model = prepare(args.data, work, args.rows, args.hidden)
        for r in range(args.repeats):
            results["trajforge"].append(ours(run, model, work / f"ours{r}", args.max_len))
            results["trl"].append(trl(run, model, work / f"trl{r}", args.max_len))
    best = {k: max(x["tokens_per_s"] for x in v) for k, v in results.items()}
    print(json.dumps(results, indent=1))
    print(f"{'runner':<12}{'tokens':>10}{'steps':>7}{'best tokens/s':>16}")
    for name, runs in results.items():
        print(f"{name:<12}{runs[0]['tokens']:>10}{runs[0]['steps']:>7}{best[name]:>16.0f}")
    print(f"ratio trajforge / trl tokens/s: {best['trajforge'] / best['trl']:.2f}")


if __name__ == "__main__":
    main()
