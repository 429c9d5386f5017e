"""The optional members of a `Domain`, typed, with their defaults in one record.

Why: generic code used to read them by string (`domain_option(domain, "phrasing")`, typed
`Any`), so a reader could misspell a name or misuse a value and no type checker would say.
`options_of(domain)` returns a `DomainOptions`, one typed field per optional member, each the
domain's own value or the documented default. A domain still declares them as plain class
attributes (`phrasing = RETAIL_PHRASING`); `generators/plugins.py` checks each one's type when
a plug-in domain loads, with an error naming the member and what it must be.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from trajforge.generators.phrasing import NO_PHRASING, Phrasing
from trajforge.generators.policy_rules import ClaimTypes, PolicyRules, TrajectoryCheck
from trajforge.schemas import Trajectory

if TYPE_CHECKING:  # user_tools imports this module (options_of)
    from trajforge.generators.user_tools import UserTools

#: A domain's extra outcome check: the trajectory -> a problem (starting with its rejection
#: reason) or None.
OutcomeCheck = Callable[[Trajectory], "str | None"]

#: Tool name -> a function of its arguments giving a comparable meaning (loop detection).
CallMeanings = Mapping[str, Callable[[dict[str, Any]], Any]]


@dataclass(frozen=True)
class DomainOptions:
    """What a domain may declare beyond the required members, and what it gets if it does not.

    `policy_rules`: its checkable policy (None: the policy checker passes everything).
    `claim_types`: the entity types its claims are grounded by (None: no object claims).
    `outcome_checks`: extra outcome checks (none by default).
    `trajectory_checks`: its checks run inside built-in filters (`TrajectoryCheck`).
    `call_meanings`: per tool, the arguments' meaning for loop detection (none: as given).
    `confirm_writes`: whether the blueprint asks for confirmation before each write (True).
    `phrasing`: the agent's words for its objects and actions (`NO_PHRASING`: generic words).
    `user_tools`: the simulated user's own tools over its part of the state (dual control,
    generators/user_tools.py; None: the user has no tools).
    """

    policy_rules: PolicyRules | None = None
    claim_types: ClaimTypes | None = None
    outcome_checks: tuple[OutcomeCheck, ...] = ()
    trajectory_checks: tuple[TrajectoryCheck, ...] = ()
    call_meanings: CallMeanings = field(default_factory=lambda: MappingProxyType({}))
    confirm_writes: bool = True
    phrasing: Phrasing = NO_PHRASING
    user_tools: UserTools | None = None


def _defaults() -> dict[str, Any]:
    """Each optional member's default, from the record's fields."""
    defaults = DomainOptions()
    return {f.name: getattr(defaults, f.name) for f in dataclasses.fields(DomainOptions)}


#: The optional members of a `Domain` and the default of each (`DomainOptions`' fields).
OPTIONAL_DOMAIN_MEMBERS: Mapping[str, Any] = MappingProxyType(_defaults())


def options_of(domain: Any) -> DomainOptions:
    """`domain`'s optional members, each its own value or the default. Plain attribute reads
    (a few microseconds): filters call it once per trajectory. The values are trusted here;
    `plugins.domain_member_problems` checks them when a domain loads."""
    return DomainOptions(
        **{
            name: getattr(domain, name, default)
            for name, default in OPTIONAL_DOMAIN_MEMBERS.items()
        }
    )
