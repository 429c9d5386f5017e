"""Which agent (and simulated user) an evaluation runs: one spec string -> a policy per task.

oracle            the task's gold plan (the answer key: pass^k must be 1.0)
scripted:NAME     the runtime's scripted backend with a named responder
                  (scripted:rollout_dry_run never calls a tool: pass^k must be 0.0)
local             the embedded SmolLM2 model (generators.llm local backend)
vllm:PATH         an in-process vLLM engine on a GPU, prompted with PATH's family template
openai:MODEL      an OpenAI-compatible endpoint (base URL from --base-url or the env)
PATH              a local transformers model directory, prompted with its family template

The family of a model directory is `--family` when it fits the tokenizer, else detected
(`families.resolve_family`); an unknown one is an error, never a silent default.

`trajforge eval --user llm --user-model SPEC` plays the user with the same kinds of model.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from trajforge.finetune.families import TemplateFamily, resolve_family
from trajforge.generators.agent import AgentPolicy, LLMAgent, oracle_for
from trajforge.generators.domain_options import options_of
from trajforge.generators.tooling import Domain
from trajforge.generators.user import LLMUser, ScriptedUser, UserSimulator
from trajforge.schemas import LLMClient, SamplingParams, Task

#: (task, its domain) -> the simulated user of one attempt.
UserFactory = Callable[[Task, Domain], UserSimulator]

AgentKind = Literal["oracle", "scripted", "local", "vllm", "openai", "transformers"]


class AgentSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: AgentKind
    target: str = ""  # responder, model path or model name
    label: str


def parse_agent(spec: str) -> AgentSpec:
    """The spec string of `trajforge eval --model` (see the module docstring)."""
    head, _, rest = spec.partition(":")
    if spec in ("oracle", "local"):
        return AgentSpec(kind=spec, label=spec)
    if head in ("scripted", "vllm", "openai") and rest:
        return AgentSpec(kind=head, target=rest, label=spec)
    if Path(spec).is_dir():
        return AgentSpec(kind="transformers", target=spec, label=spec)
    raise ValueError(
        f"--model {spec!r}: expected oracle, scripted:RESPONDER, local, vllm:PATH, "
        "openai:MODEL or an existing model directory"
    )


def _client(
    spec: AgentSpec, family: str | None, base_url: str | None, max_batch_size: int = 8
) -> LLMClient:
    # lazy, measured start-up cost: llm ~50 ms
    from trajforge.generators.llm import (
        LocalBackendConfig,
        OpenAIBackendConfig,
        ScriptedBackendConfig,
        VLLMBackendConfig,
        build_client,
    )

    if spec.kind == "transformers":
        # lazy, measured start-up cost: hf_client ~50 ms
        from trajforge.finetune.hf_client import TransformersChat

        return TransformersChat(
            spec.target, model_family(spec.target, family)[1], max_batch_size=max_batch_size
        )
    if spec.kind == "scripted":
        return build_client(ScriptedBackendConfig(responder=spec.target))
    if spec.kind == "local":
        return build_client(LocalBackendConfig())
    if spec.kind == "vllm":
        # lazy, start-up: family_prompt ~50 ms, accounting ~60 ms, vllm_backend ~50 ms
        from trajforge.finetune.family_prompt import FamilyPromptFormat
        from trajforge.generators.llm.accounting import AccountingLLM
        from trajforge.generators.llm.vllm_backend import VLLMBackend

        # the pinned template the model was trained on, not the engine's own `LLM.chat` one
        prompt_format = FamilyPromptFormat(*model_family(spec.target, family))
        cfg = VLLMBackendConfig(model=spec.target)
        return AccountingLLM(VLLMBackend.from_config(cfg, prompt_format), model=cfg.model)
    return build_client(OpenAIBackendConfig(model=spec.target, base_url=base_url))


def model_family(model_dir: str, family: str | None) -> tuple[Any, TemplateFamily]:
    """(tokenizer, family) of a local model directory: `family` if it fits, else detected."""
    # lazy, measured start-up cost: transformers ~610 ms
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    return tokenizer, resolve_family(tokenizer, family, model_dir)


def agent_factory(
    spec: AgentSpec,
    sampling: SamplingParams,
    family: str | None = None,
    base_url: str | None = None,
    max_batch_size: int = 8,
) -> Callable[[Task, Domain], AgentPolicy]:
    """task -> agent; one client shared by every rollout (built once, here; a model
    directory's batches concurrent requests, up to `max_batch_size` rows)."""
    if spec.kind == "oracle":
        return oracle_for
    client = _client(spec, family, base_url, max_batch_size)
    model = spec.target or spec.label
    return lambda task, domain: LLMAgent(client, model, sampling)


def user_factory(
    spec: AgentSpec | None, family: str | None = None, base_url: str | None = None
) -> UserFactory:
    """The scripted user (spec None), or an LLM user on the model `spec` names (same grammar
    as the agent's, oracle excepted); one client shared by every attempt, built here. The
    user samples with `LLMUser`'s defaults, each attempt with its own seed."""
    if spec is None:
        return lambda task, domain: ScriptedUser(task, user_tools=options_of(domain).user_tools)
    if spec.kind == "oracle":
        raise ValueError("--user-model: the oracle is an agent, not a user")
    client = _client(spec, family, base_url)
    model = spec.target or spec.label
    return lambda task, domain: LLMUser(
        client,
        model,
        task,
        vocabulary=domain.vocabulary,
        user_tools=options_of(domain).user_tools,
    )
