"""The one boundary between an agent's tool calls and a domain's world state.

Domain tools are plain functions `fn(state, **arguments)` that read or mutate a pydantic world
state and raise `ToolError` when a precondition is violated. `Toolbox.execute` is the only place
that runs them: it validates arguments against the schema derived from the signature, turns every
failure (unknown tool, unparsable or ill-typed arguments, violated precondition) into an
`Error: ...` observation the agent sees, and records the state diff of every call. The rollout
never crashes on a bad call; it keeps going with the error as the tool's answer.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

# LiveDump, apply_patches and state_hash moved out; still imported from here by callers
from trajforge.generators.execute_options import PLAIN_EXECUTION, ExecuteOptions
from trajforge.generators.live_dump import LiveDump as LiveDump
from trajforge.generators.state_dumps import (
    DumpPath,
    outline,
    patched_dump,
    restore_outline,
    restore_whole,
    state_diff,
    touched_diff,
)
from trajforge.generators.state_dumps import apply_patches as apply_patches
from trajforge.generators.state_dumps import state_hash as state_hash
from trajforge.generators.vocabulary import DomainVocabulary
from trajforge.schemas import (
    DiffEntry,
    InitialState,
    Persona,
    Rejected,
    RejectionReason,
    Task,
    ToolCall,
    ToolKind,
    ToolSpec,
    content_hash,
)

if TYPE_CHECKING:
    pass

#: `touches(state, arguments) -> paths`: the entries of the dump (paths of keys from its top,
#: such as ("orders", order_id)) that a write may mutate, read from the state before the call.
Touches = Callable[[Any, dict[str, Any]], Iterable[DumpPath]]


class ToolError(Exception):
    """A tool's precondition failed (wrong status, unknown id, ...). Shown to the agent."""


class TaskRejected(Rejected):
    """Task synthesis or pre-rollout verification refused a task, with a typed reason."""

    def __init__(self, reason: RejectionReason, detail: str, task: Task | None = None):
        super().__init__(reason, detail)
        self.task = task


# ---------------------------------------------------------------------------------------------
# Declaring tools


