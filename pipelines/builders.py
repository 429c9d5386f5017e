"""What the stages construct from the config, built once per worker in DoFn `setup()`.

Filters, gates, the judge and the agent/user factories are derived from the (immutable) config;
building them per element would re-validate parameters and, for plugin filters, re-resolve the
user's classes on every trajectory. `StageResources.setup()` calls these once per process and the
stage functions only use what they hold. Agents and users bound to one task (oracle agent,
simulated users) are made per task by a factory chosen once here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trajforge.generators.agent import AgentPolicy, LLMAgent, oracle_for
from trajforge.generators.domain_options import options_of
from trajforge.generators.noisy_teacher import noisy_teacher_for
from trajforge.generators.tooling import Domain
from trajforge.generators.user import LLMUser, ScriptedUser, UserSimulator, declines_first
from trajforge.pipelines.config import BuildConfig
from trajforge.schemas import Task
from trajforge.verifiers.filters import build_filters
from trajforge.verifiers.judge import JudgeGate, TrajectoryJudge
from trajforge.verifiers.outcome import OutcomeGate
from trajforge.verifiers.protocol import TrajectoryFilter


@dataclass(frozen=True)
class Gates:
    """The programmatic gates of a build, in stage order (each record brings its own domain's
    `FilterContext`: one build may mix domains)."""

    outcome: OutcomeGate
    judge: JudgeGate
    filters: tuple[TrajectoryFilter, ...]  # `quality.filters`, in configured order


@dataclass(frozen=True)
class RoleBuilders:
    """LLM-backed roles: the judge, and a factory per conversational role (one call per task)."""

    #: (task, its own domain (its phrasing), attempt index) -> the agent of that rollout
    agent_for: Callable[[Task, Domain, int], AgentPolicy]
    user_for: Callable[[Task, Domain], UserSimulator]  # the task's own domain (its vocabulary)
    judge: TrajectoryJudge


def build_gates(config: BuildConfig) -> Gates:
    return Gates(
        outcome=OutcomeGate(),
        judge=JudgeGate(settings=config.quality.judge.settings),
        filters=build_filters(config.quality.filters),
    )


def _agent_factory(config: BuildConfig, clients: Any) -> Callable[[Task, Domain, int], AgentPolicy]:
    if config.rollout.agent == "oracle":
        return lambda task, domain, attempt: oracle_for(task, domain)
    if config.rollout.agent == "noisy":
        return noisy_teacher_for(config.rollout.noise)  # its faults are drawn per attempt
    agent = LLMAgent(clients.agent, clients.models["agent"], config.sampling)
    return lambda task, domain, attempt: agent  # stateless across tasks: one per worker


def _user_factory(config: BuildConfig, clients: Any) -> Callable[[Task, Domain], UserSimulator]:
    if config.rollout.user == "scripted":
        rate = config.rollout.user_declines_first
        return lambda task, domain: ScriptedUser(
            task, declines_first(task.id, rate), options_of(domain).user_tools
        )
    client, model = clients.user, clients.models["user"]
    return lambda task, domain: LLMUser(
        client,
        model,
        task,
        config.sampling,
        domain.vocabulary,
        options_of(domain).user_tools,
    )


def build_judge(config: BuildConfig, clients: Any) -> TrajectoryJudge:
    """The judge bound to the judge role's client, grading with the configured rubric."""
    return TrajectoryJudge(
        [clients.judge], [clients.models["judge"]], config.quality.judge.settings
    )


def build_roles(config: BuildConfig, clients: Any) -> RoleBuilders:
    """`clients` is the process's shared `RoleClients` (one client per backend)."""
    return RoleBuilders(
        agent_for=_agent_factory(config, clients),
        user_for=_user_factory(config, clients),
        judge=build_judge(config, clients),
    )
