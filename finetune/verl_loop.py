"""A trajforge domain as a verl agent loop: the simulated user acts between assistant turns.

verl (volcengine/verl, `verl.experimental.agent_loop`) runs one `AgentLoopBase` instance per
sample: `await loop.run(sampling_params, **dataset_fields)` talks to the inference server in
token ids (`server_manager.generate(request_id, prompt_ids=..., sampling_params=...)`, which
returns `token_ids` and `log_probs`) and returns an `AgentLoopOutput`: `prompt_ids`,
`response_ids` (everything after the prompt: generated tokens and observations), a
`response_mask` with 1 on generated tokens and 0 on observation tokens, `response_logprobs`,
`reward_score`, `num_turns` and `extra_fields`. verl's own `ToolAgentLoop` has tools but no
simulated user with shared state; this loop is that.

Each rollout resets a `DomainEnvironment` (finetune/environments.py, the engine the TRL,
`verifiers` and OpenEnv adapters share) from the row's task. The model's turns are token ids
kept exactly as sampled (never decoded and re-encoded): a turn with tool calls (parsed from the
decoded text in the model family's call format) runs them through the domain's toolbox; a text
turn goes to the simulated user, whose reply comes back. Tool results and user replies are
rendered with the tokenizer's chat template (the delta after an anchor message, as verl renders
tool responses) and appended with mask 0, so neither is ever trained; a dual-control user's own
tool calls never reach the model at all. The loop ends when the user ends the conversation,
the response budget is spent, or `max_assistant_turns` is reached. `reward_score` is `trajforge
eval`'s gate verdict on the environment's trajectory (1.0 kept, else 0.0), with the typed
reasons in `extra_fields`.

verl itself is not a dependency (it brings Ray, vLLM/SGLang and hydra): `TrajforgeAgentLoop`
takes the same constructor arguments and `run` signature, typed by the small Protocols below
that mirror verl's contract, and `verl_agent_loop()` makes the registered `AgentLoopBase`
subclass where verl is installed. Written against verl's main branch of January 2026
(`verl/experimental/agent_loop/agent_loop.py`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, Protocol
from uuid import uuid4

from pydantic import BaseModel, ConfigDict, Field

from trajforge.finetune.env_tasks import EnvTaskSource, load_env_tasks
from trajforge.finetune.environments import (
    DomainEnvironment,
    environment_call,
    environment_class,
    environment_gate,
    environment_over,
)
from trajforge.finetune.families import TemplateFamily, get_family
from trajforge.finetune.hf_client import reply_from_text
from trajforge.finetune.verifiers_env import env_system_prompt
from trajforge.generators.domains import get_domain
from trajforge.generators.tooling import Domain
from trajforge.schemas import Task

#: The registered name (`actor_rollout_ref.rollout.agent.agent_loop_config_path` entries and the
#: dataset's `agent_name` column use it).
AGENT_NAME = "trajforge"
#: Where the task is read from in a row's fields: `extra_info.task_json` (verl's RLHFDataset
#: passes `extra_info` through), or a top-level `task_json`.
TASK_FIELD = "task_json"
#: The anchor a delta is rendered after (templates need a turn before a tool result).
_ANCHOR = {"role": "user", "content": "."}


class TokenOutput(Protocol):
    """What verl's server manager returns for one generation."""

    token_ids: list[int]
    log_probs: list[float] | None


class ServerManager(Protocol):
    """verl's `AsyncLLMServerManager.generate` (sticky sessions by request id)."""

    async def generate(
        self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any]
    ) -> TokenOutput: ...


class ChatTokenizer(Protocol):
    """The tokenizer calls the loop makes (a transformers tokenizer has both)."""

    def apply_chat_template(self, conversation: Any, **kwargs: Any) -> Any: ...

    def decode(self, token_ids: Sequence[int], **kwargs: Any) -> str: ...


class LoopOutput(BaseModel):
    """verl's `AgentLoopOutput` fields (its `metrics` excepted, which verl fills in)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt_ids: list[int]
    response_ids: list[int]
    response_mask: list[int]  # 1: the model sampled it; 0: a tool result or the user's turn
    response_logprobs: list[float] | None = None
    reward_score: float
    num_turns: int
    extra_fields: dict[str, Any] = Field(default_factory=dict)


class VerlLoopConfig(BaseModel):
    """The domain and task source, the model family (its tool-call format and end-of-turn
    token) and the budgets. `response_length` caps response tokens, as verl's
    `rollout.response_length` does."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    domain: str = "retail"
    family: str = "qwen2.5"
    response_length: int = Field(default=4096, ge=1)
    max_assistant_turns: int = Field(default=40, ge=1)
    max_user_turns: int = Field(default=30, ge=1)


