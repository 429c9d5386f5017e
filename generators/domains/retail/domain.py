"""`RetailDomain`: the retail data model, tools, policy and task synthesis behind `Domain`."""

from __future__ import annotations

import functools
import json
from importlib import resources

from trajforge.generators.domains.retail import tasks
from trajforge.generators.domains.retail.data_model import RetailState
from trajforge.generators.domains.retail.phrasing import RETAIL_PHRASING
from trajforge.generators.domains.retail.rules import RETAIL_CLAIMS, RETAIL_RULES
from trajforge.generators.domains.retail.tools import TOOLS
from trajforge.generators.domains.retail.world import generate_world
from trajforge.generators.replays import taken_world
from trajforge.generators.tooling import Toolbox
from trajforge.schemas import InitialState, Persona, Task, canonical_json


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
        """The seeded world with the task's patches applied (a fresh object every call:
        validation builds new objects from the shared plain data, which nobody mutates; or
        the template synthesis left in this process, taken: `replays.taken_world`)."""
        taken = taken_world(self, init)
        if taken is not None:
            return taken  # type: ignore[return-value]
        patches = tuple((p.path, canonical_json(p.value)) for p in init.patches)
        return RetailState.model_validate(_patched_world(init.seed, patches))

    def initial_dump(self, init: InitialState) -> dict | None:
        """`initial_state(init).model_dump(mode="json")` without validating or dumping: the
        generated plain data is already the dump, key order included (tests hold every seed
        they try to that), so synthesis's template of a world starts from it
        (`world_templates.PlainWorld`). None with patches: a patch's value is not known to be
        in its dumped form (an int for a float field)."""
        return None if init.patches else _seeded_world(init.seed)

    def synthesize_task(self, persona: Persona, seed: int) -> Task:
        """An unverified task (run `verify_task` next); raises TaskRejected if none is feasible."""
        return tasks.synthesize_task(self.toolbox, self.initial_state, persona, seed)


@functools.lru_cache(maxsize=256)
def _seeded_world(seed: int) -> dict:
    """The generated world for a seed, as plain data (~45 KB as JSON). One task's stages rebuild its
    initial state many times (synthesis, verification, replay, rollout); validating this data
    costs ~1.5 ms, generating it again ~1.5. Fused local builds roll a task out right after its
    synthesis, so 256 seeds cover the tasks in flight; a miss regenerates the same world."""
    return generate_world(seed)


@functools.lru_cache(maxsize=256)
def _patched_world(seed: int, patches: tuple[tuple[str, str], ...]) -> dict:
    """The seeded world's plain data with `patches` ((dotted path, canonical JSON value), a
    hashable cache key) applied. Only the containers on each
    patch's path are copied (microseconds, instead of dumping and validating the whole state
    as `tooling.apply_patches` does); the rest is shared with the seeded world's data, which is
    safe because plain data here is only ever read (by validation)."""
    data = _seeded_world(seed)
    for path, value in patches:
        data = _set_path(data, path.split("."), json.loads(value))
    return data


def _set_path(node: dict | list, keys: list[str], value: object) -> dict | list:
    """A copy of `node` with the value at the dotted path `keys` replaced; containers off
    the path are shared, not copied."""
    head, rest = keys[0], keys[1:]
    copied = list(node) if isinstance(node, list) else dict(node)
    slot = int(head) if isinstance(node, list) else head
    copied[slot] = _set_path(node[slot], rest, value) if rest else value
    return copied
