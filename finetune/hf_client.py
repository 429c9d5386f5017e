"""An `LLMClient` over a local transformers model directory, prompted with its family template.

Why here and not in generators.llm: a fine-tuned model must be prompted exactly as it was
trained, i.e. with its pinned family template (finetune/families.py); the generic `local`
backend serves the embedded GGUF model with its own prompt format. Tool calls are parsed from
the generated text with the runtime's tolerant parser. Generation is greedy or seeded sampling,
one request at a time in a worker thread so the event loop keeps serving other rollouts.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trajforge.finetune.families import TemplateFamily
from trajforge.finetune.render import generation_prompt
from trajforge.generators.llm import parse_tool_calls
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
    def __init__(self, model_dir: str | Path, family: TemplateFamily, device: str | None = None):
        from trajforge.finetune.modeling import pick_device

        self.model_dir = Path(model_dir)
        self.family = family
        self.device = device or pick_device()
        self.model_name = self.model_dir.name
        self._loaded: tuple[Any, Any] | None = None
        self._lock = threading.Lock()

    def _load(self) -> tuple[Any, Any]:
        if self._loaded is None:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(self.model_dir)
            from trajforge.finetune.modeling import inference_dtype, resolve_precision

            # bf16 on a GPU that has it, fp32 on CPU, whatever the checkpoint holds
            # (transformers 5 would load its own dtype: bf16 on CPU is slow on most CPUs)
            dtype = inference_dtype(resolve_precision("auto", self.device))
            model = AutoModelForCausalLM.from_pretrained(self.model_dir, dtype=dtype)
            model = model.to(self.device).eval()
            self._loaded = (model, tokenizer)
        return self._loaded

    def generate_now(self, request: ChatRequest) -> ChatResponse:
        import torch

        with self._lock:
            model, tokenizer = self._load()
            tools = [t.openai_schema() for t in request.tools]
            prompt = generation_prompt(request.messages, tools, self.family)
            ids = tokenizer(prompt, add_special_tokens=False, return_tensors="pt")["input_ids"]
            eot = tokenizer.convert_tokens_to_ids(self.family.end_of_turn)
            started = time.perf_counter()
            sampled = request.sampling.temperature > 0
            if sampled:
                torch.manual_seed(request.seed or 0)
            with torch.inference_mode():
                out = model.generate(
                    ids.to(self.device),
                    max_new_tokens=request.sampling.max_tokens,
                    do_sample=sampled,
                    temperature=request.sampling.temperature if sampled else None,
                    top_p=request.sampling.top_p if sampled else None,
                    eos_token_id=eot,
                    pad_token_id=tokenizer.pad_token_id,
                )
        new = out[0, ids.shape[1] :].tolist()
        finish = "stop" if eot in new else "length"
        new = new[: new.index(eot)] if eot in new else new
        text = tokenizer.decode(new, skip_special_tokens=True)
        content, calls = reply_from_text(text, request.tools, self.family)
        return ChatResponse(
            message=Message(role="assistant", content=content, tool_calls=calls),
            model=self.model_name,
            finish_reason="tool_calls" if calls else finish,
            usage=Usage(prompt_tokens=int(ids.shape[1]), completion_tokens=len(new)),
            latency_s=time.perf_counter() - started,
        )

    async def complete(self, request: ChatRequest) -> ChatResponse:
        return await asyncio.to_thread(self.generate_now, request)