class _Rollout:
    """One sample's growing sequence: prompt, then response tokens with their mask."""

    def __init__(self, prompt_ids: list[int]):
        self.prompt_ids = prompt_ids
        self.response_ids: list[int] = []
        self.mask: list[int] = []
        self.logprobs: list[float] = []
        self.turns = 1  # the user's opening

    def add(self, ids: Sequence[int], trained: bool, logprobs: Sequence[float] | None = None):
        self.response_ids += ids
        self.mask += [int(trained)] * len(ids)
        self.logprobs += list(logprobs) if logprobs else [0.0] * len(ids)

    @property
    def ids(self) -> list[int]:
        return self.prompt_ids + self.response_ids


class TrajforgeAgentLoop:
    """The agent loop over one domain (see the module docstring); one instance per sample,
    as verl makes them. `env_cls`: the environment class (None: `environment_class(domain)`
    with `trajforge eval`'s checks and the domain's scripted user)."""

    def __init__(
        self,
        server_manager: ServerManager,
        tokenizer: ChatTokenizer,
        config: VerlLoopConfig | None = None,
        domain: Domain | None = None,
        env_cls: type[DomainEnvironment] | None = None,
    ):
        self.server_manager = server_manager
        self.tokenizer = tokenizer
        self.config = config or VerlLoopConfig()
        self.family: TemplateFamily = get_family(self.config.family)
        self.domain = domain if domain is not None else _domain(self.config.domain)
        self.env_cls = env_cls or environment_class(
            self.domain, max_user_turns=self.config.max_user_turns
        )
        self.tools = [s.openai_schema() for s in self.domain.toolbox.specs]
        self.env: DomainEnvironment | None = None

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> LoopOutput:
        """Roll one task out (its JSON in `extra_info.task_json` or `task_json`)."""
        env = self.env = self.env_cls()
        opening = await asyncio.to_thread(env.reset, task_json=task_json_of(kwargs))
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": env_system_prompt(self.domain)},
            {"role": "user", "content": opening},
        ]
        rollout = _Rollout(self._render(messages))
        request_id = uuid4().hex
        for _ in range(self.config.max_assistant_turns):
            room = self.config.response_length - len(rollout.response_ids)
            if room <= 0 or environment_over(env):
                break
            out = await self.server_manager.generate(
                request_id, prompt_ids=rollout.ids, sampling_params=sampling_params
            )
            ids = list(out.token_ids)[:room]
            rollout.add(ids, trained=True, logprobs=(out.log_probs or [])[: len(ids)] or None)
            rollout.turns += 1
            assistant, observations = await self._step(env, self._decode(ids))
            messages.append(assistant)
            if not observations or len(rollout.response_ids) >= self.config.response_length:
                break
            room = self.config.response_length - len(rollout.response_ids)
            rollout.add(self._delta(observations)[:room], trained=False)
            messages += observations
            rollout.turns += len(observations)
        return self._output(env, rollout)

    async def _step(
        self, env: DomainEnvironment, text: str
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The assistant message for `text` and what comes back: each call's result, or the
        user's reply to a text turn (none once the conversation is over)."""
        content, calls = reply_from_text(text, self.domain.toolbox.specs, self.family)
        if calls:
            assistant = {"role": "assistant", "content": content or "", "tool_calls": []}
            results = []
            for call in calls:
                assistant["tool_calls"].append(
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": dict(call.arguments)},
                    }
                )
                observation = (
                    f"Error: could not parse the call ({call.parse_error})"
                    if call.parse_error
                    else await asyncio.to_thread(
                        environment_call, env, call.name, dict(call.arguments)
                    )
                )
                results.append(
                    {"role": "tool", "content": observation, "tool_call_id": call.id}
                    | {"name": call.name}
                )
            return assistant, results
        said = content or ""
        reply = await asyncio.to_thread(env.send_message_to_user, said)
        assistant = {"role": "assistant", "content": said}
        return assistant, [] if environment_over(env) else [{"role": "user", "content": reply}]

    def _render(self, messages: list[dict[str, Any]]) -> list[int]:
        return _ids(
            self.tokenizer.apply_chat_template(
                messages, tools=self.tools, add_generation_prompt=True, tokenize=True
            )
        )

    def _delta(self, observations: list[dict[str, Any]]) -> list[int]:
        """The tokens `observations` add, then the next generation prompt: rendered after an
        anchor turn and cut at the anchor's length (no system prompt, no tools block)."""
        anchor = _ids(self.tokenizer.apply_chat_template([_ANCHOR], tokenize=True))
        full = _ids(
            self.tokenizer.apply_chat_template(
                [_ANCHOR, *observations], add_generation_prompt=True, tokenize=True
            )
        )
        if full[: len(anchor)] != anchor:
            raise ValueError(
                f"{self.family.name}: the chat template renders a turn differently once "
                "another follows; use a prefix-preserving template"
            )
        return full[len(anchor) :]

    def _decode(self, ids: Sequence[int]) -> str:
        """The generated text up to the family's end-of-turn token (special tokens kept: a
        family's call markers, such as `<tool_call>`, may be special)."""
        text = self.tokenizer.decode(ids, skip_special_tokens=False)
        return text.split(self.family.end_of_turn, 1)[0]

    def _output(self, env: DomainEnvironment, rollout: _Rollout) -> LoopOutput:
        verdict = environment_gate(env)
        return LoopOutput(
            prompt_ids=rollout.prompt_ids,
            response_ids=rollout.response_ids,
            response_mask=rollout.mask,
            response_logprobs=rollout.logprobs,
            reward_score=1.0 if verdict.kept else 0.0,
            num_turns=rollout.turns,
            extra_fields={
                "trajforge_reasons": [r.reason for r in verdict.reasons],
                "trajforge_task_id": env._require_task().id,
            },
        )


