"""`RetailDomain`: the retail data model, tools, policy and task synthesis behind `Domain`."""

from __future__ import annotations

import functools
import json
import zlib
from importlib import resources

from trajforge.generators.domains.retail import tasks
from trajforge.generators.domains.retail.data_model import RetailState, generate_state
from trajforge.generators.domains.retail.phrasing import RETAIL_PHRASING
from trajforge.generators.domains.retail.rules import RETAIL_CLAIMS, RETAIL_RULES
from trajforge.generators.domains.retail.tools import TOOLS
from trajforge.generators.tooling import Toolbox, apply_patches
from trajforge.schemas import InitialState, Persona, Task


def load_policy() -> str:
    """The agent's rules, shipped as package data next to the code they describe."""
    return (
        resources.files("trajforge.generators.domains.retail")
        .joinpath("policy.md")
        .read_text("utf-8")
    )


class RetailDomain:
    """Online retail (tau2-bench style): orders, returns, exchanges, addresses, payments."""

    name = "retail"
    vocabulary = tasks.VOCABULARY
    policy_rules = RETAIL_RULES  # policy.md as checkable rules (rules.py)
    claim_types = RETAIL_CLAIMS  # what grounding-by-object checks claims about
    phrasing = RETAIL_PHRASING  # how the agent's drafts name actions and things (phrasing.py)

    def __init__(self) -> None:
        self.policy: str = load_policy()
        self.toolbox: Toolbox = Toolbox(TOOLS)

    def __reduce__(self):
        """Pickle by name: the toolbox's generated argument models are not picklable, and a
        domain has no state of its own, so a worker simply rebuilds it."""
        return (RetailDomain, ())

    def initial_state(self, init: InitialState) -> RetailState:
        """The seeded world with the task's patches applied (a fresh object every call)."""
        state = RetailState.model_validate(_seeded_world(init.seed))
        if init.patches:
            state = apply_patches(state, init.patches)
        return state  # type: ignore[return-value]

    def synthesize_task(self, persona: Persona, seed: int) -> Task:
        """An unverified task (run `verify_task` next); raises TaskRejected if none is feasible."""
        return tasks.synthesize_task(self.toolbox, self.initial_state, persona, seed)


@functools.lru_cache(maxsize=16)
def _seeded_world(seed: int) -> dict:
    """The generated world for a seed, as plain data. One task's stages rebuild its initial state
    many times (synthesis, verification, replay); validating this dump is ~3x cheaper than
    generating again, and validation builds fresh objects, so callers never share state."""
    return json.loads(zlib.decompress(_packed_world(seed)))


@functools.lru_cache(maxsize=4096)
def _packed_world(seed: int) -> bytes:
    """The world's JSON, compressed (~11 KB instead of ~76 KB). A batch runner synthesizes every
    task before the first rollout starts, so the plain-data cache above has long forgotten a
    task's world when its rollout asks for it: unpacking costs ~1 ms, generating again ~6."""
    return zlib.compress(generate_state(seed).model_dump_json().encode("utf-8"), 1)
