"""The noisy teacher: the gold plan acted as a careful agent would, with seeded faults.

Why: the gate ablation (issue 25) needs rollout data from an imperfect teacher whose mistakes
are known, so a benchmark can count what the quality gate removes and what a model trained
without the gate learns. A real model's mistakes are neither controllable nor labelled; these are
both.

With every rate at 0 the agent plays the agent side of the blueprint plan
(generators/blueprint_plan.py) live against the simulated user: it asks for each known-info
item right before the first call that needs it, confirms each write with its details, makes the
gold calls in order and closes with each write's report and each expected output. So, unlike the
oracle (which passes values the user never said), its rollouts pass the default gate.

Each fault class is drawn once per rollout, a Bernoulli draw at the class's rate with the seed
`derive_seed(task id, "noisy", attempt, class)`; where it applies it is injected once:

- `skip_confirmation`: one write (chosen by seed) is made without the confirmation turn;
- `act_after_refusal`: when the user declines a write, the write is made anyway (the clean
  agent asks once more, and closes without the write on a second no); it needs a user who
  declines: the scripted one does with `rollout.user_declines_first`, an LLM user may;
- `other_users_record`: one read that names the user's own record by the domain's
  `owner_field` is followed by the same read on another user's record (an id from the world);
- `invented_value`: the closing also states an amount no tool output or user turn showed;
- `repeated_calls`: one read is made `repeat_count` times in a row;
- `no_report`: the closing states neither what the writes did nor the requested outputs.

Every fault that really happened is recorded (`injected_faults`, copied into the trajectory's
`Provenance` by the build) with the index of the message that carries it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from trajforge.generators.agent import AgentTurn
from trajforge.generators.agent_voice import closing, user_name
from trajforge.generators.blueprint_plan import (
    SkeletonCall,
    execute_skeleton,
    plan_blueprint,
)
from trajforge.generators.consent import is_refusal
from trajforge.generators.domain_options import options_of
from trajforge.generators.noise import FAULT_CLASSES, NoiseConfig, fault_drawn
from trajforge.generators.tooling import Domain
from trajforge.generators.values import numbers_in
from trajforge.schemas import (
    FaultClass,
    InjectedFault,
    Message,
    Task,
    ToolCall,
    ToolSpec,
    derive_seed,
)


def _rng(task_id: str, attempt: int, fault: FaultClass) -> random.Random:
    """The choices a drawn fault makes (which write, which read, which amount)."""
    return random.Random(derive_seed(task_id, "noisy", attempt, fault, "choice"))


@dataclass(frozen=True)
class _Say:
    """Agent text; `confirms` is set on the confirmation prompt of a write."""

    text: str
    confirms: bool = False
    closing: bool = False


@dataclass(frozen=True)
class _Call:
    """One tool call; `fault` marks a call that is itself the injected fault."""

    call: ToolCall
    write: bool
    fault: tuple[FaultClass, str] | None = None


_Step = _Say | _Call


def _script(plan: Sequence[Any]) -> list[_Step]:
    """The agent side of a blueprint plan, with each write's confirmation prompt marked."""
    steps: list[_Step] = []
    for index, item in enumerate(plan):
        if isinstance(item, SkeletonCall):
            steps.append(_Call(item.call, item.execution.mutating))
        elif item.speaker == "assistant":
            asks_yes = _confirms_next(plan, index)
            steps.append(_Say(item.draft, confirms=asks_yes, closing=index >= len(plan) - 2))
    return steps


def _confirms_next(plan: Sequence[Any], index: int) -> bool:
    """The utterance at `index` is the confirmation of the write two items later (the plan
    puts the user's yes between them)."""
    later = plan[index + 2] if index + 2 < len(plan) else None
    return isinstance(later, SkeletonCall) and later.execution.mutating


def sibling_ids(dump: Any, own: str) -> list[str]:
    """Other keys of the mapping in a world dump that has `own` as a key (the other accounts,
    the other users), sorted: the ids of records that are not this user's."""
    if isinstance(dump, dict):
        if own in dump:
            return sorted(str(k) for k in dump if k != own)
        children = dump.values()
    elif isinstance(dump, list):
        children = dump
    else:
        return []
    for child in children:
        found = sibling_ids(child, own)
        if found:
            return found
    return []


