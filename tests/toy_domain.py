"""The shipped toy domain (a tiny bank) with one pinned task, shared by the generator, finetune
and OPD tests (a module, like tests/factories.py, so no test imports another directory's
conftest): rollout, blueprint and outcome code are tested on a real domain that is not retail.
`make_task` pins account #A1001 with patches, so the tests can name its owner, email and balance.
"""

from __future__ import annotations

from tests.factories import traits
from trajforge.generators.domains.toy import ToyDomain
from trajforge.generators.tooling import state_hash
from trajforge.schemas import (
    GoldAction,
    InitialState,
    IntentCoordinates,
    Persona,
    StatePatch,
    Task,
    ToolCall,
    UserScenario,
)

TOY = ToyDomain()

PERSONA = Persona.create(
    name="Ann Lee",
    traits=traits(),
    background="A teacher who banks online.",
    communication_style="Short and direct.",
)


#: Account #A1001 as the tests know it: Ann Lee, ann@example.com, 100.00, open.
ANN = tuple(
    StatePatch(path=f"accounts.#A1001.{field}", value=value)
    for field, value in (
        ("owner", "Ann Lee"),
        ("email", "ann@example.com"),
        ("balance", 100.0),
        ("status", "open"),
    )
)


def make_task(persona: Persona = PERSONA) -> Task:
    gold = (
        GoldAction(name="get_account", arguments={"account_id": "#A1001"}),
        GoldAction(name="deposit", arguments={"account_id": "#A1001", "amount": 25.5}),
    )
    init = InitialState(seed=7, patches=ANN)
    state = TOY.initial_state(init)
    for i, action in enumerate(gold):
        TOY.toolbox.execute(
            state, ToolCall(id=f"g{i}", name=action.name, arguments=action.arguments)
        )
    return Task.create(
        domain="toy",
        intent=IntentCoordinates(
            persona_id=persona.id, domain="toy", task_types=("deposit",), complexity=1
        ),
        persona=persona,
        scenario=UserScenario(
            reason_for_contact="I want to deposit 25.50 dollars into my account.",
            known_info={"account_id": "#A1001", "email": "ann@example.com"},
            unknown_info=("the current balance",),
            instructions="Ask for the new balance after the deposit.",
        ),
        initial_state=init,
        gold_actions=gold,
        expected_outputs=("125.50",),
        gold_final_hash=state_hash(state),
    )
