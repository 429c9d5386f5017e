"""Shared base for every record: frozen, strict, canonical JSON and content-hash ids.

Records cross process boundaries (Beam pickles them, Parquet stores them), so they must be
immutable, reject unknown fields, and serialise the same way everywhere. Ids are the sha256 of
the canonical JSON of the fields that define a record, so the same content always gets the
same id and reruns are deterministic.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from typing import Any, ClassVar

try:  # a declared dependency; the stdlib path below is the reference and the fallback
    import orjson
except ImportError:  # pragma: no cover - exercised only where orjson is missing
    orjson = None  # type: ignore[assignment]

import pydantic_core
from pydantic import BaseModel, ConfigDict

SCHEMA_VERSION = 1


def canonical_json(value: Any) -> str:
    """Serialise to JSON with sorted keys and no whitespace: one text per value."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    fast = _fast_bytes(value)
    return fast.decode("utf-8") if fast is not None else _reference_json(value)


def canonical_bytes(value: Any) -> bytes:
    """`canonical_json` as UTF-8 bytes (what content hashes read)."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    fast = _fast_bytes(value)
    return fast if fast is not None else _reference_json(value).encode("utf-8")


def _reference_json(value: Any) -> str:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_default
    )


#: orjson options that make it raise (so the reference encoder decides) on values it would
#: write differently from the stdlib or that the stdlib refuses: str/int/float/dict/list
#: subclasses (enums excepted: orjson writes their value, as the stdlib does for str and int
#: enums), datetimes and dataclasses. Non-str keys, ints beyond 64 bits and lone surrogates
#: raise anyway.
_ORJSON_OPTIONS = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    if orjson is not None
    else 0
)

#: The one float spelling orjson and the stdlib disagree on, in orjson's output: |x| < 1e-4
#: (orjson `0.00001` and `1e-7`, stdlib `1e-05` and `1e-07`). Python's exponent always has two
#: digits or more, so a one-digit negative exponent ending the number is orjson's. A string
#: that happens to contain either pattern only sends the value to the reference encoder. Two
#: patterns, each with a literal prefix re can scan for (one alternation is 25x slower).
_ORJSON_FLOAT_SPELLINGS = (re.compile(rb"0\.0000"), re.compile(rb"e-[1-9](?![0-9])"))


#: Below this many bytes of JSON the node-by-node rule is the cheaper proof.
_WALK_BELOW = 2048


def _fast_bytes(value: Any) -> bytes | None:
    """Hashing a world state (tens of KB of JSON) is the hottest serialisation of a build, so plain
    JSON data goes through orjson (~5x faster than the stdlib encoder) when its bytes are
    provably the stdlib's; None sends anything else to the reference encoder, so a value
    never has two canonical texts.

    The proof runs in C, not as a Python walk over every node (~1 ms per state): orjson's
    options make it refuse the types it would write differently; its output is searched for
    the float spellings that differ; NaN and infinities (orjson writes `null`, the stdlib
    `NaN`) are looked for only when the output has a `null`, in pydantic-core's JSON, which
    spells them. `_orjson_safe` is the node-by-node statement of the same rule, which the
    tests compare this with."""
    if orjson is None or type(value) not in (dict, list):
        return None
    try:
        out = orjson.dumps(value, option=_ORJSON_OPTIONS)
    except TypeError:  # non-str keys, ints beyond 64 bits, lone surrogates, refused types
        return None
    if len(out) < _WALK_BELOW:  # ids and seeds: the walk costs less than two more C calls
        return out if _orjson_safe(value) else None
    if any(spelling.search(out) for spelling in _ORJSON_FLOAT_SPELLINGS):
        return None
    if b"null" in out and _has_nan(value):
        return None
    return out


def _has_nan(value: Any) -> bool:
    """Whether `value` holds a NaN or an infinity (or a string that spells one)."""
    spelled = pydantic_core.to_json(value, inf_nan_mode="constants", fallback=repr)
    return b"NaN" in spelled or b"Infinity" in spelled


def _orjson_safe(value: Any) -> bool:
    """The rule `_fast_bytes` proves in C, stated node by node (the tests' reference): True
    when orjson writes `value` byte for byte like the stdlib: only JSON types, and no float
    that Python spells in exponent form (|x| < 1e-4 or >= 1e16) or that is NaN/inf. Exact
    types, so a str or int subclass goes to the reference path."""
    kind = type(value)
    if kind is dict or kind is list:
        items = value.values() if kind is dict else value
        return all(_orjson_safe(item) for item in items)
    if kind is float:
        return value == 0.0 or 1e-4 <= abs(value) < 1e16
    return kind is str or kind is int or kind is bool or value is None


def _default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


#: Fresh parts with a `null` at least this many: one NaN proof over all of them, not one each.
_NAN_BATCH = 4


class CanonicalParts:
    """`canonical_bytes` of one dumped state and its later versions, reusing each entry's bytes.

    Why: a write changes one or two entries of a world, yet hashing a version wrote and proved
    all of its ~45 KB again. The stdlib reference text of a dict with str keys is `{`, then
    `"key":value` for each key in sorted order joined by commas, then `}`, so it is the join
    of its values' canonical texts. Parts (the values of the top two dict levels: fields and
    entries such as one order) are kept by identity: an incremental dump (`patched_dump`)
    shares every entry it did not re-dump, and a held part is never mutated, so the very same
    object has the same bytes. Each fresh part is proved as `_fast_bytes` proves a whole value
    (orjson's refusals, the float spellings, NaN), the NaN proof run once over all fresh parts
    that contain a `null`; a part that fails any proof gets the reference encoder's bytes.
    Anything that is not a dict with str keys goes to `canonical_bytes` whole."""

    def __init__(self, depth: int = 2) -> None:
        self.depth = depth
        self._parts: dict[int, tuple[Any, bytes]] = {}

    def bytes_of(self, value: Any) -> bytes:
        """Equal to `canonical_bytes(value)`."""
        if orjson is None or not _str_keyed(value):
            return canonical_bytes(value)
        kept: dict[int, tuple[Any, bytes]] = {}
        fresh: list[Any] = []
        nested: list[tuple[dict, list[bytes | int]]] = []
        layout = self._layout(value, self.depth, kept, fresh, nested)
        if fresh:
            for part, out in zip(fresh, _proved_bytes(fresh), strict=True):
                kept[id(part)] = (part, out)
        for container, inner in nested:  # listed after the collections inside them
            kept[id(container)] = (container, _joined(inner, kept))
        self._parts = kept  # only this version's parts stay alive
        return _joined(layout, kept)

    def _layout(
        self, value: dict, depth: int, kept: dict, fresh: list, nested: list
    ) -> list[bytes | int]:
        """The canonical text of `value` as literal bytes and part ids; parts found in the
        previous version's are kept (a whole unchanged collection, such as the products of a
        world no write touched, as one part), the others queued in `fresh`, and the
        collections to lay out in `nested`."""
        layout: list[bytes | int] = []
        held = self._parts
        for key in sorted(value):
            layout.append(_key_bytes(key))
            child = value[key]
            ident = id(child)
            layout.append(ident)
            if ident in kept:
                continue
            found = held.get(ident)
            if found is not None and found[0] is child:
                kept[ident] = found
            elif depth > 1 and child and _str_keyed(child):
                kept[ident] = (child, b"")  # its bytes once its parts are known
                nested.append((child, self._layout(child, depth - 1, kept, fresh, nested)))
            else:
                kept[ident] = (child, b"")  # its bytes once `fresh` is proved
                fresh.append(child)
        if not layout:
            return [b"{}"]
        layout[0] = b"{" + layout[0][1:]  # type: ignore[index]
        layout.append(b"}")
        return layout


def _joined(layout: list[bytes | int], kept: dict[int, tuple[Any, bytes]]) -> bytes:
    return b"".join([kept[item][1] if type(item) is int else item for item in layout])


@functools.lru_cache(maxsize=1 << 16)
def _key_bytes(key: str) -> bytes:
    """`,"key":`, the text before a value in a dict's canonical JSON (the first key's comma
    becomes the opening brace). World keys (ids) recur across every version of a world."""
    return b"," + canonical_bytes(key) + b":"


def _proved_bytes(parts: list[Any]) -> list[bytes]:
    """Each part's canonical bytes: orjson's where proved equal to the reference encoder's
    (the rule of `_fast_bytes`), each proof run once over all parts and again part by part
    only where it fails over all of them."""
    out: list[bytes] = []
    for part in parts:
        try:
            out.append(orjson.dumps(part, option=_ORJSON_OPTIONS))
        except TypeError:
            out.append(canonical_bytes(part))  # refused by orjson: decided part by part
    joined = b"".join(out)
    if any(spelling.search(joined) for spelling in _ORJSON_FLOAT_SPELLINGS):
        return [canonical_bytes(part) for part in parts]
    doubtful = [i for i, fast in enumerate(out) if b"null" in fast]
    if len(doubtful) >= _NAN_BATCH and not _has_nan([parts[i] for i in doubtful]):
        return out
    for i in doubtful:
        if _has_nan(parts[i]):
            out[i] = canonical_bytes(parts[i])
    return out


def _str_keyed(value: Any) -> bool:
    """A plain dict whose keys are all exact str (the join rule's precondition)."""
    return type(value) is dict and all(type(k) is str for k in value)


def content_hash(value: Any, length: int = 64) -> str:
    """sha256 hex of the canonical JSON of `value`, optionally truncated."""
    return hashlib.sha256(canonical_bytes(value)).hexdigest()[:length]


def derive_seed(*parts: Any) -> int:
    """A 63-bit seed from (record id, stage, attempt, ...): deterministic, independent per part."""
    return int(content_hash(list(parts), 16), 16) & ((1 << 63) - 1)


class Record(BaseModel):
    """Base of every record passed between stages."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Fields (besides `id`) excluded from the content id; subclasses extend this.
    ID_EXCLUDE: ClassVar[frozenset[str]] = frozenset()

    def to_json(self) -> str:
        return canonical_json(self)

    @classmethod
    def from_json(cls, text: str | bytes):
        return cls.model_validate_json(text)

    @classmethod
    def compute_id(cls, **fields: Any) -> str:
        """Content id of a record from its defining fields (everything not in ID_EXCLUDE)."""
        defining = {k: v for k, v in fields.items() if k != "id" and k not in cls.ID_EXCLUDE}
        return content_hash({"type": cls.__name__, **defining}, 32)

    @classmethod
    def create(cls, **fields: Any):
        """Build a record with its content id filled in."""
        obj = cls.model_validate({"id": "pending", **fields})
        dumped = obj.model_dump(mode="json")
        return obj.model_copy(update={"id": cls.compute_id(**dumped)})
