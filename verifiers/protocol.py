"""The one protocol every trajectory filter follows (datatrove's filter base is the shape).

A filter has a `name` (its counters are `filter.<name>.kept` and
`filter.<name>.rejected.<reason>`), declares up front the `reasons` it may emit (so a plugin
filter can add reasons and every rejection stays typed and countable), and answers one question
with `check(trajectory, context) -> FilterResult`. A declared `family.*` covers every reason
`family.<id>`: a policy checker whose rules come from the domain declares `policy.*` and rejects
with `policy.<rule>`, still one typed reason (and counter) per rule.

Filter classes are frozen pydantic models whose fields are their parameters: the config entry
`{name: loops, max_repeats: 3}` validates straight into `LoopsFilter(max_repeats=3)`, with
pydantic's field-named errors at config load. Instances are small, picklable and built once per
worker. A new filter is one file (a `FilterModel` subclass) plus its test; built-ins are listed
in the frozen table in `verifiers/filters.py`, plugins are named by a dotted path in the config.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from trajforge.generators.domain_options import options_of
from trajforge.generators.tooling import Domain
from trajforge.schemas import RejectionReason, Trajectory, is_reason_id
from trajforge.verifiers.result import FilterResult

if TYPE_CHECKING:  # signatures.py imports this module
    from trajforge.verifiers.signatures import ShortcutScan

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,47}$")


@dataclass(frozen=True)
class FilterContext:
    """What a filter may consult besides the trajectory: the build's domain (its policy, tools
    and, for policy-as-code, its declared rules), built once per worker, and `scan`, the
    trajectory's shortcut scan when the caller already made one (`dataclasses.replace` per
    trajectory; filters that need it check it fits and scan themselves otherwise)."""

    domain: Domain
    scan: ShortcutScan | None = None


@runtime_checkable
class TrajectoryFilter(Protocol):
    """Trajectory in, verdict with a declared, typed reason out."""

    name: ClassVar[str]
    reasons: ClassVar[tuple[RejectionReason, ...]]

    def check(self, trajectory: Trajectory, context: FilterContext) -> FilterResult:
        """Pass, or reject with one of `reasons` and a detail naming the evidence."""
        ...


class FilterModel(BaseModel):
    """Base for filter classes: frozen, unknown parameters refused, fields = parameters."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: ClassVar[str]
    reasons: ClassVar[tuple[RejectionReason, ...]]


class UndeclaredReason(RuntimeError):
    """A filter rejected with a reason it did not declare (a bug in that filter)."""


def is_reason_declaration(value: object) -> bool:
    """A reason id, or a family `prefix.*` of them."""
    return isinstance(value, str) and is_reason_id(value.removesuffix(".*"))


def declares(reasons: Sequence[str], reason: str) -> bool:
    """`reason` is one of `reasons`, or falls in a declared `family.*`."""
    return reason in reasons or any(r.endswith(".*") and reason.startswith(r[:-1]) for r in reasons)


def conformance_problems(cls: Any) -> list[str]:
    """What keeps `cls` from being a usable filter class (empty when it conforms)."""
    if not (isinstance(cls, type) and issubclass(cls, BaseModel)):
        return [
            f"{getattr(cls, '__qualname__', repr(cls))} is not a filter class: subclass trajforge.verifiers.protocol.FilterModel "
            "(a frozen pydantic model whose fields are the filter's parameters)"
        ]
    problems = []
    name = getattr(cls, "name", None)
    if not (isinstance(name, str) and _NAME.match(name)):
        problems.append(
            f"{cls.__name__}.name must be a lowercase snake_case identifier, got {name!r}"
        )
    reasons = getattr(cls, "reasons", None)
    if not (isinstance(reasons, tuple) and reasons and all(map(is_reason_declaration, reasons))):
        problems.append(
            f"{cls.__name__}.reasons must be a non-empty tuple of reason ids "
            f"(lowercase snake_case, dot-separated; `family.*` for a family), got {reasons!r}"
        )
    if not callable(getattr(cls, "check", None)):
        problems.append(f"{cls.__name__} has no check(trajectory, context) method")
    return problems


def run_filter(
    flt: TrajectoryFilter, trajectory: Trajectory, context: FilterContext
) -> FilterResult:
    """`flt.check(...)`, then the domain's own checks that extend `flt` (when it passed),
    refusing a rejection whose reason the filter did not declare."""
    result = flt.check(trajectory, context)
    if result.passed:
        result = domain_checks_result(flt.name, trajectory, context)
    if not result.passed and not declares(flt.reasons, result.reason or ""):
        raise UndeclaredReason(
            f"filter {flt.name!r} rejected with {result.reason!r}, which is not among its "
            f"declared reasons {flt.reasons}; add it to {type(flt).__name__}.reasons"
        )
    return result


def domain_checks_result(name: str, trajectory: Trajectory, context: FilterContext) -> FilterResult:
    """The first failing `TrajectoryCheck` the context's domain declares for filter `name`."""
    for check in options_of(context.domain).trajectory_checks:
        if check.extends != name:
            continue
        problems = check.problems(trajectory)
        if problems:
            return FilterResult.reject(check.reason, "; ".join(problems))
    return FilterResult.ok()


@dataclass(frozen=True)
class ChainVerdict:
    """Outcome of an ordered filter list: which filters passed, and the first rejection."""

    passed: tuple[str, ...]
    rejected_by: str | None = None
    rejection: FilterResult | None = None


def apply_filters(
    filters: Sequence[TrajectoryFilter], trajectory: Trajectory, context: FilterContext
) -> ChainVerdict:
    """Run the filters in order; the first rejection stops the chain (later ones never run, so
    each filter's counters count exactly the trajectories it saw)."""
    passed: list[str] = []
    for flt in filters:
        result = run_filter(flt, trajectory, context)
        if not result.passed:
            return ChainVerdict(tuple(passed), flt.name, result)
        passed.append(flt.name)
    return ChainVerdict(tuple(passed))
