"""Where an exported RL environment gets its tasks: a run's split, or fresh tasks from seeds.

The `verifiers` export (finetune/verifiers_env.py) and the OpenEnv server
(finetune/openenv_server.py) take the same source, so one config names the domain and the
tasks for both, and both pick tasks exactly as `trajforge eval` does (`read_split` for a run
directory, `fresh_tasks` from seeds otherwise) but in their own seed namespace ("env"), so an
environment never hands out a task a build or an evaluation already drew from seeds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from trajforge.generators.domains import get_domain
from trajforge.generators.tooling import Domain
from trajforge.schemas import Task

#: Seed namespace of environment tasks drawn from seeds (evaluation uses "eval", OPD "opd").
NAMESPACE = "env"


class EnvTaskSource(BaseModel):
    """The domain and its tasks: every task of `tasks`' `split`, or `num_tasks` from `seed`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    domain: str = "retail"
    tasks: str | None = None  # a finished run directory (its `split` is the task list)
    split: str = "golden"
    num_tasks: int = Field(default=8, ge=1)  # fresh tasks from seeds, without `tasks`
    seed: int = 0

    @model_validator(mode="after")
    def _tasks_is_a_run(self) -> EnvTaskSource:
        if self.tasks is not None and not Path(self.tasks).is_dir():
            raise ValueError(f"tasks: {self.tasks} is not a directory; give a finished run dir")
        return self


@dataclass(frozen=True)
class EnvTasks:
    """A domain instance and the tasks an environment serves, in a fixed order (a dataclass:
    a domain is behaviour, not a record)."""

    domain: Domain
    tasks: tuple[Task, ...]


def load_env_tasks(source: EnvTaskSource) -> EnvTasks:
    """The source's domain and tasks; an empty task list is an error naming the fix."""
    # lazy, measured start-up cost: evaluate ~120 ms
    from trajforge.finetune.evaluate import fresh_tasks, read_split

    if source.tasks is not None:  # a run's tasks carry their domain (`domain`: fresh tasks')
        run = read_split(source.tasks, source.split)
        domain, tasks = run.domain, list(run.tasks)
    else:
        domain = get_domain(source.domain)
        tasks, skipped = fresh_tasks(domain, NAMESPACE, source.seed, source.num_tasks)
        if not tasks:
            raise ValueError(
                f"num_tasks: none of {source.num_tasks} seeded {source.domain} tasks verified "
                f"(skipped: {skipped}); raise num_tasks or give tasks=RUN_DIR"
            )
    return EnvTasks(domain=domain, tasks=tuple(tasks))
