"""Shared base for every record: frozen, strict, canonical JSON and content-hash ids.

Records cross process boundaries (Beam pickles them, Parquet stores them), so they must be
immutable, reject unknown fields, and serialise the same way everywhere. Ids are the sha256 of
the canonical JSON of the fields that define a record, so the same content always gets the
same id and reruns are deterministic.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

SCHEMA_VERSION = 1


def canonical_json(value: Any) -> str:
    """Serialise to JSON with sorted keys and no whitespace: one text per value."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_default
    )


def _default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def content_hash(value: Any, length: int = 64) -> str:
    """sha256 hex of the canonical JSON of `value`, optionally truncated."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()[:length]


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
