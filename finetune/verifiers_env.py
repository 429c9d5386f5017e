"""A trajforge domain as a prime `verifiers` environment (`load_environment()`, a MultiTurnEnv).

prime-rl and `vf-eval` load environment modules that expose `load_environment(**kwargs)`
returning a `verifiers.Environment`. This one wraps the same per-rollout engine as the TRL
adapter (`finetune.environments.DomainEnvironment`): the domain's tools are offered as tool
definitions (their own JSON schemas) and executed through the domain's `Toolbox`, a plain-text
assistant turn goes to the simulated user, whose reply comes back in `env_response` as the next
user message (so user turns are never trained as assistant tokens), and the conversation ends
when the user ends it. Each rollout keeps its own `DomainEnvironment` in `state`. The rubric is
`trajforge eval`'s gate (`gate_verdict` with `evaluate.CHECKS`): reward 1.0 when the outcome
check and every policy rule pass, else 0.0, and one 0/1 metric per typed reason the gate can
give (`reason/state_mismatch`, `reason/policy.confirm_before_write`, ...), so a run's metrics
say why rollouts failed, not only how many.

Written against verifiers' classic API (`MultiTurnEnv`, `Rubric`, `Environment.evaluate`),
which 0.3.x exports at the top level; 0.4 moved to a new `verifiers.v1` stack and is not
supported yet (the `rl` extra pins `<0.4`). `verifiers` is optional: nothing here imports it
until `load_environment` runs.

Why the import goes through `prime_verifiers()`: this repository has its own `verifiers/`
folder (installed as `trajforge.verifiers`), so from a checkout's root a bare `import
verifiers` finds that folder instead of prime's library.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from collections.abc import Callable, Sequence
from importlib.machinery import PathFinder
from pathlib import Path
from types import ModuleType
from typing import Any

from trajforge.finetune.env_tasks import EnvTasks, EnvTaskSource, load_env_tasks
from trajforge.finetune.environments import (
    DomainEnvironment,
    UserFactory,
    domain_tool_defs,
    environment_call,
    environment_class,
    environment_gate,
    environment_over,
    environment_trajectory,
)
from trajforge.finetune.evaluate import CHECKS
from trajforge.generators.prompts import agent_system_prompt
from trajforge.generators.tooling import Domain
from trajforge.verifiers.gate import Verdict
from trajforge.verifiers.outcome import OutcomeGate
from trajforge.verifiers.protocol import TrajectoryFilter

INSTALL_HINT = "pip install 'trajforge[rl]' (prime's verifiers>=0.3.1,<0.4)"
#: `state` keys this environment owns (the rollout's engine, its verdict, the trajectory JSON).
ENV_KEY, VERDICT_KEY, TRAJECTORY_KEY = "trajforge_env", "trajforge_verdict", "trajforge_trajectory"


def prime_verifiers() -> ModuleType:
    """prime's `verifiers` package, skipping any sys.path entry where `verifiers/` is
    trajforge's own folder (a checkout's root on the path); a clear error when it is absent."""
    ours = Path(__file__).resolve().parents[1] / "verifiers"
    loaded = sys.modules.get("verifiers")
    if loaded is not None:
        if Path(loaded.__file__ or "").resolve().parent == ours:
            raise ImportError(
                "a bare `import verifiers` loaded trajforge's own folder; import "
                "trajforge.verifiers instead so prime's library can load"
            )
        return loaded
    paths = [p for p in sys.path if (Path(p or ".") / "verifiers").resolve() != ours]
    spec = PathFinder.find_spec("verifiers", paths)
    if spec is None or spec.loader is None:
        raise ImportError(f"prime's `verifiers` is not installed: {INSTALL_HINT}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["verifiers"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["verifiers"]
        raise
    if not hasattr(module, "MultiTurnEnv"):
        raise ImportError(
            f"verifiers {getattr(module, '__version__', '?')} has no MultiTurnEnv (0.4 moved to "
            f"verifiers.v1); {INSTALL_HINT}"
        )
    return module


def gate_reasons(checks: Sequence[TrajectoryFilter]) -> tuple[str, ...]:
    """Every typed reason the gate can give: the outcome's, then each check's declared ones."""
    reasons: list[str] = list(OutcomeGate.reasons)
    for check in checks:
        reasons += list(getattr(check, "reasons", ()))
    return tuple(dict.fromkeys(reasons))


def rollout_verdict(state: Any) -> Verdict:
    """The gate's verdict on a finished rollout, computed once and kept in `state`; the
    trajectory goes into `state` as JSON too (ask for it with `state_columns`)."""
    if VERDICT_KEY not in state:
        env: DomainEnvironment = state[ENV_KEY]
        state[VERDICT_KEY] = environment_gate(env)
        state[TRAJECTORY_KEY] = environment_trajectory(env).model_dump_json()
    return state[VERDICT_KEY]


async def gate_reward(state: Any) -> float:
    """1.0 when `trajforge eval` would pass the rollout, else 0.0."""
    return 1.0 if rollout_verdict(state).kept else 0.0


def reason_metric(reason: str) -> Callable[..., Any]:
    """A 0/1 metric: did the gate refuse the rollout with `reason`."""

    async def metric(state: Any) -> float:
        return float(any(r.reason == reason for r in rollout_verdict(state).reasons))

    metric.__name__ = f"reason/{reason}"
    return metric


def gate_rubric(vf: ModuleType, checks: Sequence[TrajectoryFilter]) -> Any:
    """The eval gate as a `verifiers.Rubric`: the reward, then one metric per typed reason."""
    rubric = vf.Rubric(funcs=[gate_reward], weights=[1.0])
    for reason in gate_reasons(checks):
        rubric.add_metric(reason_metric(reason))
    return rubric


def env_system_prompt(domain: Domain) -> str:
    """The agent's system prompt: the domain policy; text turns reach the customer directly."""
    return agent_system_prompt(domain.policy, domain.vocabulary)