def tool(
    kind: ToolKind, touches: Touches | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a function as a tool of the given kind. Write/transfer tools mutate state.

    `touches` (optional, for write/transfer tools): names every entry a call may mutate, so
    the toolbox re-dumps only those after the call instead of the whole world. It must cover
    failed calls' partial mutations too: an undeclared mutation would corrupt the held dump
    (tests/generators/test_write_touches.py holds every domain's writes to it). Without it a
    write dumps the whole state, as before."""

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.__tool_kind__ = kind  # type: ignore[attr-defined]
        fn.__tool_touches__ = touches  # type: ignore[attr-defined]
        return fn

    return mark


def _docstring_parts(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {arg: description})."""
    doc = inspect.cleandoc(doc or "")
    head, _, args_block = doc.partition("\nArgs:\n")
    args_block = re.split(r"\n(?:Returns|Raises):", args_block)[0]
    arg_docs: dict[str, str] = {}
    current = None
    for line in args_block.splitlines():
        m = re.match(r"\s*(\w+)(?:\s*\([^)]*\))?:\s*(.*)", line)
        if m and not line.startswith(" " * 8):
            current = m.group(1)
            arg_docs[current] = m.group(2).strip()
        elif current and line.strip():
            arg_docs[current] += " " + line.strip()
    return " ".join(head.split()), arg_docs


@functools.lru_cache(maxsize=1024)
def _arguments_model(fn: Callable[..., Any]) -> type[BaseModel]:
    """A pydantic model of the function's parameters after `state` (extra arguments refused).

    Cached per function: a domain is rebuilt wherever it is unpickled (each worker, each
    bundle), and building these models and their schemas was ~1% of a build's CPU."""
    hints = get_type_hints(fn)
    params = list(inspect.signature(fn).parameters.values())[1:]
    _, arg_docs = _docstring_parts(fn.__doc__ or "")

    fields: dict[str, Any] = {}
    for p in params:
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[p.name] = (hints[p.name], Field(default, description=arg_docs.get(p.name)))
    return create_model(
        f"{fn.__name__}_arguments",
        __config__=ConfigDict(extra="forbid", strict=False),
        **fields,
    )


@functools.lru_cache(maxsize=1024)
def spec_from_function(fn: Callable[..., Any]) -> ToolSpec:
    """ToolSpec from a @tool function: name, docstring description, JSON schema of arguments."""
    kind: ToolKind = getattr(fn, "__tool_kind__", None) or _missing_kind(fn)
    description, _ = _docstring_parts(fn.__doc__ or "")
    schema = _arguments_model(fn).model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    schema.setdefault("properties", {})
    schema["additionalProperties"] = False
    return ToolSpec(
        name=fn.__name__,
        description=description,
        parameters=schema,
        kind=kind,
        mutates_state=kind in ("write", "transfer"),
    )


def _missing_kind(fn: Callable[..., Any]) -> ToolKind:
    raise TypeError(f"{fn.__name__} is not a tool: decorate it with @tool('read'|'write'|...)")


# ---------------------------------------------------------------------------------------------
# Executing calls


@dataclass(frozen=True)
class ToolExecution:
    """What one call did: the text the agent sees, whether it failed, and what changed."""

    observation: str
    error: str | None
    diff: tuple[DiffEntry, ...]
    mutating: bool
    #: The dumped state after a write that ran (made for the diff, or for the undo of a failed
    #: write, anyway): replays and `LiveDump` hash it instead of dumping the state again.
    #: None for reads and for calls refused before running.
    state_after: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    #: For a write that ran: puts the state back as it was before it (from the dump or the
    #: outline taken before the call), for a caller that tries writes on a state it must
    #: hand back unchanged (`LiveDump(journal=True)`, the plan search).
    undo: Callable[[BaseModel], None] | None = field(default=None, repr=False, compare=False)


def _render_result(value: Any) -> str:
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def _not_rendered(value: Any) -> str:
    """The observation of a successful call nobody reads (`ExecuteOptions(observe=False)`)."""
    return ""


def _format_validation_error(name: str, err: ValidationError) -> str:
    parts = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"]) or "arguments"
        parts.append(f"{loc}: {e['msg']}")
    return f"Error: invalid arguments for {name}: " + "; ".join(parts)


class Toolbox:
    """A domain's tools, executed only through `execute` (the error boundary)."""

    def __init__(self, functions: Sequence[Callable[..., Any]]):
        self._functions = {fn.__name__: fn for fn in functions}
        self._models = {fn.__name__: _arguments_model(fn) for fn in functions}
        self._touches: dict[str, Touches | None] = {
            fn.__name__: getattr(fn, "__tool_touches__", None) for fn in functions
        }
        self.specs: tuple[ToolSpec, ...] = tuple(spec_from_function(fn) for fn in functions)
        self._by_name = {s.name: s for s in self.specs}
        #: Which functions these are (memoised replays must not mix two toolboxes of a name).
        self.fingerprint = content_hash([[fn.__module__, fn.__qualname__] for fn in functions])

    @property
    def declares_touches(self) -> bool:
        """Whether every write tool declares what it touches (so its writes can be undone
        from the entries they dumped, and none dumps the whole world)."""
        return all(self._touches[s.name] is not None for s in self.specs if s.mutates_state)

    def spec(self, name: str) -> ToolSpec | None:
        return self._by_name.get(name)

    def functions(self) -> tuple[Callable[..., Any], ...]:
        """The tool functions, in declaration order (adapters re-expose their signatures)."""
        return tuple(self._functions.values())

    def execute(
        self,
        state: BaseModel,
        call: ToolCall,
        dumped: dict[str, Any] | None = None,
        options: ExecuteOptions = PLAIN_EXECUTION,
    ) -> ToolExecution:
        """Run one call against `state` (mutated in place on success); never raises.

        `dumped` is `state.model_dump(mode="json")` when the caller already holds it (a live
        loop keeps the last write's `state_after`: read tools and failed writes leave the
        state as it was), so a write dumps the state once instead of twice. The caller
        vouches that it is current; `LiveDump` is the one helper that keeps it so.
        `options`: how a write is dumped and diffed and whether results are rendered
        (`ExecuteOptions`; the defaults suit a caller with no held dump)."""
        spec = self._by_name.get(call.name)
        checked = self._validated(call, spec)
        if isinstance(checked, ToolExecution):
            return checked
        assert spec is not None  # a call of an unknown tool was refused above
        render = _render_result if options.observe else _not_rendered
        if not spec.mutates_state:
            return self._read(state, call, checked, render)
        return self._dispatch_write(state, call, checked, dumped, options, render)

    def _validated(self, call: ToolCall, spec: ToolSpec | None) -> dict[str, Any] | ToolExecution:
        """The call's validated arguments, or the error observation that refuses it (an
        unknown tool, arguments that did not parse, or arguments its model refuses)."""
        if spec is None:
            known = ", ".join(sorted(self._functions))
            return ToolExecution(
                f"Error: unknown tool '{call.name}'. Known tools: {known}",
                "unknown_tool",
                (),
                False,
            )
        if call.parse_error is not None:
            msg = f"Error: could not parse arguments for {call.name}: {call.parse_error}"
            return ToolExecution(msg, "parse_error", (), spec.mutates_state)
        try:
            return dict(self._models[call.name].model_validate(call.arguments))
        except ValidationError as err:
            return ToolExecution(
                _format_validation_error(call.name, err),
                "invalid_arguments",
                (),
                spec.mutates_state,
            )

    def _read(
        self,
        state: BaseModel,
        call: ToolCall,
        args: dict[str, Any],
        render: Callable[[Any], str],
    ) -> ToolExecution:
        """A read tool: its rendered result, or its error; nothing to dump."""
        try:
            result = self._functions[call.name](state, **args)
        except Exception as err:  # noqa: BLE001 - model-chosen arguments never crash a run
            return ToolExecution(_error_observation(err), "tool_error", (), False)
        return ToolExecution(render(result), None, (), False)

    def _dispatch_write(
        self,
        state: BaseModel,
        call: ToolCall,
        args: dict[str, Any],
        dumped: dict[str, Any] | None,
        options: ExecuteOptions,
        render: Callable[[Any], str],
    ) -> ToolExecution:
        """A write: the entries it touches (`incremental`), made the copy's own first (`cow`),
        then diffed between outlines of those entries (nothing held, none wanted: `hold`
        False) or between whole dumps."""
        paths = self._touched(state, call.name, args) if options.incremental else None
        if options.cow is not None:
            options.cow.privatise(state, paths)
        if dumped is None and not options.hold and paths is not None:
            before = outline(state, paths)
            if before is not None:
                return self._write_outlined(state, call, args, before, paths, render)
        return self._write(state, call, args, dumped, paths, render)

    def _write(
        self,
        state: BaseModel,
        call: ToolCall,
        args: dict[str, Any],
        dumped: dict[str, Any] | None,
        paths: list[DumpPath] | None,
        render: Callable[[Any], str],
    ) -> ToolExecution:
        """A write diffed between whole dumps: `dumped` (the held one) or a fresh dump before,
        and after it the held dump patched at `paths` (or, without them, a fresh dump)."""
        before = dumped if dumped is not None else state.model_dump(mode="json")
        try:
            result = self._functions[call.name](state, **args)
        except Exception as err:  # noqa: BLE001 - model-chosen arguments must never crash a run
            restore_whole(state, before)  # the state is `before` again: hand that dump on too
            return ToolExecution(_error_observation(err), "tool_error", (), True, before)
        after = patched_dump(state, before, paths) if paths is not None else None
        if after is None:
            after = state.model_dump(mode="json")
            diff = state_diff(before, after)
        else:
            diff = touched_diff(before, after, paths)  # type: ignore[arg-type]
        undo = functools.partial(restore_whole, dumped=before)
        return ToolExecution(render(result), None, diff, True, after, undo)

    def _write_outlined(
        self,
        state: BaseModel,
        call: ToolCall,
        args: dict[str, Any],
        before: dict[str, Any],
        paths: list[DumpPath],
        render: Callable[[Any], str],
    ) -> ToolExecution:
        """A write with no held dump and none wanted (the plan search): only the touched
        entries are dumped, before and after (`outline`), for the diff and for the undo of a
        failed call (or of this one, later); no whole dump is made, so none is handed on."""
        try:
            result = self._functions[call.name](state, **args)
        except Exception as err:  # noqa: BLE001 - model-chosen arguments must never crash a run
            restore_outline(state, before)
            return ToolExecution(_error_observation(err), "tool_error", (), True)
        after = outline(state, paths)
        # an outline differs from the whole dump only off the paths, where it is equal before
        # and after; None only if the call retyped a declared field (no diff to give)
        diff = touched_diff(before, after, paths) if after is not None else ()
        undo = functools.partial(restore_outline, before=before)
        return ToolExecution(render(result), None, diff, True, None, undo)

    def _touched(self, state: BaseModel, name: str, args: dict[str, Any]) -> list[DumpPath] | None:
        """The entries a call of `name` may mutate, or None (dump the whole state) when its
        tool declares none or its declaration fails on these arguments."""
        touches = self._touches[name]
        if touches is None:
            return None
        try:
            return [tuple(path) for path in touches(state, args)]
        except Exception:  # noqa: BLE001 - a declaration's bug costs a whole dump, not a crash
            return None


def _error_observation(err: Exception) -> str:
    """The agent-visible text of a failed call. A `ToolError` is a violated precondition and
    says so; anything else (OverflowError, RecursionError, ValueError from model-chosen input)
    is named by type, bounded in length, so the rollout continues and a cached response replays
    to the same observation instead of the same crash."""
    if isinstance(err, ToolError):
        return f"Error: {err}"
    detail = str(err)[:200] or "no detail"
    return f"Error: the tool failed on these arguments ({type(err).__name__}: {detail})"


# ---------------------------------------------------------------------------------------------
# The domain extension point


class Domain(Protocol):
    """A domain: data model + tools + task synthesis + policy (tau2-bench's layout).

    Everything domain-specific that generic code needs comes through this protocol: the world
    (`initial_state`), the tools (`toolbox`), the rules (`policy`), task synthesis, and the
    words (`vocabulary`: task types, which of them only read, the two roles' names, the action
    verbs a write backs). Implementations live in generators/domains/<name>/ and are listed in
    the frozen table of generators/domains/__init__.py; the kit (generators/domain_kit/) does
    most of `synthesize_task`. See README "Add a domain". Optional members (policy rules, claim
    types, outcome checks, confirmation, phrasing) are plain attributes too; generic code reads
    them typed through `domain_options.options_of`, whose `DomainOptions` documents each one's
    default.
    """

    name: str
    policy: str  # the rules the agent must follow (policy.md)
    toolbox: Toolbox
    vocabulary: DomainVocabulary

    def initial_state(self, init: InitialState) -> BaseModel:
        """The world state for a task: generated from init.seed, then patches applied."""
        ...

    def synthesize_task(self, persona: Persona, seed: int) -> Task:
        """A verified task for this persona, or raise TaskRejected with a typed reason."""
        ...
