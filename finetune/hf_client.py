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

Prefix reuse: every request of an evaluation starts with the same system prompt and tool
schemas (~70% of a toy eval prompt's tokens, 604 of 870), which a plain `generate` encodes
again for every row of every turn. `PrefixReuse` encodes that prefix once, keeps its KV cache
(a few prefixes, least recently used dropped) and hands `generate` a copy expanded to the batch;
each row then holds [prefix | left pads | the rest of its prompt], so the padding sits between
the two and positions still come from the attention mask. The prefix is where the request's
own system messages end, never where a batch's rows happen to agree, so where a row is cut
does not depend on its batch mates. Rows with different prefixes are generated in groups, and
within a prefix rows of very different lengths too (`length_buckets`).
"""

from __future__ import annotations

import copy
import inspect
import threading
import time
from collections import OrderedDict
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
        reuse_prefix: bool = True,
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
        self._prefix = PrefixReuse(enabled=reuse_prefix)

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
        """Generate requests with equal sampling params (blocking): rows that share a prompt
        prefix together in one `generate` over its cached KV (see the module docstring)."""
        with self._lock:
            model, tokenizer = self._load()
            tools = [[t.openai_schema() for t in r.tools] for r in requests]
            ids = [
                tokenizer(
                    generation_prompt(r.messages, schemas, self.family), add_special_tokens=False
                )["input_ids"]
                for r, schemas in zip(requests, tools, strict=True)
            ]
            groups: dict[tuple[int, ...], list[int]] = {}
            for row, (request, row_ids) in enumerate(zip(requests, ids, strict=True)):
                cut = self._prefix.cut(tokenizer, self.family, request, tools[row], row_ids)
                groups.setdefault(tuple(row_ids[:cut]), []).append(row)
            replies: dict[int, ChatResponse] = {}
            for prefix, rows in groups.items():
                for bucket in length_buckets([len(ids[i]) - len(prefix) for i in rows]):
                    chosen = [rows[b] for b in bucket]
                    generated = self._generate(
                        [requests[i] for i in chosen], [ids[i] for i in chosen], prefix
                    )
                    replies.update(zip(chosen, generated, strict=True))
        return [replies[row] for row in range(len(requests))]

    def _generate(
        self,
        requests: Sequence[ChatRequest],
        ids: Sequence[list[int]],
        prefix: tuple[int, ...],
    ) -> list[ChatResponse]:
        """One `generate` over rows [prefix | left pads | rest of prompt], the prefix's KV from
        `PrefixReuse` (no prefix: plain left padding)."""
        # lazy, measured start-up cost: torch ~1.2 s, transformers ~560 ms
        import torch
        from transformers import LogitsProcessorList

        model, tokenizer = self._load()
        input_ids, attention_mask = _padded_after_prefix(
            [row[len(prefix) :] for row in ids], prefix, tokenizer.pad_token_id, self.device
        )
        cached = {}
        if prefix:
            cached = {_cache_name(model): self._prefix.expanded(model, prefix, len(requests))}
        eot = tokenizer.convert_tokens_to_ids(self.family.end_of_turn)
        sampled = any(r.sampling.temperature > 0 for r in requests)
        started = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(
                input_ids=input_ids,
                attention_mask=attention_mask,
                max_new_tokens=max(r.sampling.max_tokens for r in requests),
                do_sample=False,  # sampled rows: `_SeededSampler` leaves one token
                logits_processor=LogitsProcessorList([_SeededSampler(requests)] if sampled else []),
                eos_token_id=eot,
                pad_token_id=tokenizer.pad_token_id,
                **cached,
            )
        latency = time.perf_counter() - started
        width = input_ids.shape[1]
        return [
            self._response(
                tokenizer, request, out[row, width:].tolist(), eot, len(ids[row]), latency
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


#: Shortest prefix worth a cache entry (tokens): below it, encoding it again costs less.
MIN_PREFIX_TOKENS = 32


class PrefixReuse:
    """KV caches of prompt prefixes (the leading system messages and tools), least recently
    used dropped beyond `capacity`; see the module docstring. Used under the client's lock."""

    def __init__(self, enabled: bool = True, capacity: int = 4):
        self.enabled = enabled
        self.capacity = capacity
        self._caches: OrderedDict[tuple[int, ...], Any] = OrderedDict()

    def cut(
        self,
        tokenizer: Any,
        family: TemplateFamily,
        request: ChatRequest,
        tools: Sequence[dict[str, Any]],
        ids: Sequence[int],
    ) -> int:
        """How many of a prompt's tokens are its reusable prefix: those it shares with the
        prompt of its leading system messages alone (a template may put tools elsewhere, or
        merge tokens across the boundary: only equal tokens count), at least one token left
        to generate from, 0 when that is under `MIN_PREFIX_TOKENS`."""
        system = 0
        while system < len(request.messages) and request.messages[system].role == "system":
            system += 1
        if not self.enabled or system == 0:
            return 0
        alone = tokenizer(
            generation_prompt(request.messages[:system], tools, family), add_special_tokens=False
        )["input_ids"]
        shared = 0
        for a, b in zip(alone, ids[:-1], strict=False):  # up to the shorter
            if a != b:
                break
            shared += 1
        return shared if shared >= MIN_PREFIX_TOKENS else 0

    def expanded(self, model: Any, prefix: tuple[int, ...], rows: int) -> Any:
        """A copy of the prefix's KV cache, one row per batch row (`generate` appends to it)."""
        cache = copy.deepcopy(self._cache(model, prefix))
        cache.batch_repeat_interleave(rows)
        return cache

    def _cache(self, model: Any, prefix: tuple[int, ...]) -> Any:
        # lazy, measured start-up cost: torch ~1.2 s
        import torch

        if prefix in self._caches:
            self._caches.move_to_end(prefix)
            return self._caches[prefix]
        name = _cache_name(model)
        with torch.inference_mode():
            ids = torch.tensor([prefix], device=model.device)
            cache = getattr(model(input_ids=ids, use_cache=True), name)
        self._caches[prefix] = cache
        while len(self._caches) > self.capacity:
            self._caches.popitem(last=False)
        return cache


def _cache_name(model: Any) -> str:
    """The KV cache's keyword in `forward`/`generate` and field of their outputs: `cache` from
    transformers 5.x on (where `past_key_values` is deprecated), `past_key_values` before."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


#: A length bucket's longest prompt (after the shared prefix) is at most this many times its
#: shortest: measured on `trajforge eval` of the data-value tuned model (24 tasks x 3, 48 in
#: flight, CPU, one thread): 2 used 10-15% less CPU than one padded batch, identical replies.
BUCKET_RATIO = 2.0


def length_buckets(lengths: Sequence[int], ratio: float = BUCKET_RATIO) -> list[list[int]]:
    """Indices of `lengths` in groups of similar length (shortest first), each generated on
    its own: one batch pads every row to the longest, and a turn-1 prompt batched with a
    turn-8 one pays the turn-8 attention for every prefill and decode step. Each row's reply
    is the same either way (masked pads, per-row seeded sampling)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    buckets: list[list[int]] = []
    for i in order:
        if buckets and lengths[i] <= ratio * max(1, lengths[buckets[-1][0]]):
            buckets[-1].append(i)
        else:
            buckets.append([i])
    return buckets


def _padded_after_prefix(
    rests: Sequence[Sequence[int]], prefix: tuple[int, ...], pad_id: int, device: str
) -> tuple[Any, Any]:
    """(input_ids, attention_mask): each row is the prefix, then left pads, then its rest, so
    every row ends at the same column and generation continues them all; pads are masked."""
    # lazy, measured start-up cost: torch ~1.2 s
    import torch

    width = max(len(rest) for rest in rests)
    input_ids = [list(prefix) + [pad_id] * (width - len(r)) + list(r) for r in rests]
    mask = [[1] * len(prefix) + [0] * (width - len(r)) + [1] * len(r) for r in rests]
    return (
        torch.tensor(input_ids, dtype=torch.long, device=device),
        torch.tensor(mask, dtype=torch.long, device=device),
    )
