"""Dumped world states: hashes, diffs, and the incremental dump after a write.

A write tool changes one or two entries of a world (an order, a user's payment method), yet
the boundary used to dump the whole world after every write (~45 KB for retail) to diff it
against the held "before" and to hash it. A tool that declares `touches` (see `tooling.tool`)
names the entries a call may mutate, as paths of keys from the top of the dump, e.g.
`("orders", "#W1")`; `patched_dump` re-dumps just those and copies only the containers on
their paths, so the dump held for the previous version stays valid and every untouched entry
is the very same object in both (which `touched_diff` and `CanonicalParts` rely on).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from trajforge.schemas import DiffEntry, StatePatch, content_hash

#: A path of keys from the top of a dumped state to one entry: ("orders", "#W1").
DumpPath = tuple[str, ...]

_MISSING = object()


def state_hash(state: BaseModel) -> str:
    """Stable hash of a world state: sha256 of its canonical JSON."""
    return content_hash(state.model_dump(mode="json"))


def apply_patches(state: BaseModel, patches: Iterable[StatePatch]) -> BaseModel:
    """Return a copy of `state` with each dotted-path patch (`orders.#W1.status`) applied."""
    data = state.model_dump(mode="json")
    for patch in patches:
        *parents, leaf = patch.path.split(".")
        node = data
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if isinstance(node, list):
            node[int(leaf)] = copy.deepcopy(patch.value)
        else:
            node[leaf] = copy.deepcopy(patch.value)
    return type(state).model_validate(data)


# ---------------------------------------------------------------------------------------------
# Diffs


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for k, v in value.items():
            _flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(value, list) and value:
        for i, v in enumerate(value):
            _flatten(v, f"{prefix}[{i}]", out)
    else:
        out[prefix] = value


def _flatten_changed(x: Any, y: Any, prefix: str, a: dict[str, Any], b: dict[str, Any]) -> None:
    """Flatten only the subtrees where `x` and `y` differ (equal subtrees are skipped whole).

    Gives the same changed leaves as flattening both states, without walking the unchanged
    bulk of a large state on every write.
    """
    if x == y:
        return
    if isinstance(x, dict) and isinstance(y, dict) and x and y:
        for k in x.keys() | y.keys():
            _flatten_key(x, y, k, f"{prefix}.{k}" if prefix else str(k), a, b)
    elif isinstance(x, list) and isinstance(y, list) and x and y:
        for i in range(max(len(x), len(y))):
            _flatten_key(x, y, i, f"{prefix}[{i}]", a, b)
    else:
        _flatten(x, prefix, a)
        _flatten(y, prefix, b)


def _flatten_key(x: Any, y: Any, k: Any, path: str, a: dict, b: dict) -> None:
    """One child of two non-empty containers of one kind: diffed, or flattened on its side."""
    in_x = k in x if isinstance(x, dict) else k < len(x)
    in_y = k in y if isinstance(y, dict) else k < len(y)
    if in_x and in_y:
        _flatten_changed(x[k], y[k], path, a, b)
    elif in_x:
        _flatten(x[k], path, a)
    elif in_y:
        _flatten(y[k], path, b)


def _entries(a: dict[str, Any], b: dict[str, Any]) -> tuple[DiffEntry, ...]:
    paths = sorted(set(a) | set(b))
    return tuple(
        DiffEntry(path=p, before=a.get(p), after=b.get(p)) for p in paths if a.get(p) != b.get(p)
    )


def state_diff(before: dict[str, Any], after: dict[str, Any]) -> tuple[DiffEntry, ...]:
    """Changed leaves between two dumped states, as sorted (path, before, after) entries."""
    a: dict[str, Any] = {}
    b: dict[str, Any] = {}
    _flatten_changed(before, after, "", a, b)
    return _entries(a, b)


def touched_diff(
    before: dict[str, Any], after: dict[str, Any], paths: Iterable[DumpPath]
) -> tuple[DiffEntry, ...]:
    """`state_diff(before, after)` when the two differ only at `paths` (as `patched_dump`
    makes them): walks down to each path the way the full diff would and diffs only there.
    Falls back to the full diff where the full one would not descend (an empty or retyped
    container on the way), so the output is the same entries in the same order."""
    a: dict[str, Any] = {}
    b: dict[str, Any] = {}
    for path in dict.fromkeys(paths):
        x, y, prefix = before, after, ""
        for key in path:
            if not (isinstance(x, dict) and isinstance(y, dict) and x and y):
                return state_diff(before, after)
            step = f"{prefix}.{key}" if prefix else str(key)
            if key not in x or key not in y:
                _flatten_key(x, y, key, step, a, b)
                break
            x, y, prefix = x[key], y[key], step
        else:
            _flatten_changed(x, y, prefix, a, b)
    return _entries(a, b)


# ---------------------------------------------------------------------------------------------
# The dump after a write


class _Unpatchable(Exception):
    """The dump cannot be patched along a path (a plain value where a dict was expected)."""


def patched_dump(
    state: BaseModel, before: dict[str, Any], paths: Iterable[DumpPath]
) -> dict[str, Any] | None:
    """`state.model_dump(mode="json")` after a call that mutated at most the entries at
    `paths`, given `before`, the dump from before the call: each path is dumped afresh and
    set into a copy of `before` that shares everything off the paths (`before` itself is
    never changed). An entry that is gone from the state is removed; a new one is added.
    None when a path does not fit the dump's shape (the caller dumps the whole state)."""
    after = before
    try:
        for path in paths:
            if path:
                after = _set_path(after, path, _dump_at(state, path))
            else:
                return None
    except _Unpatchable:
        return None
    return after


