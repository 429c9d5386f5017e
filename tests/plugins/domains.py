"""A plugin domain as a user would write it in their own package.

`OutletDomain` is a factory-outlet store that reuses the retail world and tools under its own
name and with one extra policy rule; tasks it synthesizes carry its name. (A domain written from
scratch follows the same protocol; this one stays small by composing the built-in retail one.)
"""

from __future__ import annotations

from pydantic import BaseModel

from trajforge.generators.domains.retail import RetailDomain
from trajforge.generators.tooling import Toolbox
from trajforge.generators.vocabulary import DomainVocabulary
from trajforge.schemas import InitialState, Persona, Task

OUTLET_RULE = "\n\n## Outlet\n- Outlet items are final sale once delivered; say so when asked.\n"


class OutletDomain:
    name = "outlet"

    def __init__(self) -> None:
        self._retail = RetailDomain()
        self.policy: str = self._retail.policy + OUTLET_RULE
        self.toolbox: Toolbox = self._retail.toolbox
        self.vocabulary: DomainVocabulary = self._retail.vocabulary

    def initial_state(self, init: InitialState) -> BaseModel:
        return self._retail.initial_state(init)

    def synthesize_task(self, persona: Persona, seed: int) -> Task:
        task = self._retail.synthesize_task(persona, seed)
        fields = task.model_dump(exclude={"id"})
        fields["domain"] = self.name
        fields["intent"]["domain"] = self.name
        return Task.create(**fields)


class BrokenDomain:
    """Lacks the protocol's members: the config must refuse it."""

    name = "broken"


class MistypedDomain(OutletDomain):
    """Declares optional members with the wrong types: the config must refuse it, naming them."""

    name = "mistyped"
    confirm_writes = "yes"
    outcome_checks = ("not callable",)