class NoisyTeacher:
    """The gold plan as a careful agent acts it, with the faults drawn for this rollout.

    One instance per rollout (the factory makes one per task attempt): it walks its script with
    a cursor, and `injected_faults` lists what it did wrong, in order.
    """

    def __init__(self, task: Task, domain: Domain, noise: NoiseConfig, attempt: int = 0):
        self._task = task
        self._attempt = attempt
        self._noise = noise
        self._drawn = {c for c in FAULT_CLASSES if fault_drawn(task.id, attempt, c, noise.rate(c))}
        _, calls = execute_skeleton(task, domain)
        options = options_of(domain)
        plan = plan_blueprint(task, calls, options.confirm_writes, options.phrasing)
        self._script = self._with_faults(_script(plan), domain)
        self._cursor = 0
        self._asked_again: set[int] = set()  # writes whose prompt was repeated after a no
        self.injected_faults: list[InjectedFault] = []

    @property
    def drawn(self) -> frozenset[FaultClass]:
        """The classes drawn for this rollout (injected where the conversation allows)."""
        return frozenset(self._drawn)

    # -- the script, with the faults decided before the conversation ----------------------

    def _with_faults(self, steps: list[_Step], domain: Domain) -> list[_Step]:
        if "skip_confirmation" in self._drawn:
            steps = self._skip_confirmation(steps)
        if "other_users_record" in self._drawn:
            steps = self._other_users_record(steps, domain)
        if "repeated_calls" in self._drawn:
            steps = self._repeated_calls(steps)
        return steps

    def _pick(self, fault: FaultClass, candidates: list[int]) -> int | None:
        return _rng(self._task.id, self._attempt, fault).choice(candidates) if candidates else None

    def _skip_confirmation(self, steps: list[_Step]) -> list[_Step]:
        prompts = [i for i, s in enumerate(steps) if isinstance(s, _Say) and s.confirms]
        chosen = self._pick("skip_confirmation", prompts)
        if chosen is None:
            return steps
        write = next(s for s in steps[chosen:] if isinstance(s, _Call) and s.write)
        marked = _Call(write.call, True, ("skip_confirmation", f"{write.call.name} unconfirmed"))
        rest = [marked if s is write else s for s in steps[chosen + 1 :]]
        return [*steps[:chosen], *rest]

    def _other_users_record(self, steps: list[_Step], domain: Domain) -> list[_Step]:
        rules = options_of(domain).policy_rules
        key = rules.owner_field if rules is not None else None
        reads = [
            i
            for i, s in enumerate(steps)
            if isinstance(s, _Call) and not s.write and isinstance(s.call.arguments.get(key), str)
        ]
        chosen = self._pick("other_users_record", reads)
        if chosen is None or key is None:
            return steps
        read = steps[chosen]
        assert isinstance(read, _Call)
        own = read.call.arguments[key]
        world = domain.initial_state(self._task.initial_state).model_dump(mode="json")
        others = sibling_ids(world, own)
        if not others:
            return steps
        other = _rng(self._task.id, self._attempt, "other_users_record").choice(others)
        call = read.call.model_copy(update={"arguments": {**read.call.arguments, key: other}})
        peek = _Call(call, False, ("other_users_record", f"{call.name} on {other} (not {own})"))
        return [*steps[: chosen + 1], peek, *steps[chosen + 1 :]]

    def _repeated_calls(self, steps: list[_Step]) -> list[_Step]:
        reads = [i for i, s in enumerate(steps) if isinstance(s, _Call) and not s.write]
        chosen = self._pick("repeated_calls", reads)
        if chosen is None:
            return steps
        read = steps[chosen]
        assert isinstance(read, _Call)
        times = self._noise.repeat_count
        detail = f"{read.call.name} made {times} times in a row"
        again = [_Call(read.call, False, ("repeated_calls", detail))]
        again += [_Call(read.call, False)] * (times - 2)
        return [*steps[: chosen + 1], *again, *steps[chosen + 1 :]]

    # -- acting ---------------------------------------------------------------------------

    async def act(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], seed: int
    ) -> AgentTurn:
        if self._cursor >= len(self._script):  # the user went on after the closing
            return self._say(self._closing(messages, final=True))
        step = self._script[self._cursor]
        if isinstance(step, _Call) and step.write and _declined(messages, self._prompt(step)):
            if "act_after_refusal" in self._drawn:
                self._record("act_after_refusal", messages, f"{step.call.name} after a no")
            elif self._cursor not in self._asked_again:  # ask once more, then respect a no
                self._asked_again.add(self._cursor)
                return self._say(f"No problem, take your time. {self._prompt(step)}")
            else:
                self._cursor = len(self._script)
                return self._say(self._declined_closing())
        self._cursor += 1
        if isinstance(step, _Call):
            if step.fault is not None:
                self._record(step.fault[0], messages, step.fault[1])
            call = step.call.model_copy(update={"id": f"call_{self._cursor}"})
            return AgentTurn(Message(role="assistant", content=None, tool_calls=(call,)))
        text = self._closing(messages, final=False) if step.closing else step.text
        return self._say(text)

    def _prompt(self, write: _Call) -> str:
        """The confirmation prompt the script has right before `write` ("" when none: a
        skipped confirmation, a domain that asks none)."""
        index = self._script.index(write)
        before = self._script[index - 1] if index else None
        return before.text if isinstance(before, _Say) and before.confirms else ""

    @staticmethod
    def _say(text: str) -> AgentTurn:
        return AgentTurn(Message(role="assistant", content=text))

    def _record(self, fault: FaultClass, messages: Sequence[Message], detail: str) -> None:
        index = len(messages)  # the index the agent's next message gets
        self.injected_faults.append(InjectedFault(fault=fault, message_index=index, detail=detail))

    def _closing(self, messages: Sequence[Message], *, final: bool) -> str:
        """The plan's closing, or the faulty one: without the reports and answers
        (`no_report`), with an invented amount (`invented_value`). Recorded once."""
        plan_closing = next(s.text for s in self._script if isinstance(s, _Say) and s.closing)
        sentences = [plan_closing]
        name = user_name(dict(self._task.scenario.known_info))
        if "no_report" in self._drawn:
            sentences = [
                closing(["Your request has been taken care of."], self._task.id, name=name)
            ]
            if not final:
                self._record("no_report", messages, "closing without reports or outputs")
        if "invented_value" in self._drawn:
            amount = invented_amount(messages, _rng(self._task.id, self._attempt, "invented_value"))
            sentences.insert(0, f"I also see a pending credit of {amount} dollars on file for you.")
            if not final:
                self._record("invented_value", messages, f"claimed {amount}")
        return " ".join(sentences)

    def _declined_closing(self) -> str:
        name = user_name(dict(self._task.scenario.known_info))
        return closing(["Understood, I have not made that change."], self._task.id, name=name)


