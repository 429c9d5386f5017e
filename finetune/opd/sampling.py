"""Token-level sampling for OPD: the student (and a Guided teacher) act as rollout agents.

`TransformersSampler` samples token by token with a KV cache from a `torch.Generator` seeded
per turn, so a rollout is reproducible, and records each sampled token's log-probability under
the model's own (untempered) distribution: that is `log p_old` in the OPD objective. On GPU,
`trajforge.finetune.opd.vllm_sampler` does the same with vLLM. `TokenAgent` is the
`AgentPolicy` the rollout loop drives: it takes its prompt ids from the rollout's
`TokenTranscript` (never re-encoding earlier turns), asks the student or, on a Guided turn, the
teacher to sample, and parses the decoded text into a message only to execute its tool calls.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from trajforge.finetune.modeling import Precision, autocast_for
from trajforge.finetune.opd.guided import GuidedSchedule, teacher_takes_turn
from trajforge.finetune.opd.objective import over_vocabulary
from trajforge.finetune.opd.transcript import TokenTranscript
from trajforge.generators.agent import AgentTurn, SampledTokens
from trajforge.generators.llm.toolcall_text import parse_tool_calls
from trajforge.schemas import Message, ToolSpec


class TokenSampler(Protocol):
    """Continue `prompt_ids` with one agent turn; deterministic for a given seed. `sync` is
    called after each optimizer step with the trained model (a no-op when the sampler holds
    that very model)."""

    def sample(self, prompt_ids: Sequence[int], seed: int) -> SampledTokens: ...

    def sync(self, model: Any) -> None: ...


@dataclass
class TransformersSampler:
    """Sampling with a transformers causal LM (CPU or GPU), stopping after `stop_ids`."""

    model: Any
    stop_ids: Sequence[int]
    max_new_tokens: int = 128
    temperature: float = 1.0
    precision: Precision | None = None  # the training forward's, so log p_old matches it
    vocab_size: int | None = None  # the tokenizer's: embedding padding rows are never drawn

    @torch.no_grad()
    def sample(self, prompt_ids: Sequence[int], seed: int) -> SampledTokens:
        device = next(self.model.parameters()).device
        generator = torch.Generator(device=device).manual_seed(seed % (1 << 63))
        was_training = self.model.training
        self.model.eval()
        ids = torch.tensor([list(prompt_ids)], device=device)
        with autocast_for(self.precision, ids):
            out = self.model(input_ids=ids, use_cache=True)
        cache_arg = _cache_argument(self.model)
        tokens: list[int] = []
        logprobs: list[float] = []
        for _ in range(self.max_new_tokens):
            logits = over_vocabulary(out.logits[0, -1], self.vocab_size).float()
            token = self._draw(logits, generator)
            tokens.append(token)
            logprobs.append(float(torch.log_softmax(logits, -1)[token]))
            if self._stopped(tokens):
                break
            step = torch.tensor([[token]], device=device)
            with autocast_for(self.precision, step):
                out = self.model(input_ids=step, use_cache=True, **{cache_arg: _cache_of(out)})
        self.model.train(was_training)
        return SampledTokens(tuple(tokens), tuple(logprobs))

    def sync(self, model: Any) -> None:
        """Nothing to do: this sampler samples from the model being trained."""

    def _draw(self, logits: torch.Tensor, generator: torch.Generator) -> int:
        if self.temperature <= 0:
            return int(torch.argmax(logits))
        probs = torch.softmax(logits / self.temperature, -1)
        return int(torch.multinomial(probs, 1, generator=generator))

    def _stopped(self, tokens: list[int]) -> bool:
        n = len(self.stop_ids)
        return n > 0 and tokens[-n:] == list(self.stop_ids)


def _cache_argument(model: Any) -> str:
    """The forward argument that takes the KV cache (`cache` in transformers 5.2x, before it
    `past_key_values`)."""
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _cache_of(output: Any) -> Any:
    cache = getattr(output, "cache", None)
    return cache if cache is not None else getattr(output, "past_key_values", None)


class TokenAgent:
    """The rollout agent of OPD (an `AgentPolicy`): student turns, or teacher turns when the
    Guided schedule says so, sampled as tokens from the transcript's prompt ids."""

    def __init__(
        self,
        transcript: TokenTranscript,
        tokenizer: Any,
        student: TokenSampler,
        *,
        teacher: TokenSampler | None = None,
        guided: GuidedSchedule | None = None,
        step: int = 0,
        record_id: str = "",
    ):
        if guided is not None and teacher is None:
            raise ValueError("TokenAgent: Guided OPD needs a teacher sampler")
        self._transcript = transcript
        self._tokenizer = tokenizer
        self._student = student
        self._teacher = teacher
        self._guided = guided
        self._step = step
        self._record_id = record_id
        self._acts = 0

    async def act(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], seed: int
    ) -> AgentTurn:
        prompt = self._transcript.prompt_ids(messages)
        guided = teacher_takes_turn(self._guided, self._step, self._record_id, self._acts)
        self._acts += 1
        sampler = self._teacher if guided and self._teacher is not None else self._student
        sampled = await asyncio.to_thread(sampler.sample, prompt, seed)
        self._transcript.next_author = "teacher" if guided else "student"
        text = self._tokenizer.decode(list(sampled.token_ids), skip_special_tokens=True)
        content, calls = parse_tool_calls(text, tools) if tools else (text, ())
        message = Message(role="assistant", content=content or None, tool_calls=calls)
        return AgentTurn(message=message, sampled=sampled)
