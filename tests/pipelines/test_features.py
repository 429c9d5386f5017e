"""`pipelines/features.py` writes the schema (types and `huggingface` metadata) that
`datasets.Features` writes for every output, and `load_dataset` reads the shards back with
those features, `Json` values decoded."""

from __future__ import annotations

import datasets
import pyarrow as pa
import pytest

from trajforge.pipelines import features, shards, views

OUTPUTS = ["data", *views.VIEW_NAMES]


def as_datasets(feature):
    """The same feature spelled with `datasets`' own types (translated, not read back)."""
    if isinstance(feature, features.Value):
        return datasets.Value(feature.dtype)
    if isinstance(feature, features.Json):
        return datasets.Json()
    if isinstance(feature, features.List):
        return datasets.List(as_datasets(feature.feature))
    return {k: as_datasets(v) for k, v in feature.items()}


@pytest.mark.parametrize("output", OUTPUTS)
def test_schema_and_metadata_are_what_datasets_writes(output):
    ours = shards.features_of(output)
    theirs = datasets.Features({k: as_datasets(v) for k, v in ours.items()})
    assert ours.arrow_schema.equals(theirs.arrow_schema, check_metadata=True)
    assert ours.arrow_schema.metadata == theirs.arrow_schema.metadata  # byte for byte
    assert ours.to_dict() == theirs.to_dict()
    assert datasets.Features.from_arrow_schema(ours.arrow_schema) == theirs


def test_the_canonical_features_are_what_datasets_infers_from_the_record_schema():
    from trajforge.pipelines import io

    theirs = datasets.Features.from_arrow_schema(io.dataset_arrow_schema())
    assert shards.features_of("data").arrow_schema.equals(theirs.arrow_schema, check_metadata=True)


def test_storage_schema_is_the_schema_with_json_as_text():
    ours = shards.features_of("steps")
    storage = ours.storage_schema
    assert storage.metadata == ours.arrow_schema.metadata
    assert storage.field("arguments").type == pa.string()
    assert ours.arrow_schema.field("arguments").type == pa.json_()
    assert storage.field("state_diff").type.value_type.field("before").type == pa.string()
    assert ours.has_json and not shards.features_of("sharegpt").has_json


def test_unknown_dtypes_and_arrow_types_are_refused_with_the_fix():
    with pytest.raises(ValueError, match="'int32' is not one of string, int64, float64, bool"):
        features.Value("int32")
    with pytest.raises(ValueError, match="add it to _ARROW_TYPES"):
        features.Features.from_arrow_schema(pa.schema([("t", pa.timestamp("s"))]))


def test_features_are_immutable():
    ours = shards.features_of("messages")
    with pytest.raises(TypeError):
        ours["id"] = features.Value("string")  # type: ignore[index]


def test_load_dataset_reads_written_shards_with_the_features(tmp_path):
    """A plain string, a number-like string and nested objects come back exactly."""
    ours = shards.features_of("steps")
    arguments = [{"order_id": "43131"}, "43131", {"a": [1, 2.5, None, "é"]}]
    rows = [
        {
            "id": f"r{i}",
            "task_id": "t",
            "domain": "retail",
            "step_index": i,
            "turn": i,
            "tool_name": "f",
            "arguments": arg,
            "observation": "ok",
            "is_error": False,
            "mutating": True,
            "state_diff": [{"path": "/x", "before": None, "after": {"y": i}}],
            "is_last": i == 2,
            "outcome_passed": True,
            "state_match": True,
            "outputs_communicated": False,
            "judge_scores": {"q": 0.5},
            "pass_rate": None,
            "pass_hat_k": [],
        }
        for i, arg in enumerate(arguments)
    ]
    path = tmp_path / "train-00000-of-00001.parquet"
    shards.write_shard(str(path), rows, ours)
    loaded = datasets.load_dataset("parquet", data_files=str(path), split="train")
    assert loaded.features == datasets.Features.from_arrow_schema(ours.arrow_schema)
    assert [r["arguments"] for r in loaded] == arguments
    assert loaded[1]["state_diff"] == [{"path": "/x", "before": None, "after": {"y": 1}}]
