"""An in-process vLLM engine on a GPU (optional extra: `pip install trajforge[gpu]`).

Importing this module never needs vLLM; constructing the backend does. Concurrent calls are
micro-batched (the same batcher as the embedded model) into one `LLM.chat` call, which renders
the model's own chat template with the tools; `<tool_call>` blocks in the output (the Hermes
format Qwen-family templates ask for) are parsed into `ToolCall`s like the embedded model's.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from trajforge.generators.llm.local import MicroBatcher
from trajforge.generators.llm.toolcall_text import parse_tool_calls
from trajforge.schemas import ChatRequest, ChatResponse, LLMError, Message, ToolSpec, Usage

INSTALL_HINT = "the vllm backend needs vLLM on a CUDA machine: install trajforge[gpu]"


def wire_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """OpenAI-shaped messages with arguments as dicts, the shape HF chat templates expect."""
    wire = []
    for message in messages:
        entry = message.openai_dict()
        for call, wire_call in zip(message.tool_calls, entry.get("tool_calls", ()), strict=True):
            wire_call["function"]["arguments"] = (
                call.raw_arguments if call.parse_error is not None else call.arguments
            )
        wire.append(entry)
    return wire


class VLLMBackend:
    """`LLMClient` over `vllm.LLM`; `engine_kwargs` go to the engine (dtype, max_model_len...)."""

    def __init__(self, model: str, max_batch_size: int = 256, **engine_kwargs: Any):
        try:
            import vllm
        except ImportError as exc:
            raise LLMError(f"{INSTALL_HINT} (model {model!r}): {exc}") from exc
        self.model = model
        self._vllm = vllm
        self._engine = vllm.LLM(model=model, **engine_kwargs)
        self._batcher = MicroBatcher(self.generate_now, max_batch_size, window_s=0.005)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        return await self._batcher.submit(request)

    def generate_now(self, requests: Sequence[ChatRequest]) -> list[ChatResponse]:
        """Blocking: one `LLM.chat` per distinct tool set among the requests."""
        responses: dict[int, ChatResponse] = {}
        by_tools: dict[tuple[ToolSpec, ...], list[int]] = {}
        for index, request in enumerate(requests):
            by_tools.setdefault(request.tools, []).append(index)
        for tools, indices in by_tools.items():
            group = [requests[i] for i in indices]
            for index, response in zip(indices, self._chat(group, tools), strict=True):
                responses[index] = response
        return [responses[i] for i in range(len(requests))]

    def _chat(
        self, requests: Sequence[ChatRequest], tools: tuple[ToolSpec, ...]
    ) -> list[ChatResponse]:
        started = time.perf_counter()
        outputs = self._engine.chat(
            [wire_messages(r.messages) for r in requests],
            sampling_params=[self._sampling_params(r) for r in requests],
            use_tqdm=False,
            tools=[t.openai_schema() for t in tools] or None,
        )
        latency = (time.perf_counter() - started) / max(1, len(requests))
        return [self._response(r, o, latency) for r, o in zip(requests, outputs, strict=True)]

    def _sampling_params(self, request: ChatRequest) -> Any:
        sampling = request.sampling
        extra: dict[str, Any] = {}
        if request.response_format == "json_object":
            guided = getattr(self._vllm.sampling_params, "GuidedDecodingParams", None)
            if guided is not None:
                extra["guided_decoding"] = guided(json_object=True)
        return self._vllm.SamplingParams(
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            max_tokens=sampling.max_tokens,
            stop=list(sampling.stop) or None,
            seed=request.seed,
            **extra,
        )

    def _response(self, request: ChatRequest, output: Any, latency_s: float) -> ChatResponse:
        completion = output.outputs[0]
        text = completion.text
        content, calls = parse_tool_calls(text, request.tools) if request.tools else (text, ())
        finish = (
            "tool_calls"
            if calls
            else ("length" if completion.finish_reason == "length" else "stop")
        )
        return ChatResponse(
            message=Message(role="assistant", content=content, tool_calls=calls),
            model=self.model,
            finish_reason=finish,
            usage=Usage(
                prompt_tokens=len(output.prompt_token_ids or ()),
                completion_tokens=len(completion.token_ids),
            ),
            latency_s=latency_s,
        )
