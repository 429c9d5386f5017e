"""Opt-in GPU smoke test of OPD: a few steps with vLLM sampling on small real models.

    TRAJFORGE_OPD_STUDENT=DIR TRAJFORGE_OPD_TEACHER=DIR python -m trajforge.finetune.opd.gpu_smoke

Both directories are local transformers models of one family sharing a tokenizer (for example
Qwen2.5-0.5B-Instruct as the student and Qwen2.5-1.5B-Instruct as the teacher); nothing is
downloaded. Without a CUDA GPU, vLLM or the two directories it prints why and exits 0 (skipped),
so `make opd-gpu-smoke` is safe anywhere. It trains 3 steps of 2 rollouts on fresh retail tasks
and fails if a step trains no token or the loss is not finite.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import sys
import tempfile
from pathlib import Path


def skip_reason() -> str | None:
    """Why the smoke test cannot run here, or None."""
    # lazy, measured start-up cost: torch ~1.1 s
    import torch

    if not torch.cuda.is_available():
        return "no CUDA GPU"
    if importlib.util.find_spec("vllm") is None:
        return "vLLM is not installed (pip install 'trajforge[gpu]')"
    for var in ("TRAJFORGE_OPD_STUDENT", "TRAJFORGE_OPD_TEACHER"):
        if not Path(os.environ.get(var, "")).is_dir():
            return f"{var} does not name a local model directory"
    return None


def main() -> int:
    reason = skip_reason()
    if reason is not None:
        print(f"opd gpu smoke: skipped ({reason})")
        return 0

    # lazy, measured start-up cost: config ~1.3 s, train ~1.4 s
    from trajforge.finetune.opd.config import OPDConfig
    from trajforge.finetune.opd.train import run_opd

    output = Path(tempfile.mkdtemp(prefix="opd-gpu-smoke-"))
    cfg = OPDConfig(
        student=os.environ["TRAJFORGE_OPD_STUDENT"],
        teacher=os.environ["TRAJFORGE_OPD_TEACHER"],
        output=str(output),
        domain="retail",
        num_tasks=4,
        steps=3,
        rollouts_per_step=2,
        learning_rate=1e-6,
        max_new_tokens=128,
        max_turns=4,
        eval_rollouts=2,
        eval_pass_k=False,
        sampler="vllm",
        device="cuda",
    )
    result = run_opd(cfg)
    steps = [json.loads(line) for line in (output / "metrics.jsonl").open() if '"loss"' in line]
    bad = [s for s in steps if s["trained_tokens"] == 0 or not math.isfinite(s["loss"])]
    print(
        f"opd gpu smoke: {result.steps} steps, held-out reverse KL "
        f"{result.heldout_kl_before:.4f} -> {result.heldout_kl_after:.4f}, metrics {output}"
    )
    return 1 if bad or len(steps) != cfg.steps else 0


if __name__ == "__main__":
    sys.exit(main())
