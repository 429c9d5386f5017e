"""Student (or Guided teacher) sampling with an in-process vLLM engine on a GPU.

Importing this module never needs vLLM; constructing the sampler does (the `gpu` extra). The
engine is given token ids, never text, so the token-id invariant holds as with transformers,
and returns each sampled token's log-probability (`logprobs=0`: the sampled token's own).
After every optimizer step (and after a resume) the trainer calls `sync(model)`, which loads
the student's current weights into the engine, so rollouts stay on-policy. The engine's
log-probs are kept for a diagnostic only: the trainer recomputes log p_old with the student
(train.py). With `vocab_size` the engine samples only the tokenizer's ids (`allowed_token_ids`):
rows of a padded embedding are no token, and the student's recomputation cuts them off.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from trajforge.generators.agent import SampledTokens

INSTALL_HINT = "sampler: vllm needs vLLM on a CUDA machine: pip install 'trajforge[gpu]'"


class VLLMSampler:
    """`TokenSampler` over `vllm.LLM` (one engine per model directory)."""

    def __init__(
        self,
        model_dir: str,
        stop_ids: Sequence[int],
        max_new_tokens: int,
        temperature: float,
        gpu_memory_utilization: float = 0.35,
        vocab_size: int | None = None,
    ):
        # The engine core must live in this process for `sync` to reach its model.
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        try:
            # lazy: optional dependency (the gpu extra)
            import vllm
        except ImportError as exc:
            raise ImportError(f"{INSTALL_HINT}: {exc}") from exc
        self._vllm = vllm
        self._engine = vllm.LLM(
            model=model_dir, gpu_memory_utilization=gpu_memory_utilization, enforce_eager=True
        )
        self.stop_ids = list(stop_ids)
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.allowed = list(range(vocab_size)) if vocab_size is not None else None

    def sample(self, prompt_ids: Sequence[int], seed: int) -> SampledTokens:
        params = self._vllm.SamplingParams(
            temperature=self.temperature,
            max_tokens=self.max_new_tokens,
            seed=seed % (1 << 31),
            stop_token_ids=self.stop_ids,
            logprobs=0,
            skip_special_tokens=False,
            allowed_token_ids=self.allowed,
        )
        prompt = {"prompt_token_ids": list(prompt_ids)}
        (result,) = self._engine.generate([prompt], params, use_tqdm=False)
        out = result.outputs[0]
        ids = list(out.token_ids)
        logprobs = [
            float(step[token].logprob) for token, step in zip(ids, out.logprobs, strict=True)
        ]
        return SampledTokens(tuple(ids), tuple(logprobs))

    def sync(self, model: Any) -> None:
        """Load the trained student's weights into the engine (same architecture and names),
        then drop its prefix cache, whose KV entries were computed with the old weights
        (the colocated path TRL's GRPO uses)."""
        weights = [(name, p.detach()) for name, p in model.state_dict().items()]
        executor = self._engine.llm_engine.model_executor
        worker = executor.driver_worker
        runner = getattr(worker, "model_runner", None) or worker.worker.model_runner
        runner.model.load_weights(weights)
        self._engine.reset_prefix_cache()
