"""Blueprint skeleton and plan: the gold calls as executed, and the conversation around them.

Pure and deterministic. `execute_skeleton` runs the gold plan in the simulator (so every tool
result is real); `plan_blueprint` orders a support exchange around those calls: each known-info
item asked and answered right before the first call that needs it (`info_slots`), a
confirmation before each write, then the summary with the expected outputs. Whether a call
"needs" a value uses the one "states the value" rule of `generators.values.states_value`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel

from trajforge.generators.agent_voice import (
    ask_for,
    closing,
    confirm_prompt,
    task_answers,
    user_name,
    write_report,
)
from trajforge.generators.entities import entity_tokens
from trajforge.generators.phrasing import NO_PHRASING, Phrasing
from trajforge.generators.reports import WriteOutcome
from trajforge.generators.tooling import Domain, LiveDump, ToolExecution
from trajforge.generators.values import leaf_strings, states_value
from trajforge.generators.voice import UserVoice
from trajforge.schemas import Rejected, Task, ToolCall

Speaker = Literal["user", "assistant"]


@dataclass(frozen=True)
class Utterance:
    """One message to verbalise: its template draft, the values it must state, what it may cite."""

    speaker: Speaker
    draft: str  # deterministic fallback; contains exactly the required entities
    required: tuple[str, ...]
    facts: tuple[str, ...]  # grounded text any entity-like token must come from
    #: Writes whose result this utterance (the closing) must still tell after a rewrite.
    tells: tuple[WriteOutcome, ...] = ()


@dataclass(frozen=True)
class SkeletonCall:
    """One gold action as executed in the simulator."""

    call: ToolCall
    execution: ToolExecution


PlanItem = Utterance | SkeletonCall


def execute_skeleton(task: Task, domain: Domain) -> tuple[BaseModel, list[SkeletonCall]]:
    """Run the gold plan on a fresh state; refuse the task if any action fails or drifts."""
    state = domain.initial_state(task.initial_state)
    live = LiveDump()  # one dump per state version: the writes' diffs and the final hash
    executed = []
    for i, action in enumerate(task.gold_actions):
        call = ToolCall(id=f"call_{i}", name=action.name, arguments=action.arguments)
        execution = live.execute(domain.toolbox, state, call)
        if execution.error is not None:
            raise Rejected(
                "generation_failed", f"gold action {i} ({action.name}): {execution.observation}"
            )
        executed.append(SkeletonCall(call, execution))
    if live.state_hash(state) != task.gold_final_hash:
        raise Rejected("generation_failed", "gold plan does not reach task.gold_final_hash")
    return state, executed


def _call_facts(item: SkeletonCall) -> tuple[str, ...]:
    return (json.dumps(item.call.arguments, sort_keys=True), item.execution.observation)


def needs_info(call: ToolCall, value: str) -> bool:
    """A call needs a known-info value when one of its arguments states part of it or all of it.

    Name + zip feed `first_name`/`zip`, an order id feeds `order_id`, an address text feeds the
    address fields, a cancel reason feeds `reason`: the user must have said it before the call.
    """
    return any(
        states_value(value, leaf) or states_value(leaf, value)
        for leaf in leaf_strings(call.arguments)
    )


def _linked(call: ToolCall, label: str, value: str) -> bool:
    """The item is about what the call touches: its label or value names an id in the arguments
    ("items to return from #W1" is linked to every call on order #W1)."""
    leaves = leaf_strings(call.arguments)
    tokens = entity_tokens(f"{label} {value}")
    return any(states_value(leaf, token) for token in tokens for leaf in leaves)


_PROPER_NAME = re.compile(r"[A-Z][\w'-]*(?: [A-Z][\w'-]*)*")


def _shows(item: SkeletonCall, value: str) -> bool:
    """The call's output shows a name the value uses (a product, a card brand): the agent reads
    it there, so the user says it first ("your order with the Desk Lamp" before that order)."""
    names = [n for n in _PROPER_NAME.findall(value) if len(n) >= 3]
    return any(states_value(item.execution.observation, n) for n in names)


def info_slots(known_info: dict[str, str], calls: list[SkeletonCall]) -> list[int]:
    """For each known-info item, the index of the gold call it is asked right before.

    An item some call needs goes right before the first such call (authentication right after
    the user gives name + zip, an order lookup right after the user names the order). An item no
    call needs but that is about what a call touches goes right after the first such call (the
    items to exchange, once the order is open). Any other item goes no earlier than the item
    before it in `known_info` (sub-goals are listed in gold order), and right before the first
    later call whose output shows a name it uses (a product asked about, before the product
    list; a write's output does not count: it answers the request just made; when that call
    ends a run of look-ups of the same tool, a search over candidates, the item goes before the
    run); the first item, if unlinked, goes with the opening (a name with an email sign-in).
    `len(calls)` means "before the summary".
    """
    slots: list[int] = []
    for label, value in known_info.items():
        # Only the first needing (else linked) call counts: stop the scan there (pure checks).
        needing = next((i for i, item in enumerate(calls) if needs_info(item.call, value)), None)
        linked = None
        if needing is None:
            linked = next(
                (i for i, item in enumerate(calls) if _linked(item.call, label, value)), None
            )
        if needing is not None:
            slots.append(needing)
        elif linked is not None:
            slots.append(min(linked + 1, len(calls)))
        elif not slots:
            slots.append(0)
        else:
            after = slots[-1]
            shown = [
                i
                for i in range(after, len(calls))
                if not calls[i].execution.mutating and _shows(calls[i], value)
            ]
            slots.append(_search_start(calls, shown[0], after) if shown else after)
    return slots


def _search_start(calls: list[SkeletonCall], found: int, after: int) -> int:
    """The first of the run of same-tool reads that ends at `found`: the agent opens candidates
    (the user's orders) until one shows what the user described, so the user describes it
    before the search starts, not before the last look."""
    start = found
    while (
        start - 1 >= after
        and calls[start - 1].call.name == calls[found].call.name
        and not calls[start - 1].execution.mutating
    ):
        start -= 1
    return start


@dataclass
class _PlanWriter:
    """Builds the plan in conversation order, tracking what each speaker may cite so far.

    The user's drafts are in the persona's voice (`UserVoice`), the agent's vary by the task id
    and position (`agent_voice`): both keyed by the plan index, so rows differ and a build is
    deterministic."""

    task_id: str
    voice: UserVoice
    user_facts: tuple[str, ...]
    agent_facts: list[str]
    plan: list[PlanItem]
    confirm_writes: bool = True
    phrasing: Phrasing = NO_PHRASING
    observations: list[str] = field(default_factory=list)

    def exchange_info(self, label: str, value: str) -> None:
        ask = ask_for(label, self.task_id, len(self.plan))
        self.plan.append(Utterance("assistant", ask, (), tuple(self.agent_facts)))
        said = self.voice.give(label, value, len(self.plan))
        self.plan.append(Utterance("user", said, (value,), self.user_facts))
        self.agent_facts.append(value)

    def confirm(self, call: ToolCall) -> None:
        confirm = confirm_prompt(
            call.name,
            call.arguments,
            self.task_id,
            len(self.plan),
            phrasing=self.phrasing,
            observations=self.observations,
        )
        args = json.dumps(call.arguments, sort_keys=True)
        required = tuple(t for t in entity_tokens(confirm) if t in args)
        self.plan.append(Utterance("assistant", confirm, required, (*self.agent_facts, args)))
        yes = self.voice.affirm(len(self.plan))  # says "yes": a rewrite must keep it
        self.plan.append(Utterance("user", yes, ("yes",), self.user_facts))

    def execute(self, item: SkeletonCall) -> None:
        if item.execution.mutating and self.confirm_writes:
            self.confirm(item.call)
        self.plan.append(item)
        self.agent_facts.extend(_call_facts(item))
        self.observations.append(item.execution.observation)


def write_reports(
    calls: list[SkeletonCall], task_id: str = "", phrasing: Phrasing = NO_PHRASING
) -> list[str]:
    """The closing's sentence per successful write (what was done, how it came out)."""
    seen = [c.execution.observation for c in calls]
    return [
        write_report(
            c.call.name,
            c.call.arguments,
            c.execution.observation,
            task_id,
            i,
            changed=[d.path.split(".")[-1] for d in c.execution.diff],
            phrasing=phrasing,
            observations=seen[:i],
        )
        for i, c in enumerate(calls)
        if c.execution.mutating and c.execution.error is None
    ]


def closing_draft(task: Task, calls: list[SkeletonCall], phrasing: Phrasing = NO_PHRASING) -> str:
    """The agent's last message: each write's report, then each expected output stated as what
    a tool showed about its object, then the offer of further help."""
    made = [(c.call.name, c.call.arguments, c.execution.observation) for c in calls]
    answers = task_answers(task, made, phrasing)
    name = user_name(dict(task.scenario.known_info))
    return closing([*write_reports(calls, task.id, phrasing), *answers], task.id, name=name)


def plan_blueprint(
    task: Task,
    calls: list[SkeletonCall],
    confirm_writes: bool = True,
    phrasing: Phrasing = NO_PHRASING,
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
    voice = UserVoice.of(task.persona, task.id)
    user_facts = (s.reason_for_contact, s.instructions, *s.known_info.values())
    writer = _PlanWriter(
        task.id,
        voice,
        user_facts,
        [s.reason_for_contact],
        [Utterance("user", voice.opening(s.reason_for_contact), (), user_facts)],
        confirm_writes,
        phrasing,
    )
    slots = info_slots(dict(s.known_info), calls)
    items = list(s.known_info.items())
    for index in range(len(calls) + 1):
        for (label, value), slot in zip(items, slots, strict=True):
            if slot == index and value not in s.reason_for_contact:
                writer.exchange_info(label, value)
        if index < len(calls):
            writer.execute(calls[index])
    plan = writer.plan
    closing = closing_draft(task, calls, phrasing)
    told = tuple(
        WriteOutcome.of(c.call.name, c.call.arguments, (d.after for d in c.execution.diff))
        for c in calls
        if c.execution.mutating and c.execution.error is None and c.execution.diff
    )
    plan.append(
        Utterance("assistant", closing, task.expected_outputs, tuple(writer.agent_facts), told)
    )
    plan.append(Utterance("user", voice.close(s.reason_for_contact), (), user_facts))
    return plan