def dataset_rows(source: EnvTasks) -> list[dict[str, Any]]:
    """One row per task: the prompt (policy + the customer's opening, as the rollout will
    replay it) and the task as JSON in `info`, which `setup_state` resets from."""
    env_cls = environment_class(source.domain)
    rows = []
    for task in source.tasks:
        opening = env_cls().reset(task_json=task.to_json())
        rows.append(
            {
                "prompt": [
                    {"role": "system", "content": env_system_prompt(source.domain)},
                    {"role": "user", "content": opening},
                ],
                "info": {"task_json": task.to_json(), "task_id": task.id},
            }
        )
    return rows


def _parse_arguments(raw: Any) -> dict[str, Any] | str:
    """A tool call's arguments as a dict, or the error text the model gets back."""
    if isinstance(raw, dict):
        return raw
    try:
        parsed = json.loads(raw or "{}")
    except json.JSONDecodeError as err:
        return f"Error: the arguments are not valid JSON ({err}); send a JSON object"
    if not isinstance(parsed, dict):
        return "Error: the arguments must be a JSON object"
    return parsed


def build_environment_class(vf: ModuleType) -> type:
    """The MultiTurnEnv subclass (made at call time: its base class is optional)."""

    class TrajforgeEnv(vf.MultiTurnEnv):
        """A trajforge domain; one `DomainEnvironment` per rollout in `state`."""

        def __init__(self, env_cls: type[DomainEnvironment], **kwargs: Any):
            super().__init__(**kwargs)
            self.env_cls = env_cls

        async def setup_state(self, state: Any) -> Any:
            env = self.env_cls()
            opening = await asyncio.to_thread(env.reset, task_json=state["info"]["task_json"])
            state[ENV_KEY] = env
            prompt = list(state["prompt"])
            if prompt and prompt[-1].role == "user":  # the rollout's own opening, replayed
                prompt[-1] = vf.UserMessage(role="user", content=opening)
            state["prompt"] = prompt
            return state

        async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
            env: DomainEnvironment = state[ENV_KEY]
            last = messages[-1]
            calls = getattr(last, "tool_calls", None) or []
            if calls:
                replies = []
                for call in calls:
                    arguments = _parse_arguments(call.arguments)
                    if isinstance(arguments, dict):
                        text = await asyncio.to_thread(environment_call, env, call.name, arguments)
                    else:
                        text = arguments
                    replies.append(vf.ToolMessage(role="tool", content=text, tool_call_id=call.id))
                return replies
            content = last.content if isinstance(last.content, str) else ""
            reply = await asyncio.to_thread(env.send_message_to_user, content)
            message = [vf.UserMessage(role="user", content=reply)]
            if environment_over(env):
                state["final_env_response"] = message
            return message

    return TrajforgeEnv


def load_environment(
    domain: str = "retail",
    tasks: str | None = None,
    split: str = "golden",
    num_tasks: int = 8,
    seed: int = 0,
    max_turns: int = 40,
    max_user_turns: int = 30,
    checks: Sequence[TrajectoryFilter] | None = None,
    user_factory: UserFactory | None = None,
) -> Any:
    """The `verifiers` entry point: `vf.load_environment`-style keyword arguments.

    `tasks` a finished run directory (its `split`, golden by default) or None for `num_tasks`
    fresh tasks from `seed`; `max_turns` caps model turns, `max_user_turns` the user's;
    `checks` None is `trajforge eval`'s gate (the domain's policy rules), `()` outcome only;
    `user_factory` None the scripted user (with the domain's user tools, if it has any)."""

    vf = prime_verifiers()
    source = EnvTaskSource(domain=domain, tasks=tasks, split=split, num_tasks=num_tasks, seed=seed)
    loaded = load_env_tasks(source)
    gate_checks = tuple(CHECKS if checks is None else checks)
    env_cls = environment_class(
        loaded.domain,
        user_factory=user_factory,
        checks=gate_checks,
        max_user_turns=max_user_turns,
    )
    # lazy, measured start-up cost: datasets ~620 ms
    from datasets import Dataset

    rows = Dataset.from_list(dataset_rows(loaded))
    return build_environment_class(vf)(
        env_cls,
        dataset=rows,
        eval_dataset=rows,
        tool_defs=domain_tool_defs(loaded.domain),
        rubric=gate_rubric(vf, gate_checks),
        max_turns=max_turns,
        env_id=f"trajforge-{loaded.domain.name}",
    )