def _declined(messages: Sequence[Message], prompt: str) -> bool:
    """The user's latest turn declines the write's confirmation `prompt` (or its repetition),
    which the agent's latest text asked; a "don't know" to another question is no refusal."""
    texts = [m for m in messages if m.role in ("user", "assistant") and m.content]
    return (
        bool(prompt)
        and len(texts) >= 2
        and texts[-1].role == "user"
        and is_refusal(texts[-1].content)
        and texts[-2].role == "assistant"
        and (texts[-2].content or "").endswith(prompt)
    )


def invented_amount(messages: Sequence[Message], rng: random.Random) -> str:
    """An amount (two decimals) that no message shows, nor the sum or difference of two
    amounts shown (the hallucination filter accepts those as derived)."""
    seen = {n for m in messages if m.content for n in numbers_in(m.content)}
    derived = seen | {a + b for a in seen for b in seen} | {abs(a - b) for a in seen for b in seen}
    for _ in range(100):
        amount = Decimal(rng.randrange(1001, 99999)) / 100
        if amount not in derived:
            return f"{amount:.2f}"
    raise RuntimeError("no unseen amount in 100 draws")  # pragma: no cover - 1000s of values


def noisy_teacher_for(noise: NoiseConfig):
    """The build's agent factory for `rollout.agent: noisy`: one teacher per task attempt."""

    def make(task: Task, domain: Domain, attempt: int = 0) -> NoisyTeacher:
        return NoisyTeacher(task, domain, noise, attempt)

    return make
