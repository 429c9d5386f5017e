"""The toy tools: find and read an account, deposit into it, hand over to a human.

Four tools (two reads, one write, one transfer): the smallest set that exercises every tool
kind the framework distinguishes. Each raises `ToolError` on a violated precondition; the
toolbox turns that into the "Error: ..." observation the agent sees.
"""

from __future__ import annotations

from trajforge.generators.domain_kit.touches import entry, nothing
from trajforge.generators.domains.toy.data_model import Account, ToyState
from trajforge.generators.tooling import ToolError, tool


def _account(state: ToyState, account_id: str) -> Account:
    account = state.accounts.get(account_id)
    if account is None:
        raise ToolError(f"account {account_id} not found")
    return account


@tool("read")
def find_account_by_email(state: ToyState, email: str) -> str:
    """Find the id of the account registered to an email address.

    Args:
        email: The account owner's email, such as 'ann.lee7@example.com'.
    """
    for account in state.accounts.values():
        if account.email.lower() == email.strip().lower():
            return account.account_id
    raise ToolError(f"no account with email {email}")


@tool("read")
def get_account(state: ToyState, account_id: str) -> dict:
    """Look up an account: owner, email, balance and status.

    Args:
        account_id: The account id, such as '#A1001'.
    """
    return _account(state, account_id).model_dump()


@tool("write", touches=entry("accounts", "account_id"))
def deposit(state: ToyState, account_id: str, amount: float) -> dict:
    """Deposit money into an open account.

    Args:
        account_id: The account id.
        amount: Amount in dollars, positive.
    """
    account = _account(state, account_id)
    if account.status != "open":
        raise ToolError(f"account {account_id} is {account.status}")
    if amount <= 0:
        raise ToolError("amount must be positive")
    account.balance = round(account.balance + amount, 2)
    return {"account_id": account_id, "balance": f"{account.balance:.2f}"}


@tool("transfer", touches=nothing)
def transfer_to_human_agents(state: ToyState, summary: str) -> str:
    """Hand the conversation to a human agent.

    Args:
        summary: Why the transfer is needed.
    """
    return "Transfer successful"


TOOLS = (find_account_by_email, get_account, deposit, transfer_to_human_agents)
