"""Hugging Face feature schemas for the parquet shards, without importing `datasets`.

A shard's schema is what `datasets.Features.arrow_schema` gives: the Arrow types plus the
`huggingface` schema metadata (`{"info": {"features": ...}}`) from which `load_dataset`
rebuilds the features and decodes `Json` columns back to dicts. Importing `datasets` for that
cost every build ~0.35 s of CPU (with pandas, huggingface_hub, httpx); these few frozen types
write the same schema and metadata (`tests/pipelines/test_features.py` compares them with
`datasets` for every output) and only what the shards use: `Value`, `Json`, `List` and
structs as plain dicts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Any

import pyarrow as pa

#: `Value.dtype` -> Arrow type, the dtypes the shards use (names as `datasets` spells them).
_ARROW_TYPES: Mapping[str, pa.DataType] = MappingProxyType(
    {
        "string": pa.string(),
        "int64": pa.int64(),
        "float64": pa.float64(),
        "bool": pa.bool_(),
    }
)
_DTYPES = {str(t): name for name, t in _ARROW_TYPES.items()}  # "double" -> "float64", ...


@dataclass(frozen=True)
class Value:
    """A scalar column, `datasets.Value(dtype)`."""

    dtype: str

    def __post_init__(self) -> None:
        if self.dtype not in _ARROW_TYPES:
            known = ", ".join(_ARROW_TYPES)
            raise ValueError(f"Value dtype {self.dtype!r} is not one of {known}")


@dataclass(frozen=True)
class Json:
    """A JSON value stored as text in Arrow's canonical `arrow.json` extension type (what
    `datasets.Json()` is); `load_dataset` decodes it back to the value."""


@dataclass(frozen=True)
class List:
    """A variable-length list of one feature, `datasets.List(feature)`."""

    feature: Feature


Feature = Value | Json | List | Mapping[str, "Feature"]


def arrow_type(feature: Feature) -> pa.DataType:
    """The Arrow type `datasets` stores a feature as (a dict is a struct, fields in order)."""
    if isinstance(feature, Value):
        return _ARROW_TYPES[feature.dtype]
    if isinstance(feature, Json):
        return pa.json_()
    if isinstance(feature, List):
        return pa.list_(arrow_type(feature.feature))
    return pa.struct([pa.field(k, arrow_type(v)) for k, v in feature.items()])


def storage_type(feature: Feature) -> pa.DataType:
    """`arrow_type` with every `Json` as its storage (a string): the type pyarrow's row
    converter can build, cast to `arrow_type` afterwards."""
    if isinstance(feature, Value):
        return _ARROW_TYPES[feature.dtype]
    if isinstance(feature, Json):
        return pa.string()
    if isinstance(feature, List):
        return pa.list_(storage_type(feature.feature))
    return pa.struct([pa.field(k, storage_type(v)) for k, v in feature.items()])


def to_dict(feature: Feature) -> Any:
    """The feature as `datasets` serialises it into the schema metadata (same keys, order)."""
    if isinstance(feature, Value):
        return {"dtype": feature.dtype, "_type": "Value"}
    if isinstance(feature, Json):
        return {"_type": "Json"}
    if isinstance(feature, List):
        return {"feature": to_dict(feature.feature), "_type": "List"}
    return {k: to_dict(v) for k, v in feature.items()}


def has_json(feature: Feature) -> bool:
    if isinstance(feature, Json):
        return True
    if isinstance(feature, List):
        return has_json(feature.feature)
    if isinstance(feature, Mapping):
        return any(has_json(v) for v in feature.values())
    return False


def from_arrow_type(data_type: pa.DataType) -> Feature:
    """The feature `datasets.Features.from_arrow_schema` infers for a plain Arrow type."""
    if pa.types.is_list(data_type):
        return List(from_arrow_type(data_type.value_type))
    if pa.types.is_struct(data_type):
        return {f.name: from_arrow_type(f.type) for f in data_type}
    if str(data_type) not in _DTYPES:
        raise ValueError(f"no feature for Arrow type {data_type}: add it to _ARROW_TYPES")
    return Value(_DTYPES[str(data_type)])


class Features(Mapping[str, Feature]):
    """Columns in order -> feature; immutable. `arrow_schema` is the shard's schema, metadata
    included, byte-for-byte what `datasets.Features(...).arrow_schema` gives."""

    def __init__(self, columns: Mapping[str, Feature]) -> None:
        self._columns = MappingProxyType(dict(columns))

    def __getitem__(self, key: str) -> Feature:
        return self._columns[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)

    def __repr__(self) -> str:
        return f"Features({dict(self._columns)!r})"

    @classmethod
    def from_arrow_schema(cls, schema: pa.Schema) -> Features:
        return cls({f.name: from_arrow_type(f.type) for f in schema})

    def to_dict(self) -> dict[str, Any]:
        return {k: to_dict(v) for k, v in self._columns.items()}

    @cached_property
    def has_json(self) -> bool:
        return has_json(dict(self._columns))

    @cached_property
    def arrow_schema(self) -> pa.Schema:
        metadata = json.dumps({"info": {"features": self.to_dict()}})
        fields = [pa.field(k, arrow_type(v)) for k, v in self._columns.items()]
        return pa.schema(fields).with_metadata({"huggingface": metadata})

    @cached_property
    def storage_schema(self) -> pa.Schema:
        """`arrow_schema` with `Json` as plain strings (see `storage_type`)."""
        fields = [pa.field(k, storage_type(v)) for k, v in self._columns.items()]
        return pa.schema(fields).with_metadata(self.arrow_schema.metadata)
