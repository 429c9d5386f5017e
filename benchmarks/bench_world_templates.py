"""World templates on vs off, alternating in one process (no Beam, no HTTP).

Synthesis + verification, then a scripted rollout (the gold plan, each call preceded by a
failing variant of it, and a scripted user) for each retail task, 64 tasks at a time (about
what a build has in flight, so templates live as long as they do there), with the build's GC
thresholds; `TEMPLATES.enabled` toggled between runs over the same seeds. Prints CPU ms per
task of each phase and a digest of the trajectory ids, which must agree.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import hashlib
import time

from trajforge.generators.agent import AgentTurn
from trajforge.generators.domains import get_domain
from trajforge.generators.personas import sample_persona
from trajforge.generators.replays import MEMO
from trajforge.generators.rollout import run_rollout
from trajforge.generators.task_verification import verify_task
from trajforge.generators.tooling import TaskRejected
from trajforge.generators.user import ScriptedUser
from trajforge.generators.world_templates import TEMPLATES
from trajforge.schemas import Message, Provenance, Task, ToolCall

WINDOW = 64
PROVENANCE = Provenance(models={"agent": "scripted", "user": "scripted"}, seeds={"rollout": 1})


class ClumsyOracle:
    """The gold plan, each call preceded by the same call on an unknown id (a failed write)."""

    def __init__(self, task: Task) -> None:
        self.calls: list[ToolCall] = []
        for i, action in enumerate(task.gold_actions):
            bad = {k: ("#NOPE" if isinstance(v, str) else v) for k, v in action.arguments.items()}
            self.calls += [
                ToolCall(id=f"bad{i}", name=action.name, arguments=bad),
                ToolCall(id=f"ok{i}", name=action.name, arguments=action.arguments),
            ]

    async def act(self, messages, tools, seed) -> AgentTurn:
        done = sum(m.role == "tool" for m in messages)
        if done >= len(self.calls):
            return AgentTurn(Message(role="assistant", content="All done. Anything else?"))
        return AgentTurn(Message(role="assistant", tool_calls=(self.calls[done],)))


def window(domain, seeds: range) -> tuple[float, float, list[str]]:
    """CPU seconds of synthesis + verification, then of the rollouts, and the trajectory ids."""
    started = time.process_time()
    tasks = []
    for seed in seeds:
        with contextlib.suppress(TaskRejected):
            tasks.append(verify_task(domain, domain.synthesize_task(sample_persona(seed), seed)))
    synthesised = time.process_time()
    ids = []
    for task in tasks:
        agent, user = ClumsyOracle(task), ScriptedUser(task)
        rollout = run_rollout(task, domain, agent, user, seed=1, provenance=PROVENANCE, max_turns=4)
        ids.append(asyncio.run(rollout).id)
    return synthesised - started, time.process_time() - synthesised, ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=320)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    gc.set_threshold(10_000, 50, 20)  # pipelines/gc_tuning.py BUILD_THRESHOLDS
    domain = get_domain("retail")
    window(domain, range(1000, 1000 + WINDOW))  # warm-up
    totals = {True: [0.0, 0.0, 0], False: [0.0, 0.0, 0]}
    for _ in range(args.repeats):
        for enabled in (True, False):
            TEMPLATES.enabled = enabled
            MEMO.clear()
            TEMPLATES.clear()
            ids: list[str] = []
            for start in range(0, args.tasks, WINDOW):
                synth, roll, done = window(domain, range(start, min(start + WINDOW, args.tasks)))
                totals[enabled][0] += synth
                totals[enabled][1] += roll
                ids += done
            totals[enabled][2] += len(ids)
            digest = hashlib.sha256("".join(ids).encode()).hexdigest()[:16]
            print(f"templates {'on ' if enabled else 'off'}: {len(ids)} tasks, digest {digest}")
    for enabled, (synth, roll, count) in totals.items():
        print(
            f"templates {'on ' if enabled else 'off'}: synthesis+verification "
            f"{1000 * synth / count:.2f} ms/task, rollout {1000 * roll / count:.2f} ms/task, "
            f"total {1000 * (synth + roll) / count:.2f}"
        )


if __name__ == "__main__":
    main()
