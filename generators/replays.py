"""Replays of tool calls on a task's initial state, computed once per process and reused.

A task's world is replayed by several stages: synthesis runs the gold plan to get its final
hash, pre-rollout verification runs it again for the hash after every action, the rollout (or
the blueprint skeleton) runs the agent's calls, and the outcome check runs both the agent's
calls and the gold plan once more. Each replay rebuilds a whole world state and hashes it, which was
most of a build's CPU. The tools are deterministic, so a replay's result is a function of
(domain, initial state, calls): `replay` computes it once and keeps it in a bounded per-process
memo keyed by the content hash of exactly those inputs (tool name, arguments and parse error of
each call; never the call id, which does not change what a tool does). A record edited after the
fact has other calls and so another key; a miss (another worker, an evicted entry) simply
replays again, so results never depend on what is cached, only the CPU does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from trajforge.generators.bounded_lru import BoundedLru
from trajforge.generators.tooling import Domain, LiveDump, Toolbox
from trajforge.generators.user_tools import gold_call, world_toolbox
from trajforge.generators.world_templates import TEMPLATES, CowCopy, WorldTemplate, template_key
from trajforge.schemas import GoldAction, InitialState, ToolCall, content_hash

#: Entries kept per process (~1 KB each). A batch runner finishes a stage for every element
#: before the next stage starts, so a build larger than this replays the older tasks again.
MEMO_SIZE = 32_768


@dataclass(frozen=True)
class Replay:
    """What replaying calls on a fresh initial state gives.

    `final`: the state hash after the last call. `hashes`: the hash before any call, then after
    each call (a read keeps the previous hash: read tools never mutate, which tests hold every
    domain's to; the last entry equals `final`), or None
    when only the final hash was recorded (a rollout). `failed`: (index, observation) of the
    first call that returned an error, else None (also unknown when `hashes` is None).
    """

    final: str
    hashes: tuple[str, ...] | None = None
    failed: tuple[int, str] | None = None


#: The replay memo's type (kept as a name: tests build small ones).
ReplayMemo = BoundedLru

MEMO: BoundedLru[Replay] = BoundedLru(MEMO_SIZE)


def replay_key(world: list[str], init: InitialState, calls: Iterable[ToolCall]) -> str:
    """Content id of a replay's inputs: the world (`world_of`), the initial state, and what a
    tool sees of each call (never its id)."""
    return content_hash(
        [
            world,
            init.model_dump(mode="json"),
            [[c.name, c.arguments, c.parse_error, *([c.actor] * c.by_user)] for c in calls],
        ]
    )


def world_of(
    name: str, toolbox: Toolbox, initial_state: Callable[[InitialState], BaseModel]
) -> list[str]:
    """What decides a replay besides its inputs: the domain's name, its tool functions and the
    function that builds its states (two test domains of one name do not share entries)."""
    return [name, toolbox.fingerprint, f"{initial_state.__module__}.{initial_state.__qualname__}"]


def gold_calls(actions: Iterable[GoldAction]) -> list[ToolCall]:
    """The gold plan as tool calls (each by its action's actor), so it runs through the same
    boundary as the agent's."""
    return [gold_call(a, i) for i, a in enumerate(actions)]


def run_replay(
    toolbox: Toolbox,
    state: BaseModel,
    calls: Sequence[ToolCall],
    prefixes: bool,
    start: CowCopy | None = None,
) -> Replay:
    """Execute `calls` in order on `state` (mutated in place); every call runs, even after an
    error, exactly as the outcome check replays a trajectory. `start`: `state` is that
    template's handout, whose dump and hash (computed once per template) are the first
    version's."""
    # one dump per state version, shared by writes and hashes; only errors are read
    live = LiveDump(start=start, observe=False)
    hashes: list[str] = []
    if prefixes:
        if LiveDump.SHARE and start is None:  # the first write's "before", the first hash
            live.dumped = state.model_dump(mode="json")
        hashes.append(live.state_hash(state))  # a handout's: its template's, made once
    failed = None
    for i, call in enumerate(calls):
        execution = live.execute(toolbox, state, call)
        if execution.error is not None and failed is None:
            failed = (i, execution.observation)
        if prefixes:  # a read never mutates (held to that by tests): it carries the hash
            hashes.append(live.state_hash(state) if execution.mutating else hashes[-1])
    final = hashes[-1] if prefixes else live.state_hash(state)
    return Replay(final=final, hashes=tuple(hashes) if prefixes else None, failed=failed)


def replay(
    name: str,
    toolbox: Toolbox,
    initial_state: Callable[[InitialState], BaseModel],
    init: InitialState,
    calls: Sequence[ToolCall],
    prefixes: bool = False,
    built: BaseModel | WorldTemplate | None = None,
) -> Replay:
    """The replay of `calls` on the world `init`, from the memo when it is there (with the
    per-call hashes when `prefixes`). `built`: `initial_state(init)` already built by a caller
    that no longer reads it; a miss replays on it (mutating it) instead of building another;
    or the template of that world, and a miss replays on a copy-on-write handout of it."""
    key = replay_key(world_of(name, toolbox, initial_state), init, calls)
    entry = MEMO.get(key)
    if entry is not None and (entry.hashes is not None or not prefixes):
        return entry
    if isinstance(built, WorldTemplate):
        handout = built.handout()
        entry = run_replay(toolbox, handout.state, calls, prefixes, handout)
    else:
        state = built if built is not None else initial_state(init)
        entry = run_replay(toolbox, state, calls, prefixes)
    MEMO.put(key, entry)
    return entry


def replay_domain(
    domain: Domain, init: InitialState, calls: Sequence[ToolCall], prefixes: bool = False
) -> Replay:
    """`replay` with a domain's name, tools (the user's too, `world_toolbox`) and world."""
    return replay(domain.name, world_toolbox(domain), domain.initial_state, init, calls, prefixes)


def recorded(domain: Domain, init: InitialState, calls: Sequence[ToolCall]) -> Replay | None:
    """The memo's entry for these calls in `domain`'s world `init`, if this process has one."""
    return MEMO.get(_domain_key(domain, init, calls))


def remember_final(domain: Domain, init: InitialState, calls: Sequence[ToolCall], final: str):
    """Record a replay that a generator just performed live (the rollout's executed calls and
    the state hash it ended with), unless a fuller entry is already there."""
    key = _domain_key(domain, init, calls)
    if MEMO.get(key) is None:
        MEMO.put(key, Replay(final=final))


def _domain_key(domain: Domain, init: InitialState, calls: Sequence[ToolCall]) -> str:
    return replay_key(
        world_of(domain.name, world_toolbox(domain), domain.initial_state), init, calls
    )


def register_template(
    name: str,
    toolbox: Toolbox,
    initial_state: Callable[[InitialState], BaseModel],
    init: InitialState,
    state: BaseModel,
    dumped: dict | None = None,
) -> WorldTemplate | None:
    """Keep `state` (equal to `initial_state(init)`; its caller never mutates it again) as the
    process's template of that world, with its dump when the caller knows it; None when it
    cannot be shared."""
    key = template_key(world_of(name, toolbox, initial_state), init)
    return TEMPLATES.share(key, state, dumped)


def template_of(domain: Domain, init: InitialState, take: bool = False) -> WorldTemplate | None:
    """This process's template of `domain`'s world `init`, if it has one (`take`: and
    forget it, for its last reader)."""
    key = template_key(world_of(domain.name, world_toolbox(domain), domain.initial_state), init)
    return TEMPLATES.take(key) if take else TEMPLATES.get(key)


def taken_world(domain: Domain, init: InitialState) -> BaseModel | None:
    """For a domain's `initial_state` (a fresh object every call): this process's template of
    the world `init`, itself, taken from the cache, or None. Safe to hand over for mutation:
    once taken nothing reads the template again (the one handout before, synthesis's gold
    replay, is finished; the rollout takes its own through `live_world`), so the first stage
    that builds the task's world after synthesis (the blueprint's skeleton, a rollout that
    missed) gets it without validating, and a template no rollout takes is freed then."""
    key = template_key(world_of(domain.name, world_toolbox(domain), domain.initial_state), init)
    template = TEMPLATES.take(key)
    return template.state if template is not None else None


def live_world(
    domain: Domain, init: InitialState, initial_hash: str | None = None
) -> tuple[BaseModel, LiveDump]:
    """A task's initial state to run calls on, and its live dump: a copy-on-write handout of
    this process's template of the world when synthesis left one (taken: no later stage
    reads it), so nothing is validated and the first write starts from the template's dump
    instead of dumping the whole world; else built as always. `initial_hash`: the state's
    hash when the caller knows it."""
    template = template_of(domain, init, take=True)
    if template is None:
        return domain.initial_state(init), LiveDump(initial_hash)
    handout = template.handout()
    return handout.state, LiveDump(initial_hash, start=handout)
