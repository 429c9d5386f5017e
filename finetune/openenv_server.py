"""A trajforge domain behind OpenEnv's API (`openenv-core`): one command starts the server.

    python -m trajforge.finetune.openenv_server --domain retail --tasks RUN_DIR --port 8000

OpenEnv clients (`openenv.core.GenericEnvClient`, TRL's OpenEnv integration, ...) open a
WebSocket session; the server builds one environment instance per session (a fresh
`DomainEnvironment`, the same engine as the TRL and `verifiers` adapters), at most
`--max-sessions` at a time, and drops a session idle for `--session-timeout` seconds.
`reset(task_index=i)` (or `seed=s`, task `s mod n`; neither: the next task) starts a task and
observes the customer's opening plus the tools; each `step({"name": TOOL, "arguments": {...}})`
runs one domain tool, or `send_message_to_user` ({"message": ...}) whose observation is the
customer's reply. The episode is done when the customer ends the conversation or after
`--max-steps` steps; the last observation carries the reward (1.0 when `trajforge eval`'s gate
passes: outcome and the domain's policy rules, else 0.0), the gate's typed reasons and the
trajectory as JSON, so a client can check the reward against `trajforge eval` itself.

`openenv-core` is optional (`pip install 'trajforge[rl]'`); it is imported when the server is
built, not when this module is.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from trajforge.finetune.env_tasks import EnvTasks, EnvTaskSource, load_env_tasks
from trajforge.finetune.environments import (
    DomainEnvironment,
    domain_tool_defs,
    environment_call,
    environment_class,
    environment_gate,
    environment_over,
    environment_trajectory,
    user_tool_def,
)

INSTALL_HINT = "pip install 'trajforge[rl]' (openenv-core>=0.3,<0.4)"


class ServeEnvConfig(BaseModel):
    """What `python -m trajforge.finetune.openenv_server` serves, and its bounds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: EnvTaskSource = EnvTaskSource()
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    max_sessions: int = Field(default=4, ge=1)  # concurrent sessions (one env instance each)
    session_timeout_s: float = Field(default=600.0, gt=0)  # an idle session is dropped
    max_steps: int = Field(default=60, ge=1)  # steps per episode before it is cut (done)
    max_user_turns: int = Field(default=30, ge=1)


def _openenv() -> tuple[Any, Any]:
    """(openenv.core.env_server, its types), or a clear error when the extra is missing."""
    try:
        # lazy: optional dependency (the rl extra)
        from openenv.core import env_server
        from openenv.core.env_server import types
    except ImportError as err:
        raise ImportError(f"openenv-core is not installed ({err}): {INSTALL_HINT}") from err
    return env_server, types


def build_models(types: Any) -> tuple[type, type, type]:
    """(action, observation, state) classes on OpenEnv's bases (made at call time: optional)."""

    class ToolAction(types.Action):
        """One call: a domain tool, or `send_message_to_user` with {"message": ...}."""

        name: str
        arguments: dict[str, Any] = {}

    class DomainObservation(types.Observation):
        """What the agent sees; at the end also the gate's reasons and the trajectory."""

        text: str = ""
        task_id: str = ""
        tools: list[dict[str, Any]] = []
        reasons: list[str] = []
        trajectory_json: str | None = None

    class DomainState(types.State):
        task_id: str = ""

    return ToolAction, DomainObservation, DomainState


def environment_factory(
    env_server: Any, types: Any, loaded: EnvTasks, cfg: ServeEnvConfig
) -> Callable[[], Any]:
    """A zero-argument factory of OpenEnv environments: OpenEnv calls it once per session."""
    _, Observation, State = build_models(types)
    env_cls = environment_class(loaded.domain, max_user_turns=cfg.max_user_turns)
    tools = [*domain_tool_defs(loaded.domain), user_tool_def()]

    class TrajforgeOpenEnv(env_server.Environment):
        """One session: a `DomainEnvironment` reset per episode (no shared mutable state)."""

        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            super().__init__()
            self._env: DomainEnvironment | None = None
            self._state = State()
            self._next = itertools.count()

        def reset(
            self,
            seed: int | None = None,
            episode_id: str | None = None,
            task_index: int | None = None,
            **kwargs: Any,
        ) -> Any:
            n = len(loaded.tasks)
            if task_index is not None and not 0 <= task_index < n:
                raise ValueError(f"task_index: {task_index} is not in 0..{n - 1}")
            index = task_index if task_index is not None else seed if seed is not None else None
            task = loaded.tasks[(next(self._next) if index is None else index) % n]
            self._env = env_cls()
            opening = self._env.reset(task_json=task.to_json())
            self._state = State(episode_id=episode_id, step_count=0, task_id=task.id)
            return Observation(text=opening, task_id=task.id, tools=tools, done=False)

        def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
            if self._env is None:
                raise RuntimeError("call reset() before step()")
            self._state.step_count += 1
            text = environment_call(self._env, action.name, dict(action.arguments))
            task_id = self._state.task_id
            if not (environment_over(self._env) or self._state.step_count >= cfg.max_steps):
                return Observation(text=text, task_id=task_id, done=False, reward=0.0)
            verdict = environment_gate(self._env)
            return Observation(
                text=text,
                task_id=task_id,
                done=True,
                reward=1.0 if verdict.kept else 0.0,
                reasons=[r.reason for r in verdict.reasons],
                trajectory_json=environment_trajectory(self._env).model_dump_json(),
            )

        @property
        def state(self) -> Any:
            return self._state

    return TrajforgeOpenEnv


def build_app(cfg: ServeEnvConfig) -> Any:
    """The FastAPI app: OpenEnv's HTTP + WebSocket routes over this domain's tasks."""
    env_server, types = _openenv()
    loaded = load_env_tasks(cfg.source)
    action_cls, observation_cls, _ = build_models(types)
    return env_server.create_fastapi_app(
        environment_factory(env_server, types, loaded, cfg),
        action_cls,
        observation_cls,
        concurrency_config=types.ConcurrencyConfig(
            max_concurrent_envs=cfg.max_sessions, session_timeout=cfg.session_timeout_s
        ),
    )


def parse_args(argv: list[str] | None = None) -> ServeEnvConfig:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domain", default="retail")
    parser.add_argument("--tasks", default=None, help="a finished run directory")
    parser.add_argument("--split", default="golden")
    parser.add_argument("--num-tasks", type=int, default=8, help="fresh tasks, without --tasks")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--max-sessions", type=int, default=4)
    parser.add_argument("--session-timeout", type=float, default=600.0)
    parser.add_argument("--max-steps", type=int, default=60)
    parser.add_argument("--max-user-turns", type=int, default=30)
    a = parser.parse_args(argv)
    source = EnvTaskSource(
        domain=a.domain, tasks=a.tasks, split=a.split, num_tasks=a.num_tasks, seed=a.seed
    )
    return ServeEnvConfig(
        source=source,
        host=a.host,
        port=a.port,
        max_sessions=a.max_sessions,
        session_timeout_s=a.session_timeout,
        max_steps=a.max_steps,
        max_user_turns=a.max_user_turns,
    )


def main(argv: list[str] | None = None) -> None:
    # lazy: optional dependency (the rl extra)
    import uvicorn

    cfg = parse_args(argv)
    app = build_app(cfg)
    print(f"serving {cfg.source.domain} on http://{cfg.host}:{cfg.port}", flush=True)
    uvicorn.run(app, host=cfg.host, port=cfg.port, log_level="warning")


if __name__ == "__main__":
    sys.exit(main())
