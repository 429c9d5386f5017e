"""Blueprint mode: execute the gold plan for a grounded skeleton, then verbalise around it.

The tool calls and their results come from the simulator, never from a model, so every fact in
the trajectory is grounded (`blueprint_plan.py`: skeleton and conversation plan). An LLM only
rewrites short drafts in a persona's voice (`verbalise.py`: the rewrite and its entity check).
This module assembles the two into a `Trajectory`; how many utterances were model-written vs
templated is recorded in `Trajectory.verbalisation`.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Literal

from trajforge.generators.blueprint_plan import (
    PlanItem,
    SkeletonCall,
    Utterance,
    execute_skeleton,
    plan_blueprint,
)
from trajforge.generators.domain_options import options_of
from trajforge.generators.prompts import STOP_TOKEN, agent_system_prompt
from trajforge.generators.tooling import Domain
from trajforge.generators.verbalise import Verbaliser
from trajforge.schemas import (
    LLMClient,
    Message,
    Provenance,
    SamplingParams,
    StepRecord,
    Task,
    Trajectory,
    VerbalisationStats,
)

Verbalise = Literal["all", "user", "none"]

DEFAULT_SAMPLING = SamplingParams(temperature=0.7, max_tokens=64)


def _selected(utterance: Utterance, verbalise: Verbalise) -> bool:
    return verbalise == "all" or (verbalise == "user" and utterance.speaker == "user")


def _context(messages: list[Message], limit: int = 2) -> str:
    """The last few messages as short lines, for the verbaliser's prompt."""
    lines = []
    for m in messages[1:]:
        if m.role == "tool":
            lines.append(f"Tool result: {(m.content or '')[:160]}")
        elif m.content:
            lines.append(f"{'User' if m.role == 'user' else 'Agent'}: {m.content}")
    return "\n".join(lines[-limit:])


def assemble(
    plan: list[PlanItem], texts: dict[int, str], system: Message
) -> tuple[list[Message], list[StepRecord]]:
    """The conversation and step records for a plan, with `texts` for its utterances."""
    messages = [system]
    steps: list[StepRecord] = []
    user_turns = 0
    for index, item in enumerate(plan):
        if isinstance(item, SkeletonCall):
            messages.extend(_call_messages(item))
            steps.append(_step(item, len(steps), max(user_turns - 1, 0)))
            continue
        text = texts[index]
        if index == len(plan) - 1:
            text = f"{text} {STOP_TOKEN}"
        messages.append(Message(role=item.speaker, content=text))
        user_turns += item.speaker == "user"
    return messages, steps


def draft_contexts(plan: list[PlanItem], system: Message) -> dict[int, str]:
    """Each utterance's prompt context, from the drafts before it.

    Built from drafts rather than the model's rewrites so every utterance can be written at the
    same time (one batch on a local model, parallel requests on an endpoint).
    """
    drafts = {i: item.draft for i, item in enumerate(plan) if isinstance(item, Utterance)}
    messages, _ = assemble(plan, drafts, system)
    contexts: dict[int, str] = {}
    position = 1
    for index, item in enumerate(plan):
        if isinstance(item, SkeletonCall):
            position += 2
            continue
        contexts[index] = _context(messages[:position])
        position += 1
    return contexts


async def run_blueprint(
    task: Task,
    domain: Domain,
    llm: LLMClient,
    *,
    model: str,
    seed: int,
    provenance: Provenance,
    sampling: SamplingParams = DEFAULT_SAMPLING,
    max_retries: int = 1,
    verbalise: Verbalise = "all",
) -> Trajectory:
    """A grounded trajectory for `task`: gold skeleton, verbalised utterances, entity-checked.

    `verbalise` picks which utterances an LLM rewrites ("all", only the "user" turns, or
    "none"); the others keep their deterministic drafts. On a small CPU model, rewriting only
    the user's turns (where the persona's voice matters) halves the cost of a trajectory.
    """
    _, executed = execute_skeleton(task, domain)  # raises unless it ends at gold_final_hash
    # Writes carry the dumped state after them (for replays); a skeleton kept while its
    # utterances are written needs only the observation and the diff.
    calls = [SkeletonCall(c.call, replace(c.execution, state_after=None)) for c in executed]
    # Optional domain member: a domain whose policy asks no confirmation before a write.
    # Optional domain member: its phrasing table (generators/phrasing.py); generic without one.
    phrasing = options_of(domain).phrasing
    plan = plan_blueprint(task, calls, options_of(domain).confirm_writes, phrasing)
    system = Message(role="system", content=agent_system_prompt(domain.policy, domain.vocabulary))
    contexts = draft_contexts(plan, system)
    writer = Verbaliser(llm, model, task, seed, sampling, max_retries, domain.vocabulary)
    written = await all_or_none(
        [
            writer.write(i, plan[i], context)  # type: ignore[arg-type]
            if _selected(plan[i], verbalise)  # type: ignore[arg-type]
            else writer.keep_draft(plan[i])  # type: ignore[arg-type]
            for i, context in contexts.items()
        ]
    )
    messages, steps = assemble(plan, dict(zip(contexts, written, strict=True)), system)
    return Trajectory.create(
        task=task,
        mode="blueprint",
        messages=tuple(messages),
        steps=tuple(steps),
        termination="blueprint_complete",
        final_state_hash=task.gold_final_hash,  # what execute_skeleton checked it reaches
        cost=writer.cost,
        provenance=provenance,
        verbalisation=VerbalisationStats(
            model_written=writer.model_written, templated=writer.templated
        ),
    )


async def all_or_none(coros: list) -> list:
    """Results in order, or the first error with every other call cancelled: one failed
    utterance fails the element, so the calls still queued or retrying would be paid for
    nothing (`asyncio.gather` lets them all run: 152 requests for 10 tasks whose every call
    failed, issue 28)."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        failed = next((t for t in tasks if t in done and t.exception() is not None), None)
        if failed is None:
            return [t.result() for t in tasks]
        raise failed.exception()  # type: ignore[misc]
    finally:
        unfinished = [t for t in tasks if not t.done()]
        for t in unfinished:
            t.cancel()
        if unfinished:
            await asyncio.gather(*unfinished, return_exceptions=True)


def _call_messages(item: SkeletonCall) -> tuple[Message, Message]:
    call = item.call
    return (
        Message(role="assistant", content=None, tool_calls=(call,)),
        Message(
            role="tool", content=item.execution.observation, tool_call_id=call.id, name=call.name
        ),
    )


def _step(item: SkeletonCall, index: int, turn: int) -> StepRecord:
    return StepRecord(
        index=index,
        turn=turn,
        call=item.call,
        result=item.execution.observation,
        state_diff=item.execution.diff,
        mutating=item.execution.mutating,
    )