def _dump_at(state: BaseModel, path: DumpPath) -> Any:
    """The JSON dump of what `path` names in `state`, or `_MISSING` when there is nothing.

    A model at the end of the path is dumped by itself (as the whole dump writes it); any
    other value by the dump of the field of the last model on the path, read down the rest."""
    node: Any = state
    owner, depth = state, 0  # the last model on the path and the index of its field
    for i, key in enumerate(path):
        if isinstance(node, BaseModel):
            if key not in type(node).model_fields:
                return _MISSING
            owner, depth = node, i
            node = getattr(node, key)
        elif isinstance(node, dict):
            found = node.get(key, _MISSING)
            if found is _MISSING and any(type(k) is not str for k in node):
                raise _Unpatchable(path)  # keys the dump spells otherwise (ints): dump whole
            node = found
        else:
            node = _MISSING
        if node is _MISSING:
            return _MISSING
    if isinstance(node, BaseModel):
        return node.model_dump(mode="json")
    field = path[depth]
    return _read_path(owner.model_dump(mode="json", include={field})[field], path[depth + 1 :])


def _read_path(node: Any, keys: DumpPath) -> Any:
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            raise _Unpatchable(keys)
        node = node[key]
    return node


def _set_path(node: dict[str, Any], path: DumpPath, value: Any) -> dict[str, Any]:
    """A copy of the dict `node` with `value` at `path` (removed when `_MISSING`); containers
    off the path are shared, not copied. `node` itself when there is nothing to do."""
    head, rest = path[0], path[1:]
    if rest:
        child = node.get(head, _MISSING)
        if not isinstance(child, dict):
            if value is _MISSING and child is _MISSING:
                return node
            raise _Unpatchable(path)
        value = _set_path(child, rest, value)
        if value is child:
            return node
    elif value is _MISSING and head not in node:
        return node
    copied = dict(node)
    if value is _MISSING:
        del copied[head]
    else:
        copied[head] = value
    return copied


# ---------------------------------------------------------------------------------------------
# A write with nothing held: the touched entries only


class _Same:
    """Stands, in both outlines of one call, for an entry the call did not touch: equal to
    itself, so the diff skips it as it skips an unchanged entry of a whole dump."""

    def __repr__(self) -> str:
        return "<untouched>"


_SAME = _Same()


def outline(state: BaseModel, paths: Iterable[DumpPath]) -> dict[str, Any] | None:
    """The dump of `state` with every entry off `paths` replaced by one placeholder: each
    touched top-level field dumped whole (a path of one key), each touched entry of a dict
    field of models dumped (a path of two), every other field and entry `_SAME`. Keys and
    their order are the whole dump's, so `state_diff` of the outlines before and after a call
    is the diff of the whole dumps, for a fraction of a whole dump. None for other paths."""
    model = type(state)
    if model.model_computed_fields:
        return None
    out: dict[str, Any] = dict.fromkeys(model.model_fields, _SAME)
    whole = {path[0] for path in paths if len(path) == 1}
    for name in whole:
        if name not in out:
            return None
        out[name] = state.model_dump(mode="json", include={name})[name]
    for path in paths:
        if len(path) == 1 or path[0] in whole:
            continue
        if len(path) != 2 or path[0] not in out or not _entry_into(state, path, out):
            return None
    return out


def _entry_into(state: BaseModel, path: DumpPath, out: dict[str, Any]) -> bool:
    """Put the dump of the entry `path` names (or its absence) into the outline `out`."""
    name, key = path
    container = getattr(state, name)
    if type(container) is not dict:
        return False
    entries = out[name]
    if entries is _SAME:
        if not all(type(k) is str for k in container):
            return False
        entries = out[name] = dict.fromkeys(container, _SAME)
    entry = container.get(key, _MISSING)
    if entry is _MISSING:
        entries.pop(key, None)
    elif isinstance(entry, BaseModel):
        entries[key] = entry.model_dump(mode="json")
    else:
        return False
    return True


def restore_whole(state: BaseModel, dumped: dict[str, Any]) -> None:
    """Undo a partial mutation after a failed call: a failed call never changes state."""
    fresh = type(state).model_validate(dumped)
    for name in type(state).model_fields:
        setattr(state, name, getattr(fresh, name))


def restore_outline(state: BaseModel, before: dict[str, Any]) -> None:
    """Undo a failed call from the outline taken before it: each touched field or entry is
    validated back from its dump (pydantic's assignment validator, as a whole-state
    validation would build it); untouched entries keep their objects and their order."""
    validator = type(state).__pydantic_validator__
    for name, value in before.items():
        if value is _SAME:
            continue
        if isinstance(value, dict) and any(v is _SAME for v in value.values()):
            current = getattr(state, name)
            value = {k: current[k] if v is _SAME else v for k, v in value.items()}
        validator.validate_assignment(state, name, value)
