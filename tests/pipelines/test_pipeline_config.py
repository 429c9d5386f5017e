import textwrap

import pytest

from trajforge.pipelines import ownership
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
        (GOOD.replace("domain: retail\n", ""), "set exactly one of `domain.*neither"),
        (GOOD + "domains: {retail: 1}\n", "set exactly one of `domain.*both"),
        (GOOD.replace("domain: retail", "domains: {retail: 0.7, toy: 0}"), "domains.toy: weight"),
        (GOOD.replace("domain: retail", "domains: {retail: 1, air: 1}"), "unknown domain 'air'"),
        (GOOD.replace("domain: retail", "domains: {}"), "domains is empty"),
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


def test_mixed_domains_draw_each_index_by_weight(tmp_path):
    cfg = load_config(
        write(tmp_path, GOOD.replace("domain: retail", "domains: {retail: 3, toy: 1}"))
    )
    assert cfg.domain_names == ("retail", "toy")
    drawn = [cfg.domain_of(i) for i in range(2000)]
    assert drawn == [cfg.domain_of(i) for i in range(2000)]  # deterministic per index
    assert 0.70 < drawn.count("retail") / len(drawn) < 0.80
    single = load_config(write(tmp_path, GOOD))
    assert single.domain_names == ("retail",) and {single.domain_of(i) for i in range(50)} == {
        "retail"
    }


def test_cli_exits_nonzero_with_message_on_bad_config(tmp_path, capsys):
    path = write(tmp_path, GOOD + "colour: blue\n")
    code = main(["build", "--config", str(path), "--output", str(tmp_path / "out")])
    assert code == 2
    assert "colour: unknown field" in capsys.readouterr().err


def test_cli_refuses_nonempty_output_without_resume_or_overwrite(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "something.txt").write_text("x")
    ownership.start(str(out), "h")  # a previous run
    code = main(["build", "--config", str(write(tmp_path, GOOD)), "--output", str(out)])
    assert code == 2
    err = capsys.readouterr().err
    assert "--resume" in err and "--overwrite" in err
    assert (out / "something.txt").exists()  # nothing deleted


OPENAI = GOOD.replace(
    "{kind: scripted, responder: echo}", "{kind: openai, model: m, base_url: URL}"
)


@pytest.mark.parametrize(
    "text, expected",
    [
        (GOOD + "num_tasks: 5\n", "duplicate key 'num_tasks' at line"),
        (
            GOOD + "quality: {judge: {settings: {thresholds: {task_success: 5.0}}}}\n",
            "thresholds.*0..1 axis scale",
        ),
        (OPENAI.replace("URL", "'htp:/host::abc'"), "base_url.*http:// or https://"),
        (OPENAI.replace("URL", "localhost:8000/v1"), "base_url.*http:// or https://"),
        (OPENAI.replace("URL", "'http://host:abc/v1'"), "base_url.*malformed"),
        (OPENAI.replace("URL", "'http:///v1'"), "base_url.*no valid host"),
        (GOOD + "failure: {max_dead_letter_fraction: 2}\n", "max_dead_letter_fraction"),
        (GOOD + "limits: {max_content_chars: 5}\n", "max_content_chars"),
    ],
)
def test_configs_that_must_be_refused(tmp_path, text, expected):
    with pytest.raises(ConfigError, match=expected):
        load_config(write(tmp_path, text))


def test_good_base_url_is_accepted(tmp_path):
    cfg = load_config(write(tmp_path, OPENAI.replace("URL", "http://127.0.0.1:8000/v1")))
    assert cfg.roles.agent.base_url == "http://127.0.0.1:8000/v1"


@pytest.mark.parametrize("kind", ["directory", "latin1"])
def test_unreadable_config_paths_get_one_line(tmp_path, capsys, kind):
    if kind == "directory":
        path = tmp_path / "cfgdir"
        path.mkdir()
        expected = "is a directory"
    else:
        path = tmp_path / "c.yaml"
        path.write_bytes(GOOD.replace("retail", "retail # caf\xe9").encode("latin-1"))
        expected = "not UTF-8"
    code = main(["build", "--config", str(path), "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and expected in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
