"""Each task's world built once per process, handed out as copy-on-write copies.

A task's world was validated, dumped whole and hashed by synthesis (the gold replay) and then
again, a few milliseconds later in the same process, by the rollout (stages are fused): ~15-20%
of a rollout build's CPU. Synthesis now registers the world it built as a read-only template
(`TEMPLATES.share`), keyed by what determines it (the domain's world, `replays.world_of`, and the
`InitialState`); the gold replay and the rollout take `handout()`s of it: a copy whose
top-level collections are its own (shallow copies) while every entry (an order, a user) is
still the template's object. Before a write runs, `Toolbox.execute` calls `CowCopy.privatise`
with the entries the tool declares it touches, which deep-copies just those into the copy's
own collections; a write that declares nothing (or whose declaration fails) materialises the
whole copy first. Undo paths replace a copy's fields or entries and never write into one, so
the template never changes (tests/generators/test_world_templates.py holds every write of
every domain to that, byte for byte).

The template's whole dump, its `CanonicalParts` and its hash are computed once, lazily
(`dumped()`): the replay's first version and the rollout's first write start from them. A miss
(another process, an evicted template, a state this cannot copy) builds the world as before,
so results never depend on what is cached, only the CPU does. The last reader takes the
template (`WorldTemplates.take`: the rollout, or a domain's `initial_state` asked first, such
as the blueprint skeleton's), so it is freed with that reader instead of lingering.
"""

from __future__ import annotations

import copy
import enum
import hashlib
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel

from trajforge.generators.bounded_lru import BoundedLru
from trajforge.generators.state_dumps import patched_dump
from trajforge.schemas import InitialState, content_hash
from trajforge.schemas.base import CanonicalParts

#: Templates kept per process. A template lives from its task's synthesis to its rollout;
#: tasks in flight are bounded by `max_in_flight` (64 by default; the async stage blocks when
#: full), so twice that covers them with room for the bundle being synthesised. A retail
#: template is ~0.4 MB of objects plus ~0.2 MB of dump once dumped: ~80 MB at the bound. A
#: larger `max_in_flight` only makes some rollouts miss and build their world as before.
TEMPLATES_SIZE = 128

#: Values a copy may share with its template as they are: nothing can mutate them in place.
_IMMUTABLE = (str, int, float, bool, bytes, type(None), enum.Enum)


@dataclass(frozen=True)
class TemplateDump:
    """A template's whole dump (never mutated: writes patch copies of it, `patched_dump`),
    the canonical bytes of its entries and its state hash."""

    dumped: dict[str, Any]
    parts: CanonicalParts
    hash: str

    def parts_for_copy(self) -> CanonicalParts:
        """A `CanonicalParts` that starts knowing this dump's entries: `bytes_of` replaces its
        table of parts instead of mutating it, so a shallow copy is independent."""
        return copy.copy(self.parts)


class WorldTemplate:
    """A built world that nothing mutates, and what is derived from it once."""

    def __init__(self, state: BaseModel, dumped: dict[str, Any] | None = None) -> None:
        self.state = state
        self._known_dump = dumped
        self._dump: TemplateDump | None = None
        self._lock = threading.Lock()
        #: Per field, the ids of the objects a copy shares with the template (the template
        #: keeps them alive, so no other object can have one of these ids).
        self.shared_ids: dict[str, frozenset[int]] = {
            name: _shared_ids(value) for name, value in state.__dict__.items()
        }

    def dumped(self) -> TemplateDump:
        """The whole dump, parts and hash, computed by the first caller (either thread)."""
        with self._lock:
            if self._dump is None:
                whole = self._known_dump
                if whole is None:
                    whole = self.state.model_dump(mode="json")
                parts = CanonicalParts()
                digest = hashlib.sha256(parts.bytes_of(whole)).hexdigest()
                self._dump = TemplateDump(whole, parts, digest)
            return self._dump

    def handout(self) -> CowCopy:
        """A copy that owns its top-level collections and shares their entries (~10 us)."""
        state = self.state.model_copy()
        fields = state.__dict__
        for name, value in fields.items():
            if type(value) is dict:
                fields[name] = dict(value)
            elif type(value) is list:
                fields[name] = list(value)
        return CowCopy(self, state)


