"""A domain and a filter from the user's own package (tests/plugins), named in the config by
dotted path, in a real scripted build; bad paths fail at config load with exit code 2."""

import json

import pytest

from trajforge.pipelines.cli import main
from trajforge.pipelines.config import ConfigError, load_config

BASE = """
name: plugins
domain: {domain}
num_tasks: 6
seed: 3
mode: blueprint
roles:
  agent: {{kind: scripted, responder: blueprint}}
  judge: {{kind: scripted, responder: judge_approves}}
concurrency: {{max_in_flight: 4}}
failure: {{min_kept: 0}}  # the plugin filter is meant to reject every record here
quality:
  dedup: {{semantic: {{enabled: false}}}}
  judge: {{enabled: {judge}, settings: {{rubric: 'tests.plugins.rubrics:RUBRIC'}}}}
  filters:
{filters}
"""

DEFAULT_LIST = """\
    - agent_tool_calls
    - narrated_actions
    - answer_before_evidence
    - hallucinated_values
    - {name: loops, max_repeats: 3}
    - user_fidelity
"""

PLUGIN_FILTER = "    - {path: 'tests.plugins.filters:AgentWordBudgetFilter', max_words: 1}\n"


def write(tmp_path, domain="retail", filters=DEFAULT_LIST, judge="false"):
    path = tmp_path / "plugins.yaml"
    path.write_text(BASE.format(domain=domain, filters=filters.rstrip("\n"), judge=judge))
    return path


def rejected_records(out):
    return [
        json.loads(line)
        for f in (out / "rejected").glob("*.jsonl")
        for line in f.read_text().splitlines()
    ]


@pytest.mark.slow  # a whole build; loading and validation of plugins stay in the fast tier
def test_plugin_domain_filter_and_rubric_in_a_real_build(tmp_path):
    cfg = write(
        tmp_path, "'tests.plugins.domains:OutletDomain'", DEFAULT_LIST + PLUGIN_FILTER, "true"
    )
    out = tmp_path / "run"
    assert main(["build", "--config", str(cfg), "--output", str(out), "--no-progress"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["accounting"]["holds"] and manifest["accounting"]["dead_lettered"] == 0

    # Per-filter counters, in configured order: each filter saw exactly what the one before
    # it kept, and the shortcut stage saw what the outcome stage kept.
    filters = manifest["filters"]
    assert [f["name"] for f in filters][-1] == "agent_word_budget"
    seen = manifest["stage_counts"]["judge.kept"]
    assert seen > 0
    for entry in filters:
        assert entry["kept"] + sum(entry["rejected"].values()) == seen, entry
        seen = entry["kept"]
    budget = filters[-1]
    assert budget["kept"] == 0 and budget["rejected"]["agent_too_verbose"] > 0
    assert not any(k.startswith("filter.") for k in manifest["stage_counts"])

    # The plugin's reason is typed, counted and recorded with the filter that emitted it.
    by_budget = [r for r in rejected_records(out) if r.get("filter") == "agent_word_budget"]
    assert len(by_budget) == budget["rejected"]["agent_too_verbose"]
    assert {r["reason"] for r in by_budget} == {"agent_too_verbose"}
    assert manifest["stage_counts"]["shortcut.rejected.agent_too_verbose"] == len(by_budget)

    # The plugin domain synthesized the tasks (its name is on every one), and the judge
    # graded with the plugin rubric's axes.
    payload = json.loads(by_budget[0]["payload_json"])
    assert payload["task"]["domain"] == "outlet"
    assert [a["axis"] for a in payload["judgements"][0]["axes"]] == ["task_success", "tone"]


@pytest.mark.parametrize(
    "domain, filters, expected",
    [
        ("'no_such_pkg.domains:D'", DEFAULT_LIST, "domain: .*cannot import module 'no_such_pkg"),
        ("'tests.plugins.domains:BrokenDomain'", DEFAULT_LIST, "domain: .*lacks policy, toolbox"),
        ("'tests.plugins.domains:Nope'", DEFAULT_LIST, "has no attribute 'Nope'"),
        (
            "'tests.plugins.domains:MistypedDomain'",
            DEFAULT_LIST,
            "domain: .*outcome_checks must be a tuple of functions.*confirm_writes must be a bool",
        ),
        ("retail", "    - {path: 'no_such_pkg.f:F'}\n", r"quality.filters.0: .*--extra_package"),
        ("retail", "    - {path: 'tests.plugins.filters:NotAFilter'}\n", "quality.filters.0"),
        ("retail", "    - loops\n    - loops\n", "listed twice"),
    ],
)
def test_bad_plugin_paths_fail_at_load_naming_the_field(tmp_path, domain, filters, expected):
    with pytest.raises(ConfigError, match=expected):
        load_config(write(tmp_path, domain, filters))


def test_bad_plugin_path_exits_2(tmp_path, capsys):
    cfg = write(tmp_path, filters="    - {path: 'no_such_pkg.f:F'}\n")
    assert main(["build", "--config", str(cfg), "--output", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "quality.filters.0" in err and "install the package" in err


def test_moved_shortcut_switches_name_the_new_field(tmp_path):
    path = tmp_path / "old.yaml"
    path.write_text(
        "domain: retail\nnum_tasks: 1\nroles: {agent: {kind: scripted, responder: echo}}\n"
        "quality: {shortcut: {loops: false, max_repeats: 4}}\n"
    )
    with pytest.raises(ConfigError, match=r"quality.shortcut: .*moved to `quality.filters`"):
        load_config(path)


def test_bad_rubric_path_names_the_judge_settings(tmp_path):
    path = write(tmp_path)
    path.write_text(path.read_text().replace("rubrics:RUBRIC", "rubrics:NOPE"))
    with pytest.raises(ConfigError, match=r"quality.judge.settings: rubric: .*'NOPE'"):
        load_config(path)
