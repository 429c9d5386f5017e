"""An in-process vLLM engine on a GPU (optional extra: `pip install trajforge[gpu]`).

Importing this module never needs vLLM; constructing the backend does. Concurrent calls are
micro-batched (the same batcher as the embedded model) into one `LLM.chat` call, which renders
the model's own chat template with the tools; `<tool_call>` blocks in the output (the Hermes
format Qwen-family templates ask for) are parsed into `ToolCall`s like the embedded model's.
With a `PromptFormat` (evaluating a fine-tuned model: the pinned template it was trained on,
trajforge.finetune.family_prompt) the engine is given that format's prompt token ids through
`LLM.generate` instead, stops on its end-of-turn ids, and the format parses the reply.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from trajforge.generators.llm.local import MicroBatcher
from trajforge.generators.llm.toolcall_text import parse_tool_calls
from trajforge.schemas import (
    ChatRequest,
    ChatResponse,
    LLMError,
    Message,
    ToolCall,
    ToolSpec,
    Usage,
)

if TYPE_CHECKING:
    from trajforge.generators.llm.factory import VLLMBackendConfig

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


class PromptFormat(Protocol):
    """A fixed prompt format used instead of the model's own chat template: prompt token ids
    for a conversation, the ids that end a turn, and the parse of a reply's text."""

    stop_token_ids: Sequence[int]

    def prompt_ids(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> list[int]: ...

    def reply(
        self, text: str, tools: Sequence[ToolSpec]
    ) -> tuple[str | None, tuple[ToolCall, ...]]: ...


class VLLMBackend:
    """`LLMClient` over `vllm.LLM`; `engine_kwargs` go to the engine (dtype, max_model_len...)."""

    def __init__(
        self,
        model: str,
        max_batch_size: int = 256,
        prompt_format: PromptFormat | None = None,
        **engine_kwargs: Any,
    ):
        try:
            # lazy: optional dependency (the gpu extra)
            import vllm
        except ImportError as exc:
            raise LLMError(f"{INSTALL_HINT} (model {model!r}): {exc}") from exc
        self.model = model
        self._vllm = vllm
        self._format = prompt_format
        self._engine = vllm.LLM(model=model, **engine_kwargs)
        self._batcher = MicroBatcher(self.generate_now, max_batch_size, window_s=0.005)

    @classmethod
    def from_config(
        cls, cfg: VLLMBackendConfig, prompt_format: PromptFormat | None = None
    ) -> VLLMBackend:
        """The backend a `VLLMBackendConfig` describes (its engine options passed on)."""
        options = cfg.model_dump(exclude={"kind", "model", "max_batch_size"}, exclude_none=True)
        return cls(
            cfg.model, max_batch_size=cfg.max_batch_size, prompt_format=prompt_format, **options
        )

    async def complete(self, request: ChatRequest) -> ChatResponse:
        return await self._batcher.submit(request)

    def generate_now(self, requests: Sequence[ChatRequest]) -> list[ChatResponse]:
        """Blocking: one `LLM.chat` per distinct tool set among the requests."""
        responses: dict[int, ChatResponse] = {}
        # keyed by the specs' JSON: a ToolSpec holds a dict (its JSON schema), so it is no key
        by_tools: dict[tuple[str, ...], list[int]] = {}
        for index, request in enumerate(requests):
            key = tuple(t.model_dump_json() for t in request.tools)
            by_tools.setdefault(key, []).append(index)
        for indices in by_tools.values():
            group = [requests[i] for i in indices]
            for index, response in zip(indices, self._chat(group, group[0].tools), strict=True):
                responses[index] = response
        return [responses[i] for i in range(len(requests))]

    def _chat(
        self, requests: Sequence[ChatRequest], tools: tuple[ToolSpec, ...]
    ) -> list[ChatResponse]:
        started = time.perf_counter()
        params = [self._sampling_params(r) for r in requests]
        if self._format is not None:
            prompts = [
                {"prompt_token_ids": self._format.prompt_ids(r.messages, r.tools)} for r in requests
            ]
            outputs = self._engine.generate(prompts, params, use_tqdm=False)
        else:
            outputs = self._engine.chat(
                [wire_messages(r.messages) for r in requests],
                sampling_params=params,
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
        if self._format is not None:
            extra["stop_token_ids"] = list(self._format.stop_token_ids)
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
        if self._format is not None:
            content, calls = self._format.reply(text, request.tools)
        elif request.tools:
            content, calls = parse_tool_calls(text, request.tools)
        else:
            content, calls = text, ()
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
