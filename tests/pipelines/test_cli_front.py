"""The CLI's front door (issue 29): `--version`, help that says what the tool does without
importing Beam, and every read-back command resolving a run's domains from the run itself
(a plug-in domain's import path lives in the run's config.json; records carry its short name).
docs/guides/domains.md shows the plug-in build and verify commands these tests run."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from trajforge.pipelines.cli import main

ROOT = Path(__file__).resolve().parents[2]

PLUGIN_RUN = """
name: outlet-front
domain: 'tests.plugins.domains:OutletDomain'
num_tasks: 6
seed: 3
mode: blueprint
roles:
  agent: {kind: scripted, responder: blueprint}
  judge: {kind: scripted, responder: judge_approves}
concurrency: {max_in_flight: 4}
failure: {min_kept: 0}
quality:
  dedup: {semantic: {enabled: false}}
output:
  num_shards: 1
  splits: {train: 0.5, validation: 0.0, golden: 0.5}
"""

TOY_RUN = """
name: toy-front
domain: toy
num_tasks: 6
seed: 1
mode: blueprint
roles:
  agent: {kind: scripted, responder: blueprint}
quality:
  dedup: {semantic: {enabled: false}}
failure: {min_kept: 0}
output:
  num_shards: 1
  splits: {train: 0.5, validation: 0.0, golden: 0.5}