class CowCopy:
    """One handout: the copy (`state`) and which of its entries are still the template's.

    `privatise` is the one place that makes entries the copy's own; whatever mutates the copy
    (a tool through `Toolbox.execute`) must call it first with what it will touch."""

    def __init__(self, template: WorldTemplate, state: BaseModel) -> None:
        self.template = template
        self.state = state
        #: True once nothing is shared any more (a whole materialisation).
        self.whole = False

    def privatise(self, state: BaseModel, paths: Iterable[tuple[str, ...]] | None) -> None:
        """Deep-copy into `state` (this handout's copy) the shared entries at `paths` (dump
        paths, `("orders", "#W1")`; a path of one key is the whole field, a longer one its
        entry's); None, an empty path or an unknown field: every shared entry."""
        if self.whole:
            return
        if state is not self.state:
            raise ValueError("privatise was given another state than this handout's copy")
        fields = type(state).model_fields
        wanted = list(paths) if paths is not None else None
        if wanted is None or any(not p or p[0] not in fields for p in wanted):
            for name in fields:
                self._privatise_field(name, None)
            self.whole = True
            return
        for path in wanted:
            self._privatise_field(path[0], path[1] if len(path) > 1 else None)

    def _privatise_field(self, name: str, key: str | None) -> None:
        """The field `name`'s shared entry `key` (every shared entry when None) made own."""
        shared = self.template.shared_ids.get(name)
        if not shared:
            return
        fields = self.state.__dict__
        own = fields[name]
        if type(own) is dict and key is not None:
            entry = own.get(key)
            if entry is not None and id(entry) in shared:
                own[key] = copy.deepcopy(entry)
        elif type(own) is dict:
            for k, entry in own.items():
                if id(entry) in shared:
                    own[k] = copy.deepcopy(entry)
        elif type(own) is list:  # entries of a list are privatised together (keys are indexes)
            for i, entry in enumerate(own):
                if id(entry) in shared:
                    own[i] = copy.deepcopy(entry)
        elif id(own) in shared:  # a model (or other mutable value) shared whole
            fields[name] = copy.deepcopy(own)


def _shared_ids(value: Any) -> frozenset[int]:
    """The ids of the mutable objects a handout shares for one field's `value`."""
    if type(value) is dict:
        return frozenset(id(v) for v in value.values() if not isinstance(v, _IMMUTABLE))
    if type(value) is list:
        return frozenset(id(v) for v in value if not isinstance(v, _IMMUTABLE))
    return frozenset() if isinstance(value, _IMMUTABLE) else frozenset({id(value)})


def can_share(state: Any) -> bool:
    """Whether handouts of `state` can be made safely: a pydantic model with no extra or
    private values (a shallow copy would share them unseen), whose fields hold only plain
    dicts, lists, models or immutable values (other containers are not copied per handout)."""
    if not isinstance(state, BaseModel):
        return False
    if state.__pydantic_extra__ or state.__pydantic_private__:
        return False
    if set(state.__dict__) != set(type(state).model_fields):
        return False
    return all(
        type(v) in (dict, list) or isinstance(v, (BaseModel, *_IMMUTABLE))
        for v in state.__dict__.values()
    )


class PlainWorld(Protocol):
    """A domain whose generated worlds are plain data equal to their dumps: the template of a
    world it synthesised starts from that data instead of a whole `model_dump`. Optional; a
    domain without `initial_dump` (or returning None) has its templates dumped once."""

    def initial_dump(self, init: InitialState) -> dict[str, Any] | None: ...


def known_dump(
    initial_state: Callable[[InitialState], BaseModel],
    seeded: InitialState,
    patched: InitialState,
    state: BaseModel,
) -> dict[str, Any] | None:
    """The dump of `state` (the world `seeded` with `patched`'s patches applied to it in
    place), from the domain's plain data of the seeded world (`PlainWorld`, found on the
    bound `initial_state`'s domain) with each patched entry re-dumped from `state`
    (`patched_dump`); None when the domain has no plain data or a path does not fit."""
    domain = getattr(initial_state, "__self__", None)
    plain = getattr(domain, "initial_dump", None)
    seeded_dump = plain(seeded) if plain is not None else None
    if seeded_dump is None:
        return None
    return patched_dump(state, seeded_dump, [tuple(p.path.split(".")) for p in patched.patches])


def template_key(world: list[str], init: InitialState) -> str:
    """What determines a built world: the domain's world (`replays.world_of`) and `init`."""
    return content_hash([world, init.model_dump(mode="json")])


class WorldTemplates(BoundedLru[WorldTemplate]):
    """The templates of a process (synthesis shares on the DoFn thread, the rollout takes on
    the event-loop thread; templates themselves are read-only)."""

    def __init__(self, maxsize: int = TEMPLATES_SIZE) -> None:
        super().__init__(maxsize)

    def share(
        self, key: str, state: BaseModel, dumped: dict[str, Any] | None = None
    ) -> WorldTemplate | None:
        """Register `state` (the caller never mutates it again) as the template for `key`;
        None when it cannot be shared (`can_share`) or caching is off."""
        if not self.enabled or not can_share(state):
            return None
        template = WorldTemplate(state, dumped)
        self.put(key, template)
        return template


TEMPLATES = WorldTemplates()
