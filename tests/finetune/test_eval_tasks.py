"""`trajforge eval --tasks RUN`: every task of `--split` (golden by default), `--max-tasks`
says what it leaves out, intervals in the table and the JSON."""

from __future__ import annotations

import json

import pytest

from trajforge.pipelines.cli import main


def _write_split(run_dir, split, tasks, domain, difficulty=None):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from trajforge.generators.agent import OracleAgent
    from trajforge.generators.llm.concurrency import run_all
    from trajforge.generators.rollout import run_rollout
    from trajforge.generators.user import ScriptedUser
    from trajforge.schemas import Provenance

    trajs = run_all(
        [run_rollout(t, domain, OracleAgent(t), ScriptedUser(t), seed=0, provenance=Provenance(models={}, seeds={})) for t in tasks],
        4,
    )  # fmt: skip
    if difficulty is not None:  # what a build with `rollout.attempts` > 1 measured
        trajs = [t.model_copy(update={"difficulty": difficulty}) for t in trajs]
    rows = [{"trajectory_json": t.model_dump_json()} for t in trajs]
    (run_dir / "data").mkdir(exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), run_dir / "data" / f"{split}-00000-of-00001.parquet")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A run with 11 golden tasks (more than the old silent cap of 8) and 2 test tasks."""
    from trajforge.finetune.evaluate import fresh_tasks
    from trajforge.generators.domains import get_domain

    domain = get_domain("retail")
    golden, _ = fresh_tasks(domain, "golden-fixture", 0, 12)
    test, _ = fresh_tasks(domain, "test-fixture", 0, 2)
    assert len(golden) > 8 and test
    path = tmp_path_factory.mktemp("run")
    _write_split(path, "golden", golden, domain)
    _write_split(path, "test", test, domain)
    return path, [t.id for t in golden], [t.id for t in test]


def _eval(argv, tmp_path):
    out = tmp_path / "r.json"
    assert main(["eval", "--model", "oracle", *argv, "--json", str(out)]) == 0
    return json.loads(out.read_text())[0]


def test_every_golden_task_is_evaluated_by_default(run_dir, tmp_path, capsys):
    path, golden, _ = run_dir
    report = _eval(["--tasks", str(path)], tmp_path)
    assert [t["task_id"] for t in report["tasks"]] == golden
    assert report["split"] == "golden" and report["tasks_left_out"] == 0
    assert "left out" not in capsys.readouterr().out


def test_max_tasks_caps_and_says_how_many_it_left_out(run_dir, tmp_path, capsys):
    path, golden, _ = run_dir
    report = _eval(["--tasks", str(path), "--max-tasks", "3"], tmp_path)
    assert [t["task_id"] for t in report["tasks"]] == golden[:3]
    assert report["tasks_left_out"] == len(golden) - 3
    lines = [line for line in capsys.readouterr().out.splitlines() if "left out" in line]
    assert lines == [
        f"--max-tasks 3: evaluating 3 of {len(golden)} golden tasks, {len(golden) - 3} left out"
    ]


def test_split_chooses_the_split_even_when_a_golden_one_exists(run_dir, tmp_path):
    path, _, test = run_dir
    report = _eval(["--tasks", str(path), "--split", "test"], tmp_path)
    assert [t["task_id"] for t in report["tasks"]] == test
    assert report["split"] == "test"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--split", "validation"], "--split validation: "),
        (["--num-tasks", "3"], "cap them with --max-tasks N"),
        (["--max-tasks", "0"], "max_tasks"),
    ],
)
def test_wrong_task_flags_exit_2_naming_the_fix(run_dir, argv, message, capsys):
    path, _, _ = run_dir
    assert main(["eval", "--model", "oracle", "--tasks", str(path), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    if argv[0] == "--split":
        assert "its splits: golden, test" in err


def test_source_flags_without_tasks_exit_2(capsys):
    assert main(["eval", "--model", "oracle", "--max-tasks", "3"]) == 2
    assert "max_tasks: caps the split of a run directory" in capsys.readouterr().err
    assert main(["eval", "--model", "oracle", "--split", "test"]) == 2
    assert "--split chooses a split of --tasks" in capsys.readouterr().err


def test_table_and_json_carry_95_percent_intervals(run_dir, tmp_path, capsys):
    path, _, _ = run_dir
    argv = ["--tasks", str(path), "--max-tasks", "4", "--k", "2"]
    report = _eval(argv, tmp_path)
    ci = report["overall"]["ci"]
    assert set(ci) == {"success", "pass^1", "pass^2", "pass@1", "pass@2"}
    low, high = ci["success"]
    assert high == 1.0 and 0.6 < low < 0.7  # Wilson for 8/8 attempts: [0.676, 1]
    assert ci["pass^2"] == [1.0, 1.0]  # every task passed both: the bootstrap is a point
    table = capsys.readouterr().out
    metrics = next(line for line in table.splitlines() if "pass^1" in line)
    assert metrics.split() == ["pass^1", "pass^2", "pass@2"]  # success is pass^1: not repeated
    overall = next(line for line in table.splitlines() if line.startswith("overall"))
    assert overall.split()[1:] == ["4", "1.000", "[0.68,1.00]", *["1.000", "[1.00,1.00]"] * 2]


@pytest.fixture(scope="module")
def measured_run(tmp_path_factory):
    """A run built with k = 2 attempts: its golden tasks passed both, its test tasks neither."""
    from trajforge.finetune.evaluate import fresh_tasks
    from trajforge.generators.domains import get_domain
    from trajforge.schemas import Difficulty

    domain = get_domain("retail")
    path = tmp_path_factory.mktemp("measured")
    for split, successes in (("golden", 2), ("test", 0)):
        tasks, _ = fresh_tasks(domain, f"{split}-measured", 0, 2)
        _write_split(path, split, tasks, domain, Difficulty.of(2, successes))
    return path


@pytest.mark.parametrize(("split", "pass_rate"), [("golden", 1.0), ("test", 0.0)])
def test_the_baseline_is_the_evaluated_splits_measured_difficulty(
    measured_run, split, pass_rate, tmp_path, capsys
):
    """The build agent's baseline under the table is measured on the tasks evaluated: `--split
    test` shows the test split's, never the golden split's (which the run also has)."""
    report = _eval(["--tasks", str(measured_run), "--split", split], tmp_path)
    assert report["baseline"]["tasks"] == 2
    assert report["baseline"]["pass_hat"] == {"1": pass_rate, "2": pass_rate}
    assert "build agent's baseline (2 of these tasks" in capsys.readouterr().out
