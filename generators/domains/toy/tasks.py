"""Toy task synthesis on the domain kit: two task types, one write and one read.

A task is one account owner who wants to deposit money and/or learn their balance. The kit
plans it (a deposit before a balance question makes the balance the post-deposit one), replays
the gold plan for the final hash, and assembles the scenario. What is left here is what is the
toy domain's own: its vocabulary, its two sub-goal builders, and who the actors are.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from types import MappingProxyType

from trajforge.generators.domain_kit import (
    Opening,
    SubGoal,
    SubGoalBuilder,
    SynthesisRecipe,
    act,
    owner_instructions,
    owner_patches,
)
from trajforge.generators.domains.toy.data_model import ToyState
from trajforge.generators.tooling import Toolbox
from trajforge.generators.vocabulary import DomainVocabulary, with_generic_verbs
from trajforge.schemas import Persona, StatePatch

DOMAIN_NAME = "toy"


def _deposit(state: ToyState, account_id: str, rng: random.Random, claimed: frozenset[str]):
    account = state.accounts[account_id]
    if account.status != "open" or "deposit" in claimed:
        return None
    amount = rng.randrange(10, 400) / 2  # 5.00 to 199.50, in half dollars
    return SubGoal(
        task_type="deposit",
        claim="deposit",
        actions=(
            act("get_account", account_id=account_id),
            act("deposit", account_id=account_id, amount=amount),
        ),
        request=f"Deposit {amount:.2f} dollars into your account, and ask for the new balance.",
        reason="deposit money",
        known_info={"amount to deposit": f"{amount:.2f}"},
        unknown_info=("the new balance",),
        expected_outputs=(f"{account.balance + amount:.2f}",),
    )


def _balance(state: ToyState, account_id: str, rng: random.Random, claimed: frozenset[str]):
    if "balance" in claimed or "deposit" in claimed:  # a deposit already reports the balance
        return None
    return SubGoal(
        task_type="balance_inquiry",
        claim="balance",
        actions=(act("get_account", account_id=account_id),),
        request="Ask what the current balance of your account is.",
        reason="check your balance",
        unknown_info=("the current balance",),
        expected_outputs=(f"{state.accounts[account_id].balance:.2f}",),
    )


#: Task type -> sub-goal builder; the keys are the toy domain's closed set of task types.
SUBGOAL_BUILDERS: MappingProxyType[str, SubGoalBuilder] = MappingProxyType(
    {"deposit": _deposit, "balance_inquiry": _balance}
)

VOCABULARY = DomainVocabulary(
    task_types=tuple(SUBGOAL_BUILDERS),
    read_only_task_types=frozenset({"balance_inquiry"}),
    user_role="account holder",
    agent_role="bank assistant",
    action_verbs=with_generic_verbs({"deposited": ("deposit",)}),
)


class ToyTaskSpace:
    """Account owners are the actors; every conversation opens with the email lookup."""

    builders = SUBGOAL_BUILDERS

    def actors(self, state: ToyState) -> Sequence[str]:
        return sorted(state.accounts)

    def opening(self, state: ToyState, actor: str, rng: random.Random) -> Opening:
        account = state.accounts[actor]
        return Opening(
            (act("find_account_by_email", email=account.email),),
            {"name": account.owner, "email": account.email},
        )

    def become(self, state: ToyState, actor: str, persona: Persona) -> tuple[StatePatch, ...]:
        """The account's owner renamed to the persona, with an email in that name."""
        return owner_patches("accounts", actor, persona, "#A")


def recipe(toolbox: Toolbox) -> SynthesisRecipe:
    """The kit's inputs for the toy domain (generic instructions, no scenario rewrite)."""
    return SynthesisRecipe(
        domain=DOMAIN_NAME,
        vocabulary=VOCABULARY,
        space=ToyTaskSpace(),
        toolbox=toolbox,
        instructions=owner_instructions("accounts", VOCABULARY),
        complexities=(1, 2),
    )
