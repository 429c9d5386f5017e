import textwrap

import pytest

from trajforge.pipelines.cli import main
from trajforge.pipelines.config import ConfigError, load_config

GOOD = """
domain: retail
num_tasks: 3
mode: rollout
roles:
  agent: {kind: scripted, responder: echo}
rollout: {agent: oracle, user: scripted}
"""


def write(tmp_path, text):
    path = tmp_path / "c.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_good_config_loads_with_defaults(tmp_path):
    cfg = load_config(write(tmp_path, GOOD))
    assert cfg.domain == "retail" and cfg.output.num_shards is None  # sized by bytes
    assert cfg.config_hash() == load_config(write(tmp_path, GOOD)).config_hash()


@pytest.mark.parametrize(
    "text, expected",
    [
        (GOOD + "colour: blue\n", "colour: unknown field"),
        (GOOD.replace("num_tasks: 3", "num_tasks: many"), "num_tasks"),
        (GOOD.replace("domain: retail\n", ""), "domain: required field is missing"),
        (GOOD.replace("domain: retail", "domain: airline"), "unknown domain 'airline'"),
        (GOOD.replace("responder: echo", "responder: nope"), "responder"),
        (GOOD + "output: {splits: {train: 0.5, golden: 0.1}}\n", "sum to 1.0"),
        (GOOD + "output: {splits: {train: 0.9, test: 0.1}}\n", "renamed `golden`"),
        ("- just\n- a list\n", "must be a YAML mapping"),
    ],
)
def test_bad_config_names_the_field(tmp_path, text, expected):
    with pytest.raises(ConfigError, match=expected):
        load_config(write(tmp_path, text))


def test_cli_exits_nonzero_with_message_on_bad_config(tmp_path, capsys):
    path = write(tmp_path, GOOD + "colour: blue\n")
    code = main(["build", "--config", str(path), "--output", str(tmp_path / "out")])
    assert code == 2
    assert "colour: unknown field" in capsys.readouterr().err


def test_cli_refuses_nonempty_output_without_resume_or_overwrite(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "something.txt").write_text("x")
    code = main(["build", "--config", str(write(tmp_path, GOOD)), "--output", str(out)])
    assert code == 2
    err = capsys.readouterr().err
    assert "--resume" in err and "--overwrite" in err
    assert (out / "something.txt").exists()  # nothing deleted
