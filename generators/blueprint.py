"""Blueprint mode: execute the gold plan for a grounded skeleton, then verbalise around it.

The tool calls and their results come from the simulator, never from a model, so every fact in
the trajectory is grounded. An LLM only rewrites short drafts (the user's next piece of info,
the agent's question, confirmation or summary) in a persona's voice; the entity-preservation
check (`generators.entities.check_entities`) accepts a rewrite only if it keeps every required
entity and invents none. A failing rewrite is retried with a new seed, then replaced by its
deterministic draft, so even a weak model (the embedded 135M one) yields a correct trajectory.
How many utterances were model-written vs templated is recorded in `Trajectory.verbalisation`.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from trajforge.generators.agent import oracle_closing, spoken, write_report
from trajforge.generators.entities import check_entities, entity_tokens
from trajforge.generators.prompts import (
    STOP_TOKEN,
    agent_system_prompt,
    first_person,
    giving_info,
    info_label,
    verbaliser_system_prompt,
    verbaliser_user_prompt,
)
from trajforge.generators.tooling import Domain, ToolExecution, state_hash
from trajforge.generators.user import looks_like_agent, response_cost
from trajforge.schemas import (
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
    VerbalisationStats,
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
    """An argument in words (lists joined with "and"): customer text never shows JSON."""
    return spoken(value)


def _call_facts(item: SkeletonCall) -> tuple[str, ...]:
    return (json.dumps(item.call.arguments, sort_keys=True), item.execution.observation)


def _leaves(value: object) -> list[str]:
    """Every scalar leaf of a JSON-like argument value, as text (bools and None carry no fact)."""
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in _leaves(v)]
    if value is None or isinstance(value, bool):
        return []
    return [str(value)]


def _states(text: str, token: str) -> bool:
    """`token` occurs in `text` as a whole token (case-insensitive): `1` is not in `#A1001`."""
    if len(token.strip()) < 2:
        return False
    return re.search(rf"(?<!\w){re.escape(token.strip())}(?!\w)", text, re.I) is not None


def needs_info(call: ToolCall, value: str) -> bool:
    """A call needs a known-info value when one of its arguments states part of it or all of it.

    Name + zip feed `first_name`/`zip`, an order id feeds `order_id`, an address text feeds the
    address fields, a cancel reason feeds `reason`: the user must have said it before the call.
    """
    return any(_states(value, leaf) or _states(leaf, value) for leaf in _leaves(call.arguments))


def _linked(call: ToolCall, label: str, value: str) -> bool:
    """The item is about what the call touches: its label or value names an id in the arguments
    ("items to return from #W1" is linked to every call on order #W1)."""
    leaves = _leaves(call.arguments)
    tokens = entity_tokens(f"{label} {value}")
    return any(_states(leaf, token) for token in tokens for leaf in leaves)


_PROPER_NAME = re.compile(r"[A-Z][\w'-]*(?: [A-Z][\w'-]*)*")


def _shows(item: SkeletonCall, value: str) -> bool:
    """The call's output shows a name the value uses (a product, a card brand): the agent reads
    it there, so the user says it first ("your order with the Desk Lamp" before that order)."""
    names = [n for n in _PROPER_NAME.findall(value) if len(n) >= 3]
    return any(_states(item.execution.observation, n) for n in names)


def info_slots(known_info: dict[str, str], calls: list[SkeletonCall]) -> list[int]:
    """For each known-info item, the index of the gold call it is asked right before.

    An item some call needs goes right before the first such call (authentication right after
    the user gives name + zip, an order lookup right after the user names the order). An item no
    call needs but that is about what a call touches goes right after the first such call (the
    items to exchange, once the order is open). Any other item goes no earlier than the item
    before it in `known_info` (sub-goals are listed in gold order), and right before the first
    later call whose output shows a name it uses (a product asked about, before the product
    list; a write's output does not count: it answers the request just made); the first item,
    if unlinked, goes with the opening (a name with an email sign-in).
    `len(calls)` means "before the summary".
    """
    slots: list[int] = []
    for label, value in known_info.items():
        needing = [i for i, item in enumerate(calls) if needs_info(item.call, value)]
        linked = [i for i, item in enumerate(calls) if _linked(item.call, label, value)]
        if needing:
            slots.append(needing[0])
        elif linked:
            slots.append(min(linked[0] + 1, len(calls)))
        elif not slots:
            slots.append(0)
        else:
            after = slots[-1]
            shown = [
                i
                for i in range(after, len(calls))
                if not calls[i].execution.mutating and _shows(calls[i], value)
            ]
            slots.append(shown[0] if shown else after)
    return slots


@dataclass
class _PlanWriter:
    """Builds the plan in conversation order, tracking what each speaker may cite so far."""

    user_facts: tuple[str, ...]
    agent_facts: list[str]
    plan: list[PlanItem]
    confirm_writes: bool = True

    def exchange_info(self, label: str, value: str) -> None:
        ask = f"Could you please tell me the {info_label(label)}?"
        self.plan.append(Utterance("assistant", ask, (), tuple(self.agent_facts)))
        self.plan.append(Utterance("user", giving_info(label, value), (value,), self.user_facts))
        self.agent_facts.append(value)

    def confirm(self, call: ToolCall) -> None:
        confirm = f"To confirm, I will {_describe_call(call)}. Do you confirm (yes/no)?"
        args = json.dumps(call.arguments, sort_keys=True)
        required = tuple(t for t in entity_tokens(confirm) if t in args)
        self.plan.append(Utterance("assistant", confirm, required, (*self.agent_facts, args)))
        self.plan.append(Utterance("user", "Yes, please go ahead.", ("yes",), self.user_facts))

    def execute(self, item: SkeletonCall) -> None:
        if item.execution.mutating and self.confirm_writes:
            self.confirm(item.call)
        self.plan.append(item)
        self.agent_facts.extend(_call_facts(item))


def write_reports(calls: list[SkeletonCall]) -> list[str]:
    """The closing's sentence per successful write (what was done, how it came out)."""
    return [
        write_report(c.call.name, c.call.arguments, c.execution.observation)
        for c in calls
        if c.execution.mutating and c.execution.error is None
    ]


def plan_blueprint(
    task: Task, calls: list[SkeletonCall], confirm_writes: bool = True
) -> list[PlanItem]:
    """Order the conversation as a real support exchange: opening, then for each gold call the
    info it needs (asked and answered right before it) and, before a write, a confirmation;
    then the summary with the expected outputs and the user's close. Known info the user already
    said in the opening (a search question) is not asked for again; a domain whose policy needs no
    confirmation (`confirm_writes = False`, search's final answer) gets none.

    The calls keep the gold order, and every value a call passes was said by the user or shown
    by a tool before it, so the shortcut filters see evidence before every use.
    """
    s = task.scenario
    user_facts = (s.reason_for_contact, s.instructions, *s.known_info.values())
    writer = _PlanWriter(
        user_facts,
        [s.reason_for_contact],
        [Utterance("user", first_person(s.reason_for_contact), (), user_facts)],
        confirm_writes,
    )
    slots = info_slots(dict(s.known_info), calls)
    items = list(s.known_info.items())
    for index in range(len(calls) + 1):
        for (label, value), slot in zip(items, slots, strict=True):
            if slot == index and value not in s.reason_for_contact:
                writer.exchange_info(label, value)
        if index < len(calls):
            writer.execute(calls[index])
    closing = oracle_closing(task, write_reports(calls))
    plan = writer.plan
    plan.append(Utterance("assistant", closing, task.expected_outputs, tuple(writer.agent_facts)))
    plan.append(Utterance("user", "No, that's all. Thank you!", (), user_facts))
    return plan


# ---------------------------------------------------------------------------------------------
# Verbalisation

_SPEAKER_PREFIX = re.compile(r"^\s*(?:customer|user|agent|assistant|message)\s*:\s*", re.I)


def clean_utterance(text: str) -> str:
    """Strip what models wrap around a message: speaker labels, quotes, trailing paragraphs."""
    text = _SPEAKER_PREFIX.sub("", text.strip())
    # One chat message is one line: small models repeat themselves on the following lines.
    text = text.strip().split("\n")[0].strip()
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
    plan = plan_blueprint(task, calls, getattr(domain, "confirm_writes", True))
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
    return Trajectory.create(
        task=task,
        mode="blueprint",
        messages=tuple(messages),
        steps=tuple(steps),
        termination="blueprint_complete",
        final_state_hash=state_hash(state),
        cost=writer.cost,
        provenance=provenance,
        verbalisation=VerbalisationStats(
            model_written=writer.model_written, templated=writer.templated
        ),
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
