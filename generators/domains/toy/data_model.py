"""The toy world: a handful of bank accounts, generated from a seed.

Small on purpose (tau2-bench's mock domain is the model): four accounts, one of which may be
frozen, so the framework's own tests (rollout, blueprint, verification, a whole build) run on a
real domain in milliseconds. Names and emails are fictional and drawn from a seeded RNG.
"""

from __future__ import annotations

import random
from typing import Literal

from pydantic import BaseModel, ConfigDict

AccountStatus = Literal["open", "frozen"]

_FIRST = ("Ann", "Bo", "Cleo", "Dev", "Eli", "Fay", "Gus", "Hana")
_LAST = ("Lee", "Chen", "Okafor", "Ruiz", "Novak", "Silva", "Berg", "Tanaka")
NUM_ACCOUNTS = 4


class Account(BaseModel):
    """One account: who owns it, how to reach them, and the money in it (tools mutate it)."""

    model_config = ConfigDict(extra="forbid")

    account_id: str
    owner: str
    email: str
    balance: float
    status: AccountStatus = "open"


class ToyState(BaseModel):
    """The whole toy database: accounts by id (`#A1001`, ...)."""

    model_config = ConfigDict(extra="forbid")

    accounts: dict[str, Account]


def generate_state(seed: int) -> ToyState:
    """A deterministic world for `seed`: distinct owners, balances with cents, maybe one frozen."""
    rng = random.Random(seed)
    owners = rng.sample([(f, last) for f in _FIRST for last in _LAST], NUM_ACCOUNTS)
    frozen = rng.randrange(NUM_ACCOUNTS * 2)  # half the worlds have one frozen account
    accounts = {}
    for i, (first, last) in enumerate(owners):
        account_id = f"#A{1001 + i}"
        accounts[account_id] = Account(
            account_id=account_id,
            owner=f"{first} {last}",
            email=f"{first.lower()}.{last.lower()}{rng.randint(1, 99)}@example.com",
            balance=round(rng.uniform(5, 500), 2),
            status="frozen" if i == frozen else "open",
        )
    return ToyState(accounts=accounts)
