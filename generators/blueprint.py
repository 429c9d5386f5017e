"""Blueprint mode: execute the gold plan for a grounded skeleton, then verbalise around it.

The tool calls and their results come from the simulator, never from a model, so every fact in
the trajectory is grounded. An LLM only rewrites short drafts (the user's next piece of info,
the agent's question, confirmation or summary) in a persona's voice; the entity-preservation
check (`generators.entities.check_entities`) accepts a rewrite only if it keeps every required
entity and invents none. A failing rewrite is retried with a new seed, then replaced by its
deterministic draft, so even a weak model (the embedded 135M one) yields a correct trajectory.
How many utterances were model-written vs templated is recorded in the provenance seeds under
`blueprint_model_written` / `blueprint_templated` (counts, not seeds; no schema change needed).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from generators.agent import oracle_closing
from generators.entities import check_entities
from generators.prompts import (
    STOP_TOKEN,
    agent_system_prompt,
    first_person,
    giving_info,
    info_label,
    verbaliser_system_prompt,
    verbaliser_user_prompt,
)
from generators.tooling import Domain, ToolExecution, state_hash
from generators.user import looks_like_agent, response_cost
from schemas import (
    ChatRequest,
    Cost,
    LLMClient,
    Message,
    Provenance,
    Rejected,
    SamplingParams,
    StepRecord,
    Task,
    ToolCall,
    Trajectory,
    derive_seed,
)

Speaker = Literal["user", "assistant"]

DEFAULT_SAMPLING = SamplingParams(temperature=0.7, max_tokens=64)


@dataclass(frozen=True)
class Utterance:
    """One message to verbalise: its template draft, the values it must state, what it may cite."""

    speaker: Speaker
    draft: str  # deterministic fallback; contains exactly the required entities
    required: tuple[str, ...]
    facts: tuple[str, ...]  # grounded text any entity-like token must come from


@dataclass(frozen=True)
class SkeletonCall:
    """One gold action as executed in the simulator."""

    call: ToolCall
    execution: ToolExecution


PlanItem = Utterance | SkeletonCall


# ---------------------------------------------------------------------------------------------
# Skeleton and plan (pure, deterministic)


def execute_skeleton(task: Task, domain: Domain) -> tuple[BaseModel, list[SkeletonCall]]:
    """Run the gold plan on a fresh state; refuse the task if any action fails or drifts."""
    state = domain.initial_state(task.initial_state)
    executed = []
    for i, action in enumerate(task.gold_actions):
        call = ToolCall(id=f"call_{i}", name=action.name, arguments=action.arguments)
        execution = domain.toolbox.execute(state, call)
        if execution.error is not None:
            raise Rejected(
                "generation_failed", f"gold action {i} ({action.name}): {execution.observation}"
            )
        executed.append(SkeletonCall(call, execution))
    if state_hash(state) != task.gold_final_hash:
        raise Rejected("generation_failed", "gold plan does not reach task.gold_final_hash")
    return state, executed


def _human(label: str) -> str:
    return label.replace("_", " ").strip()


def _describe_call(call: ToolCall) -> str:
    args = ", ".join(f"{_human(k)} {_arg_text(v)}" for k, v in call.arguments.items())
    return f"{_human(call.name)} ({args})" if args else _human(call.name)


def _arg_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _call_facts(item: SkeletonCall) -> tuple[str, ...]:
    return (json.dumps(item.call.arguments, sort_keys=True), item.execution.observation)


def plan_blueprint(task: Task, calls: list[SkeletonCall]) -> list[PlanItem]:
    """Order the conversation: opening, info exchange, confirmed actions, summary, close."""
    s = task.scenario
    user_facts = (s.reason_for_contact, s.instructions, *s.known_info.values())
    agent_facts: list[str] = [s.reason_for_contact]
    opening = first_person(s.reason_for_contact)
    plan: list[PlanItem] = [Utterance("user", opening, (), user_facts)]
    for label, value in s.known_info.items():
        ask = f"Could you please tell me the {info_label(label)}?"
        plan.append(Utterance("assistant", ask, (), tuple(agent_facts)))
        plan.append(Utterance("user", giving_info(label, value), (value,), user_facts))
        agent_facts.append(value)
    previous_mutating = False
    for item in calls:
        if item.execution.mutating and not previous_mutating:
            confirm = f"To confirm, I will {_describe_call(item.call)}. Do you confirm (yes/no)?"
            facts = (*agent_facts, json.dumps(item.call.arguments, sort_keys=True))
            plan.append(Utterance("assistant", confirm, (), facts))
            plan.append(Utterance("user", "Yes, please go ahead.", ("yes",), user_facts))
        previous_mutating = item.execution.mutating
        plan.append(item)
        agent_facts.extend(_call_facts(item))
    closing = oracle_closing(task)
    plan.append(Utterance("assistant", closing, task.expected_outputs, tuple(agent_facts)))
    plan.append(Utterance("user", "No, that's all. Thank you!", (), user_facts))
    return plan


# ---------------------------------------------------------------------------------------------
# Verbalisation

_SPEAKER_PREFIX = re.compile(r"^\s*(?:customer|user|agent|assistant|message)\s*:\s*", re.I)


def clean_utterance(text: str) -> str:
    """Strip what models wrap around a message: speaker labels, quotes, trailing paragraphs."""
    text = _SPEAKER_PREFIX.sub("", text.strip())
    text = text.split("\n\n")[0].strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return text


def acceptable(text: str, utterance: Utterance) -> bool:
    """A rewrite is kept only if it keeps the entities, invents none and stays in role."""
    if not text or len(text) > 600 or "###" in text:
        return False
    if utterance.speaker == "user" and looks_like_agent(text):
        return False
    return check_entities(text, utterance.required, utterance.facts).ok


@dataclass
class _Verbaliser:
    llm: LLMClient
    model: str
    task: Task
    seed: int
    sampling: SamplingParams
    max_retries: int
    cost: Cost = Cost()
    model_written: int = 0
    templated: int = 0

    async def write(self, index: int, utterance: Utterance, context: str) -> str:
        speaker = "customer" if utterance.speaker == "user" else "agent"
        persona = self.task.persona if utterance.speaker == "user" else None
        system = Message(role="system", content=verbaliser_system_prompt(speaker, persona))
        prompt = verbaliser_user_prompt(utterance.draft, utterance.required, context)
        for attempt in range(self.max_retries + 1):
            request = ChatRequest(
                model=self.model,
                messages=(system, Message(role="user", content=prompt)),
                sampling=self.sampling,
                seed=derive_seed(self.task.id, "blueprint", self.seed, index, attempt),
            )
            response = await self.llm.complete(request)
            self.cost = self.cost + response_cost(response)
            text = clean_utterance(response.message.content or "")
            if not response.message.tool_calls and acceptable(text, utterance):
                self.model_written += 1
                return text
        self.templated += 1
        return utterance.draft


def _context(messages: list[Message], limit: int = 3) -> str:
    """The last few messages as short lines, for the verbaliser's prompt."""
    lines = []
    for m in messages[1:]:
        if m.role == "tool":
            lines.append(f"Tool result: {(m.content or '')[:300]}")
        elif m.content:
            lines.append(f"{'Customer' if m.role == 'user' else 'Agent'}: {m.content}")
    return "\n".join(lines[-limit:])


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
) -> Trajectory:
    """A grounded trajectory for `task`: gold skeleton, verbalised utterances, entity-checked."""
    state, calls = execute_skeleton(task, domain)
    plan = plan_blueprint(task, calls)
    writer = _Verbaliser(llm, model, task, seed, sampling, max_retries)
    messages = [Message(role="system", content=agent_system_prompt(domain.policy))]
    steps: list[StepRecord] = []
    user_turns = 0
    for index, item in enumerate(plan):
        if isinstance(item, SkeletonCall):
            messages.extend(_call_messages(item))
            steps.append(_step(item, len(steps), max(user_turns - 1, 0)))
            continue
        text = await writer.write(index, item, _context(messages))
        if index == len(plan) - 1:
            text = f"{text} {STOP_TOKEN}"
        messages.append(Message(role=item.speaker, content=text))
        user_turns += item.speaker == "user"
    counts = {
        "blueprint_model_written": writer.model_written,
        "blueprint_templated": writer.templated,
    }
    return Trajectory.create(
        task=task,
        mode="blueprint",
        messages=tuple(messages),
        steps=tuple(steps),
        termination="blueprint_complete",
        final_state_hash=state_hash(state),
        cost=writer.cost,
        provenance=provenance.model_copy(update={"seeds": {**provenance.seeds, **counts}}),
    )


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
