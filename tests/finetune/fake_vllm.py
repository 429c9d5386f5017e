"""A CPU stand-in for the slice of vLLM's API trajforge calls, for tests where vLLM is absent.

It is a real engine, not a mock: `LLM(model=DIR)` loads the directory's weights with
transformers in bf16 (as vLLM serves them, so its log-probs differ from an fp32 student's as a
real engine's do) and samples with them; `generate` takes token-id or text prompts and returns
vLLM-shaped `RequestOutput`s with per-token `Logprob`s; `chat` renders the model's OWN chat
template (vLLM's behaviour, which a fine-tuned model must not be evaluated with);
`llm_engine.model_executor.driver_worker.model_runner.model.load_weights` takes
`(name, tensor)` pairs as vLLM's model does; `reset_prefix_cache` is counted. Every engine a
module builds is listed in that module's `engines`, so a test can count GPU copies.

    monkeypatch.setitem(sys.modules, "vllm", fake_vllm_module())
"""

from __future__ import annotations

import types
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch


@dataclass
class SamplingParams:
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 16
    seed: int | None = None
    stop: list[str] | None = None
    stop_token_ids: list[int] | None = None
    logprobs: int | None = None
    skip_special_tokens: bool = True
    guided_decoding: Any = None
    allowed_token_ids: list[int] | None = None


@dataclass(frozen=True)
class Logprob:
    logprob: float


@dataclass
class CompletionOutput:
    token_ids: list[int]
    text: str
    logprobs: list[dict[int, Logprob]] | None
    finish_reason: str


@dataclass
class RequestOutput:
    prompt_token_ids: list[int]
    outputs: list[CompletionOutput]


class FakeModel:
    """What vLLM's model runner holds: `load_weights` from (name, tensor) pairs."""

    def __init__(self, hf_model: Any):
        self.hf = hf_model
        self.loads = 0

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> None:
        state = self.hf.state_dict()
        with torch.no_grad():
            for name, tensor in weights:
                state[name].copy_(tensor)
        self.loads += 1


@dataclass
class LLM:
    """`vllm.LLM` over a transformers model in bf16 on the CPU (see the module docstring)."""

    model: str
    dtype: str = "auto"
    gpu_memory_utilization: float = 0.9
    enforce_eager: bool = False
    max_model_len: int | None = None
    tensor_parallel_size: int = 1
    calls: list[tuple[str, list[list[int]]]] = field(default_factory=list)
    params: list[SamplingParams] = field(default_factory=list)
    prefix_cache_resets: int = 0

    def __post_init__(self) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(self.model)
        hf = AutoModelForCausalLM.from_pretrained(self.model, dtype=torch.bfloat16).eval()
        self.runner_model = FakeModel(hf)
        runner = types.SimpleNamespace(model=self.runner_model)
        worker = types.SimpleNamespace(model_runner=runner)
        self.llm_engine = types.SimpleNamespace(
            model_executor=types.SimpleNamespace(driver_worker=worker)
        )

    @property
    def weights(self) -> dict[str, torch.Tensor]:
        return self.runner_model.hf.state_dict()

    def generate(
        self, prompts: Sequence[Any], sampling_params: Any, use_tqdm: bool = True
    ) -> list[RequestOutput]:
        params = (
            sampling_params
            if isinstance(sampling_params, list)
            else [sampling_params] * len(prompts)
        )
        ids = [self._prompt_ids(p) for p in prompts]
        self.calls.append(("generate", ids))
        return [self._one(i, p) for i, p in zip(ids, params, strict=True)]

    def chat(
        self,
        messages: Sequence[Sequence[dict[str, Any]]],
        sampling_params: Any,
        use_tqdm: bool = True,
        tools: list[dict[str, Any]] | None = None,
    ) -> list[RequestOutput]:
        texts = [
            self.tokenizer.apply_chat_template(
                list(m), tools=tools, tokenize=False, add_generation_prompt=True
            )
            for m in messages
        ]
        ids = [self._prompt_ids({"prompt": t}) for t in texts]
        self.calls.append(("chat", ids))
        params = (
            sampling_params if isinstance(sampling_params, list) else [sampling_params] * len(ids)
        )
        return [self._one(i, p) for i, p in zip(ids, params, strict=True)]

    def reset_prefix_cache(self) -> None:
        self.prefix_cache_resets += 1

    def _prompt_ids(self, prompt: Any) -> list[int]:
        if isinstance(prompt, dict) and "prompt_token_ids" in prompt:
            return list(prompt["prompt_token_ids"])
        text = prompt["prompt"] if isinstance(prompt, dict) else prompt
        return list(self.tokenizer(text)["input_ids"])

    def _one(self, prompt_ids: list[int], params: SamplingParams) -> RequestOutput:
        from trajforge.finetune.opd.sampling import TransformersSampler

        self.params.append(params)
        stop = list(params.stop_token_ids or [self.tokenizer.eos_token_id])
        allowed = params.allowed_token_ids
        if allowed is not None and allowed != list(range(len(allowed))):
            raise NotImplementedError("fake vLLM: allowed_token_ids must be range(n)")
        sampler = TransformersSampler(
            self.runner_model.hf, stop if len(stop) == 1 else [], params.max_tokens,
            params.temperature, vocab_size=len(allowed) if allowed is not None else None,
        )  # fmt: skip
        drawn = sampler.sample(prompt_ids, params.seed or 0)
        tokens, logprobs = list(drawn.token_ids), list(drawn.logprobs)
        end = next((i + 1 for i, t in enumerate(tokens) if t in stop), len(tokens))
        tokens, logprobs = tokens[:end], logprobs[:end]
        finish = "stop" if tokens and tokens[-1] in stop else "length"
        text = self.tokenizer.decode(tokens, skip_special_tokens=params.skip_special_tokens)
        steps = [{t: Logprob(lp)} for t, lp in zip(tokens, logprobs, strict=True)]
        wanted = params.logprobs is not None
        return RequestOutput(
            prompt_ids, [CompletionOutput(tokens, text, steps if wanted else None, finish)]
        )


def fake_vllm_module() -> types.ModuleType:
    """A fresh `vllm` module whose engines are listed in its `engines`."""
    module = types.ModuleType("vllm")
    module.engines = []  # type: ignore[attr-defined]

    class ListedLLM(LLM):
        def __post_init__(self) -> None:
            super().__post_init__()
            module.engines.append(self)  # type: ignore[attr-defined]

    module.LLM = ListedLLM  # type: ignore[attr-defined]
    module.SamplingParams = SamplingParams  # type: ignore[attr-defined]
    module.sampling_params = types.SimpleNamespace()  # type: ignore[attr-defined]
    return module
