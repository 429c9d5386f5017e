"""WriteTextFile writes the bytes `beam.io.WriteToText(num_shards=1, shard_name_template="")`
wrote for the one-element summaries it replaced (splits.json, diversity.json, summaries)."""

from __future__ import annotations

from pathlib import Path

import apache_beam as beam
import pytest
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline

from trajforge.pipelines.transforms.text_file import WriteTextFile


@pytest.mark.parametrize("text", ['{"a": 1, "b": [1, 2]}', "", "é ünïcode\ttab", "two\nlines"])
def test_same_bytes_as_write_to_text(tmp_path: Path, text: str):
    ours, beams = tmp_path / "sub" / "ours.json", tmp_path / "beams.json"
    with BeamTestPipeline() as p:
        one = p | beam.Create([text])
        one | "Ours" >> WriteTextFile(str(ours))
        one | "Beams" >> beam.io.WriteToText(str(beams), num_shards=1, shard_name_template="")
    assert ours.read_bytes() == beams.read_bytes()


def test_no_element_writes_nothing(tmp_path: Path):
    path = tmp_path / "none.json"
    with BeamTestPipeline() as p:
        p | beam.Create([]) | WriteTextFile(str(path))
    assert not path.exists()
