"""Which agent (and simulated user) an evaluation runs: one spec string -> a policy per task.

oracle            the task's gold plan (the answer key: pass^k must be 1.0)
scripted:NAME     the runtime's scripted backend with a named responder
                  (scripted:rollout_dry_run never calls a tool: pass^k must be 0.0)
local             the embedded SmolLM2 model (generators.llm local backend)
vllm:PATH         an in-process vLLM engine on a GPU
openai:MODEL      an OpenAI-compatible endpoint (base URL from --base-url or the env)
PATH              a local transformers model directory, prompted with its family template

`trajforge eval --user llm --user-model SPEC` plays the user with the same kinds of model.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from trajforge.finetune.families import get_family
from trajforge.finetune.tiny import saved_family
from trajforge.generators.agent import AgentPolicy, LLMAgent, oracle_for
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
    from trajforge.generators.llm import (
        LocalBackendConfig,
        OpenAIBackendConfig,
        ScriptedBackendConfig,
        VLLMBackendConfig,
        build_client,
    )

    if spec.kind == "transformers":
        from trajforge.finetune.hf_client import TransformersChat

        name = family or saved_family(spec.target) or "qwen2.5"
        return TransformersChat(spec.target, get_family(name), max_batch_size=max_batch_size)
    if spec.kind == "scripted":
        return build_client(ScriptedBackendConfig(responder=spec.target))
    if spec.kind == "local":
        return build_client(LocalBackendConfig())
    if spec.kind == "vllm":
        return build_client(VLLMBackendConfig(model=spec.target))
    return build_client(OpenAIBackendConfig(model=spec.target, base_url=base_url))


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
        return lambda task, domain: ScriptedUser(task)
    if spec.kind == "oracle":
        raise ValueError("--user-model: the oracle is an agent, not a user")
    client = _client(spec, family, base_url)
    model = spec.target or spec.label
    return lambda task, domain: LLMUser(client, model, task, vocabulary=domain.vocabulary)
