"""Builders for hand-made trajectories: small helpers, explicit messages, no fixtures magic.

(A module with its own name, not conftest, so imports never pick another directory's conftest.)

`Convo` appends messages in order and keeps the StepRecords consistent with the tool messages,
so a test reads like the conversation it describes.
"""

from __future__ import annotations

import json
from typing import Any

from tests.factories import TRAITS
from trajforge.schemas import (
    DiffEntry,
    GoldAction,
    InitialState,
    IntentCoordinates,
    Message,
    Persona,
    Provenance,
    StepRecord,
    Task,
    TaskType,
    ToolCall,
    TraitVector,
    Trajectory,
    UserScenario,
)

SYSTEM = "You are a retail support agent. Follow the policy."


def make_persona(name: str = "Sara Doe", **traits: str) -> Persona:
    return Persona.create(
        name=name,
        traits=TraitVector(**{**TRAITS, **traits}),
        background="teacher",
        communication_style="short",
    )


def make_task(
    task_types: tuple[TaskType, ...] = ("cancel_order",),
    known_info: dict[str, str] | None = None,
    expected_outputs: tuple[str, ...] = (),
    gold_actions: tuple[GoldAction, ...] = (),
    persona: Persona | None = None,
    complexity: int = 1,
    instructions: str = "Cancel the order because you ordered by mistake.",
) -> Task:
    persona = persona or make_persona()
    return Task.create(
        domain="retail",
        intent=IntentCoordinates(
            persona_id=persona.id, domain="retail", task_types=task_types, complexity=complexity
        ),
        persona=persona,
        scenario=UserScenario(
            reason_for_contact="I want to cancel an order.",
            known_info=known_info
            if known_info is not None
            else {"email": "sara@example.com", "user_id": "sara_doe_1234", "order_id": "#W1234567"},
            unknown_info=("order total",),
            instructions=instructions,
        ),
        initial_state=InitialState(seed=1),
        gold_actions=gold_actions,
        expected_outputs=expected_outputs,
        gold_final_hash="h" * 8,
    )


class Convo:
    """Fluent builder: `Convo().user("hi").call("get_order", order_id="#W1").result({...})`."""

    def __init__(self, system: str | None = SYSTEM):
        self.messages: list[Message] = []
        self.steps: list[StepRecord] = []
        self._pending: list[ToolCall] = []
        self._n = 0
        if system is not None:
            self.messages.append(Message(role="system", content=system))

    def user(self, text: str) -> Convo:
        self.messages.append(Message(role="user", content=text))
        return self

    def agent(self, text: str) -> Convo:
        self.messages.append(Message(role="assistant", content=text))
        return self

    def call(self, name: str, **arguments: Any) -> Convo:
        return self.calls((name, arguments))

    def calls(self, *calls: tuple[str, dict[str, Any]]) -> Convo:
        made = []
        for name, arguments in calls:
            self._n += 1
            made.append(ToolCall(id=f"call_{self._n}", name=name, arguments=arguments))
        self.messages.append(Message(role="assistant", tool_calls=tuple(made)))
        self._pending.extend(made)
        return self

    def result(
        self,
        payload: Any,
        diff: tuple[tuple[str, Any, Any], ...] = (),
        mutating: bool | None = None,
        error: str | None = None,
        call_id: str | None = None,
    ) -> Convo:
        """Answer the oldest pending call; `diff` entries are (path, before, after)."""
        call = self._pending.pop(0)
        text = (
            error
            if error is not None
            else (payload if isinstance(payload, str) else json.dumps(payload, sort_keys=True))
        )
        self.messages.append(
            Message(role="tool", content=text, tool_call_id=call.id, name=call.name)
        )
        recorded = call if call_id is None else call.model_copy(update={"id": call_id})
        self.steps.append(
            StepRecord(
                index=len(self.steps),
                turn=len(self.messages) - 1,
                call=recorded,
                result=None if error is not None else text,
                error=error,
                state_diff=tuple(DiffEntry(path=p, before=b, after=a) for p, b, a in diff),
                mutating=bool(diff) if mutating is None else mutating,
            )
        )
        return self

    def build(self, task: Task | None = None) -> Trajectory:
        return Trajectory.create(
            task=task or make_task(),
            mode="rollout",
            messages=tuple(self.messages),
            steps=tuple(self.steps),
            termination="user_stop",
            final_state_hash="f" * 8,
            provenance=Provenance(models={"agent": "scripted"}, seeds={"rollout": 1}),
        )


ORDER = {"order_id": "#W1234567", "status": "pending", "total": 54.9, "user_id": "sara_doe_1234"}


def cancel_convo(lookup_first: bool = True, authenticate: bool = True) -> Convo:
    """The canonical good conversation: user gives id, agent authenticates, looks up, asks,
    cancels, reports total."""
    c = Convo().user("Hi, I'm Sara Doe, sara@example.com. Please cancel order #W1234567.")
    if authenticate:
        c.call("find_user_id_by_email", email="sara@example.com").result("sara_doe_1234")
    if lookup_first:
        c.call("get_order_details", order_id="#W1234567").result(ORDER)
    c.agent("Order #W1234567 totals $54.90. Shall I cancel it? (yes/no)")
    c.user("yes")
    c.call("cancel_pending_order", order_id="#W1234567", reason="ordered by mistake").result(
        {**ORDER, "status": "cancelled"},
        diff=(("orders.#W1234567.status", "pending", "cancelled"),),
    )
    c.agent("I have cancelled order #W1234567; $54.90 will be refunded.")
    c.user("Thanks ###STOP###")
    return c
