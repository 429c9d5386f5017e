"""Numbers written as the wrong type are refused (pydantic's lax mode reads `true` as 1)."""

from pathlib import Path

import pytest

from trajforge.pipelines.config import ConfigError, load_config

TOY = (Path(__file__).resolve().parents[2] / "configs" / "toy.yaml").read_text()


def load(tmp_path, text):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return load_config(path)


@pytest.mark.parametrize(
    ("old", "new", "field", "fix"),
    [
        ("num_tasks: 12", "num_tasks: true", "num_tasks", "not the boolean"),
        ("num_tasks: 12", "num_tasks: 12.0", "num_tasks", "without a decimal point"),
        ("seed: 1", "seed: false", "seed", "not the boolean"),
        ("max_in_flight: 8", "max_in_flight: 8.5", "concurrency.max_in_flight", "whole number"),
        ("num_shards: 1", "num_shards: 1.0", "output.num_shards", "whole number"),
        ("train: 0.75", "train: true", "output.splits.train", "not the boolean"),
        (
            "{kind: scripted, responder: blueprint}",
            "{kind: openai, model: m, base_url: 'http://h/v1', timeout_s: true}",
            "roles.agent.timeout_s",
            "not the boolean",
        ),
    ],
)
def test_wrong_number_types_are_refused_naming_the_field(tmp_path, old, new, field, fix):
    assert old in TOY
    with pytest.raises(ConfigError) as err:
        load(tmp_path, TOY.replace(old, new))
    assert f"{field}: " in str(err.value) and fix in str(err.value)


def test_an_int_for_a_float_is_fine(tmp_path):
    text = TOY.replace("train: 0.75, validation: 0.0, golden: 0.25", "train: 1, golden: 0")
    assert load(tmp_path, text).output.splits.train == 1.0
