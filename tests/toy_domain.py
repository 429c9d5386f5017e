"""A tiny toy banking domain, so the rollout, blueprint, outcome and OPD code is tested on its own
(a shared test module, like tests/factories.py, so no test imports another directory's conftest).
"""

from __future__ import annotations

from pydantic import BaseModel

from tests.factories import traits
from trajforge.generators.tooling import Toolbox, ToolError, apply_patches, state_hash, tool
from trajforge.schemas import (
    GoldAction,
    InitialState,
    IntentCoordinates,
    Persona,
    Task,
    ToolCall,
    UserScenario,
)


class Account(BaseModel):
    owner: str
    email: str
    balance: float
    status: str = "open"


class BankState(BaseModel):
    accounts: dict[str, Account]


@tool("read")
def get_account(state: BankState, account_id: str) -> dict:
    """Look up an account.

    Args:
        account_id: The account id, such as '#A1001'.
    """
    if account_id not in state.accounts:
        raise ToolError(f"account {account_id} not found")
    return state.accounts[account_id].model_dump()


@tool("write")
def deposit(state: BankState, account_id: str, amount: float) -> dict:
    """Deposit money into an open account.

    Args:
        account_id: The account id.
        amount: Amount in dollars, positive.
    """
    account = state.accounts.get(account_id)
    if account is None or account.status != "open":
        raise ToolError(f"account {account_id} is not open")
    if amount <= 0:
        raise ToolError("amount must be positive")
    account.balance = round(account.balance + amount, 2)
    return {"account_id": account_id, "balance": f"{account.balance:.2f}"}


@tool("transfer")
def transfer_to_human_agents(state: BankState, summary: str) -> str:
    """Hand the conversation to a human agent.

    Args:
        summary: Why the transfer is needed.
    """
    return "Transfer successful"


class ToyDomain:
    name = "toy"
    policy = "Verify the account before any change. Ask the user to confirm every deposit."
    toolbox = Toolbox([get_account, deposit, transfer_to_human_agents])

    def initial_state(self, init: InitialState) -> BankState:
        state = BankState(
            accounts={
                "#A1001": Account(owner="Ann Lee", email="ann@example.com", balance=100.0),
                "#A1002": Account(owner="Bo Chen", email="bo@example.com", balance=7.5),
            }
        )
        return apply_patches(state, init.patches)

    def synthesize_task(self, persona: Persona, seed: int) -> Task:
        return make_task(persona)


TOY = ToyDomain()

PERSONA = Persona.create(
    name="Ann Lee",
    traits=traits(),
    background="A teacher who banks online.",
    communication_style="Short and direct.",
)


def make_task(persona: Persona = PERSONA) -> Task:
    gold = (
        GoldAction(name="get_account", arguments={"account_id": "#A1001"}),
        GoldAction(name="deposit", arguments={"account_id": "#A1001", "amount": 25.5}),
    )
    init = InitialState(seed=7)
    state = TOY.initial_state(init)
    for i, action in enumerate(gold):
        TOY.toolbox.execute(
            state, ToolCall(id=f"g{i}", name=action.name, arguments=action.arguments)
        )
    return Task.create(
        domain="toy",
        intent=IntentCoordinates(
            persona_id=persona.id, domain="toy", task_types=("order_status",), complexity=1
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