"""


def _build(base: Path, config: str) -> Path:
    (base / "build.yaml").write_text(config)
    out = base / "run"
    argv = ["build", "--config", str(base / "build.yaml"), "--output", str(out), "--no-progress"]
    assert main(argv) == 0
    return out


@pytest.fixture(scope="module")
def plugin_run(tmp_path_factory) -> Path:
    return _build(tmp_path_factory.mktemp("plugin"), PLUGIN_RUN)


def test_version_prints_the_installed_version(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"trajforge {version('trajforge')}"


def test_help_says_what_the_tool_does_and_imports_no_beam():
    code = (
        "import sys\n"
        "from trajforge.pipelines.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print('BEAM' if 'apache_beam' in sys.modules else 'NO-BEAM')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    assert out.splitlines()[-1] == "NO-BEAM"
    assert "later" not in out
    for word in ("Build verified training data", "verify", "publish", "evaluate", "--version"):
        assert word in out


def test_verify_without_config_resolves_a_plugin_domain_from_the_run(plugin_run, tmp_path):
    verdicts = tmp_path / "v.jsonl"
    assert main(["verify", "--input", str(plugin_run), "--output", str(verdicts)]) == 0
    lines = verdicts.read_text().splitlines()
    assert lines and all(json.loads(line)["kept"] for line in lines)


def test_verify_of_a_file_naming_an_unknown_domain_is_one_clear_error(plugin_run, tmp_path, capsys):
    from trajforge.pipelines.finished.verify import read_trajectories

    source = tmp_path / "t.jsonl"
    source.write_text(next(read_trajectories(str(plugin_run))).to_json() + "\n")
    code = main(["verify", "--input", str(source), "--output", str(tmp_path / "v.jsonl")])
    assert code == 2
    err = capsys.readouterr().err
    assert "'outlet'" in err and "--config" in err and "Traceback" not in err


def test_a_runs_config_json_validates_again(plugin_run):
    """Commands reading a run back (calibrate) re-validate its config.json, which holds every
    field with its default (a default `rollout.noise` next to `agent: llm` once failed)."""
    from trajforge.pipelines.config import BuildConfig

    config = BuildConfig.model_validate(json.loads((plugin_run / "config.json").read_text()))
    assert config.rollout.agent == "llm"


def test_calibrate_resolves_a_plugin_domain_from_the_run(plugin_run, capsys):
    assert main(["calibrate", "--run", str(plugin_run), "--limit", "2"]) == 0
    report = json.loads((plugin_run / "calibration.json").read_text())
    assert report["n"] + report["skipped"] + report["ungradeable"] == 2


def test_show_report_and_publish_dry_run_read_a_plugin_run(plugin_run, capsys):
    assert main(["show", str(plugin_run), "--n", "1"]) == 0
    assert main(["report", str(plugin_run)]) == 0
    assert main(["publish", str(plugin_run), "--repo-id", "org/name", "--dry-run"]) == 0
    assert "Would upload" in capsys.readouterr().out


def test_eval_takes_the_domain_of_the_run_not_the_default(tmp_path, capsys):
    run = _build(tmp_path, TOY_RUN)  # --domain defaults to retail; the run is toy
    code = main(["eval", "--model", "oracle", "--tasks", str(run), "--k", "1"])
    assert code == 0, capsys.readouterr().err
    assert "oracle" in capsys.readouterr().out


def test_eval_of_a_plugin_run_uses_the_plugin_domain(plugin_run, monkeypatch, capsys):
    from trajforge.finetune import evaluate

    seen = []
    real = evaluate.read_split
    monkeypatch.setattr(evaluate, "read_split", lambda *a: seen.append(real(*a)) or seen[-1])
    assert main(["eval", "--model", "oracle", "--tasks", str(plugin_run), "--k", "1"]) == 0
    assert [run.domain.name for run in seen] == ["outlet"]


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory) -> Path:
    """A toy run with train and golden tasks (retail is every task command's default domain)."""
    return _build(tmp_path_factory.mktemp("toy"), TOY_RUN.replace("num_tasks: 6", "num_tasks: 12"))


def test_opd_trains_on_exactly_its_split_in_the_runs_domain(toy_run, tmp_path):
    """`finetune opd --tasks RUN --split train` used to play the run's golden tasks (the
    reader took golden whenever a build had one) in the default domain (retail)."""
    from trajforge.finetune.evaluate import split_tasks
    from trajforge.finetune.opd.config import OPDConfig
    from trajforge.finetune.opd.train import training_tasks

    model = tmp_path / "model"
    model.mkdir()
    cfg = OPDConfig(student=str(model), teacher=str(model), output=str(tmp_path / "o"),
                    tasks=str(toy_run), split="train")  # fmt: skip
    train = training_tasks(cfg)
    assert train.domain.name == "toy"
    trained = {t.id for t in train.tasks}
    golden = {t.id for t in split_tasks(toy_run, "golden")}
    assert trained == {t.id for t in split_tasks(toy_run, "train")}
    assert trained and golden and not trained & golden


def test_rl_environments_serve_a_runs_tasks_in_the_runs_domain(toy_run):
    from trajforge.finetune.env_tasks import EnvTaskSource, load_env_tasks

    loaded = load_env_tasks(EnvTaskSource(tasks=str(toy_run), split="train"))
    assert loaded.domain.name == "toy" and loaded.tasks
    assert {t.domain for t in loaded.tasks} == {"toy"}


@pytest.fixture
def parquet_reads(monkeypatch) -> list[str]:
    """The Parquet files read whole (`pq.read_table`) from here on, in order."""
    import pyarrow.parquet as pq

    reads: list[str] = []
    real = pq.read_table
    monkeypatch.setattr(
        pq, "read_table", lambda path, **kw: reads.append(str(path)) or real(path, **kw)
    )
    return reads


def test_a_runs_split_is_read_once_for_its_domain_and_its_tasks(
    toy_run, tmp_path, parquet_reads, capsys, monkeypatch
):
    """Eval, OPD and the RL environments learn the domain from the tasks they then use: each
    of the split's files is read once (each caller read the split twice before). Eval's
    baseline (the build's measured difficulty, `load_task_difficulty`) is a read of its own,
    left out here."""
    from trajforge.finetune import evaluate
    from trajforge.finetune.env_tasks import EnvTaskSource, load_env_tasks
    from trajforge.finetune.opd.config import OPDConfig
    from trajforge.finetune.opd.train import training_tasks

    train_files = sorted(str(p) for p in (toy_run / "data").glob("train-*.parquet"))
    golden_files = sorted(str(p) for p in (toy_run / "data").glob("golden-*.parquet"))
    monkeypatch.setattr(evaluate, "load_task_difficulty", lambda *a: {})
    assert main(["eval", "--model", "oracle", "--tasks", str(toy_run), "--k", "1"]) == 0, (
        capsys.readouterr().err
    )
    assert sorted(parquet_reads) == golden_files
    parquet_reads.clear()
    load_env_tasks(EnvTaskSource(tasks=str(toy_run), split="train"))
    assert sorted(parquet_reads) == train_files
    parquet_reads.clear()
    model = tmp_path / "model"
    model.mkdir()
    cfg = OPDConfig(student=str(model), teacher=str(model), output=str(tmp_path / "o"),
                    tasks=str(toy_run), split="train")  # fmt: skip
    training_tasks(cfg)
    assert sorted(parquet_reads) == train_files
