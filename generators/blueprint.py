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

import asyncio
import json
import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from generators.agent import oracle_closing
from generators.entities import check_entities, entity_tokens
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
Verbalise = Literal["all", "user", "none"]

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
            args = json.dumps(item.call.arguments, sort_keys=True)
            required = tuple(t for t in entity_tokens(confirm) if t in args)
            plan.append(Utterance("assistant", confirm, required, (*agent_facts, args)))
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


_PROMPT_LEAK = re.compile(
    r"\[/?[A-Z][A-Z ]+\]|\bdraft\b|required entit|^\s*(?:customer|agent)\s*:", re.I | re.M
)
_FILLER = frozenset({"that", "this", "with", "your", "please", "could", "would", "then", "have"})


def keeps_draft(text: str, draft: str, share: float = 0.5) -> bool:
    """Lexical fidelity: at least `share` of the draft's content words survive the rewrite.

    Entities alone do not pin down meaning (a question with no entity can be rewritten into
    anything), so the rewrite must also keep most of what the draft talks about.
    """
    words = {w for w in re.findall(r"[a-z']{4,}", draft.lower()) if w not in _FILLER}
    if not words:
        return True
    kept = set(re.findall(r"[a-z']{4,}", text.lower()))
    return len(words & kept) >= share * len(words)


def acceptable(text: str, utterance: Utterance) -> bool:
    """A rewrite is kept only if it keeps the entities and meaning, invents none, stays in role."""
    if not text or len(text) > max(240, 3 * len(utterance.draft)) or "###" in text:
        return False
    if _PROMPT_LEAK.search(text) or not keeps_draft(text, utterance.draft):
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

    async def keep_draft(self, utterance: Utterance) -> str:
        self.templated += 1
        return utterance.draft

    async def write(self, index: int, utterance: Utterance, context: str) -> str:
        speaker = "customer" if utterance.speaker == "user" else "agent"
        persona = self.task.persona if utterance.speaker == "user" else None
        system = Message(role="system", content=verbaliser_system_prompt(speaker, persona))
        prompt = verbaliser_user_prompt(utterance.draft, utterance.required, context)
        # Greedy decoding ignores the seed: a retry would repeat the same answer, so don't pay it.
        attempts = self.max_retries + 1 if self.sampling.temperature > 0 else 1
        for attempt in range(attempts):
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


def _selected(utterance: Utterance, verbalise: Verbalise) -> bool:
    return verbalise == "all" or (verbalise == "user" and utterance.speaker == "user")


def _context(messages: list[Message], limit: int = 2) -> str:
    """The last few messages as short lines, for the verbaliser's prompt."""
    lines = []
    for m in messages[1:]:
        if m.role == "tool":
            lines.append(f"Tool result: {(m.content or '')[:160]}")
        elif m.content:
            lines.append(f"{'Customer' if m.role == 'user' else 'Agent'}: {m.content}")
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
    state, calls = execute_skeleton(task, domain)
    plan = plan_blueprint(task, calls)
    system = Message(role="system", content=agent_system_prompt(domain.policy))
    contexts = draft_contexts(plan, system)
    writer = _Verbaliser(llm, model, task, seed, sampling, max_retries)
    written = await asyncio.gather(
        *(
            writer.write(i, plan[i], context)  # type: ignore[arg-type]
            if _selected(plan[i], verbalise)  # type: ignore[arg-type]
            else writer.keep_draft(plan[i])  # type: ignore[arg-type]
            for i, context in contexts.items()
        )
    )
    messages, steps = assemble(plan, dict(zip(contexts, written, strict=True)), system)
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
