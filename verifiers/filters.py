"""The configured filter list: built-in filters by name, plugin filters by dotted path.

`quality.filters` in a build config is an ordered list of `FilterSpec`s; each names a built-in
(`{name: loops, max_repeats: 4}`, or just `loops`) or a class in the user's own package
(`{path: mypkg.filters:NoEmojiFilter, max_chars: 2}`). Every other key of an entry is a
parameter, validated by the filter class itself at config load. Built-ins sit in one frozen
table (add a filter: one file, one line here); nothing is discovered by import side effects.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from trajforge.generators.plugins import PluginError, is_plugin_path, load_object
from trajforge.verifiers.degenerate import DegenerateTurnsFilter
from trajforge.verifiers.grounding import GroundedClaimsFilter
from trajforge.verifiers.hallucination import HallucinatedValuesFilter
from trajforge.verifiers.loops import LoopsFilter
from trajforge.verifiers.outcome_told import OutcomeToldFilter
from trajforge.verifiers.policy import PolicyFilter
from trajforge.verifiers.protocol import TrajectoryFilter, conformance_problems
from trajforge.verifiers.role_embedding import RoleByMeaningFilter
from trajforge.verifiers.signatures import AnswerBeforeEvidenceFilter
from trajforge.verifiers.structural import AgentToolCallsFilter, NarratedActionsFilter
from trajforge.verifiers.user_fidelity import UserFidelityFilter

#: Built-in filter name -> class, in the default order (cheap structural checks first).
FILTERS: MappingProxyType[str, type[Any]] = MappingProxyType(
    {
        cls.name: cls
        for cls in (
            AgentToolCallsFilter,
            NarratedActionsFilter,
            AnswerBeforeEvidenceFilter,
            HallucinatedValuesFilter,
            LoopsFilter,
            UserFidelityFilter,
            DegenerateTurnsFilter,
            PolicyFilter,
            OutcomeToldFilter,
            GroundedClaimsFilter,
        )
    }
)


#: Built-in filters a config must name to run (not in `DEFAULT_FILTERS`): they load a model.
OPT_IN_FILTERS: MappingProxyType[str, type[Any]] = MappingProxyType(
    {cls.name: cls for cls in (RoleByMeaningFilter,)}
)


def _builtin(name: str) -> type[Any] | None:
    return FILTERS.get(name) or OPT_IN_FILTERS.get(name)


class FilterSpec(BaseModel):
    """One entry of `quality.filters`: `name` (built-in) or `path` (plugin), plus parameters."""

    model_config = ConfigDict(frozen=True, extra="allow")

    name: str | None = None
    path: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, value: Any) -> Any:
        """`- loops` is shorthand for `- {name: loops}`."""
        return {"name": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _resolvable(self) -> FilterSpec:
        self.build()  # resolve and validate the parameters now, not on a worker
        return self

    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})

    def filter_class(self) -> type[Any]:
        """The class this entry names; raises ValueError saying what to fix."""
        if (self.name is None) == (self.path is None):
            raise ValueError("give exactly one of `name` (a built-in filter) or `path` (plugin)")
        if self.name is not None:
            if is_plugin_path(self.name):
                raise ValueError(f"{self.name!r} is a dotted path: write it as `path:`")
            cls = _builtin(self.name)
            if cls is None:
                raise ValueError(
                    f"unknown filter {self.name!r}; built-in filters: {', '.join(FILTERS)} "
                    f"(opt-in: {', '.join(OPT_IN_FILTERS)}; or name your own class with "
                    "`path: package.module:Class`)"
                )
            return cls
        assert self.path is not None
        try:
            cls = load_object(self.path)
        except PluginError as err:
            raise ValueError(f"path: {err}") from None
        problems = conformance_problems(cls)
        if problems:
            raise ValueError(f"path {self.path!r}: " + "; ".join(problems))
        return cls

    def build(self) -> TrajectoryFilter:
        """A filter instance with this entry's parameters (validated by the filter class)."""
        cls = self.filter_class()
        try:
            return cls.model_validate(self.params())
        except ValidationError as err:
            fields = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or '(parameters)'}: {e['msg']}"
                for e in err.errors()
            )
            raise ValueError(f"filter {cls.name!r} parameters: {fields}") from None


#: Today's behaviour: every built-in filter, in table order, with default parameters.
DEFAULT_FILTERS: tuple[FilterSpec, ...] = tuple(FilterSpec(name=name) for name in FILTERS)


def build_filters(specs: Sequence[FilterSpec]) -> tuple[TrajectoryFilter, ...]:
    """The configured filters, in order (called once per worker, from DoFn setup())."""
    return tuple(spec.build() for spec in specs)


def unique_names(filters: Sequence[TrajectoryFilter]) -> list[str]:
    """Names used twice (each filter's counters are keyed by its name, so they must differ)."""
    names = [f.name for f in filters]
    return sorted({n for n in names if names.count(n) > 1})
