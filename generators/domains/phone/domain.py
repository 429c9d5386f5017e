"""`PhoneDomain`: dual control. The agent fixes the line; the customer fixes the phone."""

from __future__ import annotations

from importlib import resources

from trajforge.generators.domain_kit import synthesize
from trajforge.generators.domains.phone import tasks
from trajforge.generators.domains.phone.data_model import PhoneState, generate_state
from trajforge.generators.domains.phone.rules import PHONE_CHECKS, PHONE_RULES
from trajforge.generators.domains.phone.tools import TOOLS
from trajforge.generators.domains.phone.user_tools import USER_TOOLS
from trajforge.generators.tooling import Toolbox, apply_patches
from trajforge.generators.user_tools import world_toolbox
from trajforge.schemas import InitialState, Persona, Task


class PhoneDomain:
    """Mobile lines (the agent's tools) and the callers' phones (the callers' own tools)."""

    name = tasks.DOMAIN_NAME
    vocabulary = tasks.VOCABULARY
    policy_rules = PHONE_RULES  # policy.md as checkable rules (rules.py)
    trajectory_checks = PHONE_CHECKS  # no claiming a user action that never happened
    user_tools = USER_TOOLS  # the caller's phone settings: only the caller changes them

    def __init__(self) -> None:
        package = resources.files("trajforge.generators.domains.phone")
        self.policy: str = package.joinpath("policy.md").read_text("utf-8")
        self.toolbox: Toolbox = Toolbox(TOOLS)

    def __reduce__(self):
        """Pickle by name: the toolbox's generated argument models are not picklable."""
        return (PhoneDomain, ())

    def initial_state(self, init: InitialState) -> PhoneState:
        """The seeded world with the task's patches applied (a fresh object every call)."""
        state = generate_state(init.seed)
        return apply_patches(state, init.patches) if init.patches else state  # type: ignore[return-value]

    def synthesize_task(self, persona: Persona, seed: int) -> Task:
        """An unverified task (run `verify_task` next); raises TaskRejected if none is feasible."""
        return synthesize(tasks.recipe(world_toolbox(self)), self.initial_state, persona, seed)
