"""An `LLMClient` over a local transformers model directory, prompted with its family template.

Why here and not in generators.llm: a fine-tuned model must be prompted exactly as it was
trained, i.e. with its pinned family template (finetune/families.py); the generic `local`
backend serves the embedded GGUF model with its own prompt format. Tool calls are parsed from
the generated text with the runtime's tolerant parser.

Throughput: evaluation runs many attempts at once on one event loop (`run_all`), so concurrent
`complete()` calls are batched. The runtime's `MicroBatcher` collects the requests pending
within a few milliseconds (up to `max_batch_size`, requests with equal sampling params
together) and one left-padded `generate` answers them in a worker thread; each row is cut at
the family's end-of-turn token. Position ids come from the attention mask (transformers'
generate), so a row's greedy tokens are those of the same request alone (tested, fp32 CPU).
Sampling (temperature > 0) draws each row from its own `torch.Generator` seeded by the
request's seed (`_SeededSampler`), so a reply never depends on which requests shared its batch.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trajforge.finetune.families import TemplateFamily
from trajforge.finetune.modeling import inference_dtype, pick_device, resolve_precision
from trajforge.finetune.render import generation_prompt
from trajforge.generators.llm import parse_tool_calls
from trajforge.generators.llm.local import MicroBatcher, _SeededSampler
from trajforge.schemas import ChatRequest, ChatResponse, Message, ToolCall, ToolSpec, Usage


def reply_from_text(
    text: str, tools: Sequence[ToolSpec], family: TemplateFamily
) -> tuple[str | None, tuple[ToolCall, ...]]:
    """(content, calls) of generated text in the family's call format."""
    if not tools:
        return text, ()
    if family.arguments_key != "arguments":  # e.g. Llama 3.1: {"name": ..., "parameters": ...}
        text = text.replace(f'"{family.arguments_key}":', '"arguments":')
    return parse_tool_calls(text, tools)


class TransformersChat:
    """`LLMClient` over a transformers model directory; loads on first use; batches concurrent
    requests (see the module docstring)."""

    def __init__(
        self,
        model_dir: str | Path,
        family: TemplateFamily,
        device: str | None = None,
        max_batch_size: int = 8,
        batch_window_s: float = 0.005,
    ):

        if max_batch_size < 1:
            raise ValueError(f"max_batch_size: need >= 1, got {max_batch_size}")
        self.model_dir = Path(model_dir)
        self.family = family
        self.device = device or pick_device()
        self.model_name = self.model_dir.name
        self.max_batch_size = max_batch_size
        self.batch_window_s = batch_window_s
        self._loaded: tuple[Any, Any] | None = None
        self._lock = threading.Lock()
        self._batcher: MicroBatcher | None = None

    def _load(self) -> tuple[Any, Any]:
        if self._loaded is None:
            # lazy, measured start-up cost: transformers ~560 ms
            from transformers import AutoModelForCausalLM, AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(self.model_dir)
            tokenizer.padding_side = "left"  # rows end together: generation continues them all
            if tokenizer.pad_token is None:  # e.g. Llama 3.1; pads are masked out anyway
                tokenizer.pad_token = self.family.end_of_turn

            # bf16 on a GPU that has it, fp32 on CPU, whatever the checkpoint holds
            # (transformers 5 would load its own dtype: bf16 on CPU is slow on most CPUs)
            dtype = inference_dtype(resolve_precision("auto", self.device))
            model = AutoModelForCausalLM.from_pretrained(self.model_dir, dtype=dtype)
            model = model.to(self.device).eval()
            self._loaded = (model, tokenizer)
        return self._loaded

    def generate_batch(self, requests: Sequence[ChatRequest]) -> list[ChatResponse]:
        """One left-padded `generate` over requests with equal sampling params (blocking)."""
        # lazy, measured start-up cost: torch ~1.2 s, transformers ~560 ms
        import torch
        from transformers import LogitsProcessorList

        with self._lock:
            model, tokenizer = self._load()
            prompts = [
                generation_prompt(r.messages, [t.openai_schema() for t in r.tools], self.family)
                for r in requests
            ]
            encoded = tokenizer(
                prompts, add_special_tokens=False, padding=True, return_tensors="pt"
            ).to(self.device)
            eot = tokenizer.convert_tokens_to_ids(self.family.end_of_turn)
            sampled = any(r.sampling.temperature > 0 for r in requests)
            started = time.perf_counter()
            with torch.inference_mode():
                out = model.generate(
                    **encoded,
                    max_new_tokens=max(r.sampling.max_tokens for r in requests),
                    do_sample=False,  # sampled rows: `_SeededSampler` leaves one token
                    logits_processor=LogitsProcessorList(
                        [_SeededSampler(requests)] if sampled else []
                    ),
                    eos_token_id=eot,
                    pad_token_id=tokenizer.pad_token_id,
                )
            latency = time.perf_counter() - started
        width = encoded["input_ids"].shape[1]
        prompt_lengths = encoded["attention_mask"].sum(dim=1).tolist()
        return [
            self._response(
                tokenizer,
                request,
                out[row, width:].tolist(),
                eot,
                int(prompt_lengths[row]),
                latency,
            )
            for row, request in enumerate(requests)
        ]

    def _response(
        self,
        tokenizer: Any,
        request: ChatRequest,
        new: list[int],
        eot: int,
        prompt_tokens: int,
        latency_s: float,
    ) -> ChatResponse:
        """One row's reply: its tokens up to its end-of-turn (the rest is padding)."""
        new = new[: request.sampling.max_tokens]
        finish = "stop" if eot in new else "length"
        new = new[: new.index(eot)] if eot in new else new
        text = tokenizer.decode(new, skip_special_tokens=True)
        content, calls = reply_from_text(text, request.tools, self.family)
        return ChatResponse(
            message=Message(role="assistant", content=content, tool_calls=calls),
            model=self.model_name,
            finish_reason="tool_calls" if calls else finish,
            usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=len(new)),
            latency_s=latency_s,
        )

    def generate_now(self, request: ChatRequest) -> ChatResponse:
        """One request alone, without the batcher (scripts, tests, the unbatched reference)."""
        return self.generate_batch([request])[0]

    async def complete(self, request: ChatRequest) -> ChatResponse:
        if self._batcher is None:
            self._batcher = MicroBatcher(
                self.generate_batch, self.max_batch_size, self.batch_window_s
            )
        return await self._batcher.submit(request)
