"""`ToyDomain`: the smallest complete domain, on which the framework's own tests run."""

from __future__ import annotations

from importlib import resources

from trajforge.generators.domain_kit import synthesize
from trajforge.generators.domains.toy import tasks
from trajforge.generators.domains.toy.data_model import ToyState, generate_state
from trajforge.generators.domains.toy.rules import TOY_RULES
from trajforge.generators.domains.toy.tools import TOOLS
from trajforge.generators.tooling import Toolbox, apply_patches
from trajforge.schemas import InitialState, Persona, Task


class ToyDomain:
    """A tiny bank: accounts looked up by email, balances read, deposits made."""

    name = tasks.DOMAIN_NAME
    vocabulary = tasks.VOCABULARY
    policy_rules = TOY_RULES  # policy.md as checkable rules (rules.py)

    def __init__(self) -> None:
        package = resources.files("trajforge.generators.domains.toy")
        self.policy: str = package.joinpath("policy.md").read_text("utf-8")
        self.toolbox: Toolbox = Toolbox(TOOLS)

    def __reduce__(self):
        """Pickle by name: the toolbox's generated argument models are not picklable."""
        return (ToyDomain, ())

    def initial_state(self, init: InitialState) -> ToyState:
        """The seeded world with the task's patches applied (a fresh object every call)."""
        state = generate_state(init.seed)
        return apply_patches(state, init.patches) if init.patches else state  # type: ignore[return-value]

    def synthesize_task(self, persona: Persona, seed: int) -> Task:
        """An unverified task (run `verify_task` next); raises TaskRejected if none is feasible."""
        return synthesize(tasks.recipe(self.toolbox), self.initial_state, persona, seed)