def _ids(rendered: Any) -> list[int]:
    """Token ids from `apply_chat_template(tokenize=True)`: a list, or (transformers 5) a
    mapping holding `input_ids`."""
    if isinstance(rendered, Mapping) or hasattr(rendered, "keys"):
        rendered = rendered["input_ids"]
    return [int(i) for i in rendered]


def task_json_of(fields: Mapping[str, Any]) -> str:
    """A row's task JSON: `extra_info.task_json`, else `task_json`; one clear error if none."""
    extra = fields.get("extra_info") or {}
    found = extra.get(TASK_FIELD) if isinstance(extra, Mapping) else None
    found = found or fields.get(TASK_FIELD)
    if not isinstance(found, str):
        raise ValueError(
            f"verl row has no {TASK_FIELD}: put the task's JSON in extra_info.{TASK_FIELD} "
            "(see verl_rows)"
        )
    return found


def verl_rows(domain: Domain, tasks: Sequence[Task]) -> list[dict[str, Any]]:
    """Dataset rows for verl's RLHFDataset: `prompt` (the policy; the loop replaces the
    messages with the customer's live opening), `agent_name` and the task in `extra_info`."""
    return [
        {
            "prompt": [{"role": "system", "content": env_system_prompt(domain)}],
            "agent_name": AGENT_NAME,
            "data_source": f"trajforge-{domain.name}",
            "extra_info": {TASK_FIELD: task.to_json(), "task_id": task.id},
        }
        for task in tasks
    ]


def verl_task_rows(source: EnvTaskSource) -> list[dict[str, Any]]:
    """`verl_rows` for a run's split or fresh seeded tasks (the other adapters' task source)."""
    loaded = load_env_tasks(source)
    return verl_rows(loaded.domain, loaded.tasks)


def _domain(name: str) -> Domain:
    return get_domain(name)


def verl_agent_loop(config: VerlLoopConfig | None = None) -> type:
    """The registered `AgentLoopBase` subclass (needs verl installed): verl constructs it with
    its own arguments; `run` returns verl's `AgentLoopOutput`."""
    from verl.experimental.agent_loop.agent_loop import (  # type: ignore[import-not-found]
        AgentLoopBase,
        AgentLoopMetrics,
        AgentLoopOutput,
        register,
    )

    cfg = config or VerlLoopConfig()

    @register(AGENT_NAME)
    class TrajforgeVerlAgentLoop(AgentLoopBase):
        def __init__(self, *args: Any, **kwargs: Any):
            super().__init__(*args, **kwargs)
            budget = self.config.actor_rollout_ref.rollout.response_length
            self._loop = TrajforgeAgentLoop(
                self.server_manager,
                self.tokenizer,
                cfg.model_copy(update={"response_length": budget}),
            )

        async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> Any:
            out = await self._loop.run(sampling_params, **kwargs)
            return AgentLoopOutput(**out.model_dump(), metrics=AgentLoopMetrics())

    return TrajforgeVerlAgentLoop
