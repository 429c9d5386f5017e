"""k attempts per task: pass^k on a fixed table, the per-task grouping (pure and as a Beam
TestPipeline), the attempts accounting, the config guard, and small end-to-end rollout builds
with K=2 (the oracle agent keeps rows; an always-wrong agent records its tasks' zero pass rate).
"""

import json

import apache_beam as beam
import pyarrow.parquet as pq
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to

from trajforge.generators.agent import OracleAgent
from trajforge.generators.domains import get_domain
from trajforge.generators.llm.concurrency import run_all
from trajforge.generators.personas import sample_persona
from trajforge.generators.rollout import run_rollout
from trajforge.generators.task_verification import verify_task
from trajforge.generators.user import ScriptedUser
from trajforge.pipelines.attempts import (
    TaskDifficulty,
    TaskDifficultyRow,
    accounting,
    difficulty_summary,
    group_attempts,
)
from trajforge.pipelines.cli import main
from trajforge.pipelines.config import BuildConfig
from trajforge.pipelines.manifest import Outputs
from trajforge.pipelines.split_figures import split_difficulty
from trajforge.pipelines.transforms.attempts import DIFFICULTY, GroupAttempts
from trajforge.pipelines.transforms.routing import DEAD, KEPT, REJECTED
from trajforge.schemas import Difficulty, Message, Provenance, Trajectory

#: (n attempts, c successes) -> pass^1..pass^n, by hand: C(c, k) / C(n, k).
PASS_HAT_TABLE = [
    ((1, 1), (1.0,)),
    ((2, 1), (0.5, 0.0)),
    ((3, 2), (2 / 3, 1 / 3, 0.0)),
    ((4, 2), (0.5, 1 / 6, 0.0, 0.0)),
    ((4, 3), (0.75, 0.5, 0.25, 0.0)),
    ((5, 5), (1.0, 1.0, 1.0, 1.0, 1.0)),
    ((3, 0), (0.0, 0.0, 0.0)),
]


@pytest.mark.parametrize(("nc", "expected"), PASS_HAT_TABLE)
def test_difficulty_pass_hat_k_matches_hand_computed_table(nc, expected):
    n, c = nc
    d = Difficulty.of(n, c)
    assert d.pass_rate == pytest.approx(c / n)
    assert d.pass_hat_k == pytest.approx(expected)


def test_difficulty_refuses_more_successes_than_attempts():
    with pytest.raises(ValueError, match="0 <= c <= n"):
        Difficulty.of(2, 3)


@pytest.fixture(scope="module")
def tasks():
    domain = get_domain("retail")
    return [verify_task(domain, domain.synthesize_task(sample_persona(i), i)) for i in range(3)]


def _attempt(task, attempt: int, variant: str = "") -> Trajectory:
    """An oracle rollout recorded as attempt `attempt`; `variant` changes its last assistant
    text, making its messages distinct from the other attempts'."""
    domain = get_domain("retail")
    prov = Provenance(models={"agent": "oracle"}, seeds={"attempt": attempt})
    (t,) = run_all(
        [run_rollout(task, domain, OracleAgent(task), ScriptedUser(task), seed=attempt, provenance=prov)], 1
    )  # fmt: skip
    if not variant:
        return t
    last = max(i for i, m in enumerate(t.messages) if m.role == "assistant" and m.content)
    messages = list(t.messages)
    messages[last] = Message(role="assistant", content=f"{messages[last].content} {variant}")
    return t.model_copy(update={"messages": tuple(messages), "id": f"{t.id}-{variant}"})


def test_group_keeps_distinct_passing_attempts_and_labels_difficulty(tasks):
    task = tasks[0]
    a0, a1, a2 = _attempt(task, 0), _attempt(task, 1), _attempt(task, 2, "Bye.")
    group = group_attempts(task, [a2, a1, a0], k=4)  # any order in, attempt order out
    assert [t.id for t in group.kept] == [a0.id, a2.id]
    assert all(t.difficulty == Difficulty.of(4, 3) for t in group.kept)
    (dup,) = group.rejections
    assert (dup.stage, dup.reason, dup.record_id) == ("attempts", "duplicate_attempt", a1.id)
    assert "attempt 1 repeats the messages of attempt 0" in dup.detail
    assert group.task_difficulty.difficulty.pass_rate == 0.75


def test_group_rejects_a_task_without_a_pass_and_records_its_pass_rate(tasks):
    group = group_attempts(tasks[1], [], k=3)
    assert group.kept == ()
    (rejection,) = group.rejections
    assert (rejection.record_id, rejection.reason) == (tasks[1].id, "no_passing_attempt")
    payload = TaskDifficulty.from_json(rejection.payload_json)
    assert payload.difficulty == Difficulty.of(3, 0) and payload.task == tasks[1]


def test_a_task_synthesised_by_two_seeds_counts_both_copies_attempts(tasks):
    a0 = _attempt(tasks[0], 0)
    group = group_attempts(tasks[0], [a0, a0], k=2, copies=2)
    assert group.task_difficulty.difficulty == Difficulty.of(4, 2)
    assert [r.reason for r in group.rejections] == ["duplicate_attempt"]


def test_group_attempts_dead_letters_attempts_of_an_unknown_task(tasks, tmp_path):
    """A passing attempt without its task is a bug upstream: it is dead-lettered, not lost."""
    stray = _attempt(tasks[2], 0)
    with BeamTestPipeline(options=PipelineOptions(["--runner=FnApiRunner"])) as p:
        out = {
            "task": p | "Tasks" >> beam.Create(tasks[:1]),
            "passed": p | "Passed" >> beam.Create([stray]),
        } | GroupAttempts(2, str(tmp_path))
        assert_that(
            out[DEAD] | "D" >> beam.Map(lambda d: (d.record_id, d.stage)),
            equal_to([(stray.id, "attempts")]),
            label="dead",
        )
        assert_that(
            out[REJECTED] | "R" >> beam.Map(lambda r: (r.record_id, r.reason)),
            equal_to([(tasks[0].id, "no_passing_attempt")]),
            label="rejected",
        )


def test_group_attempts_transform(tasks, tmp_path):
    """Task 0: 3 passing attempts (one a repeat) of K=3; task 1: one; task 2: none."""
    passed = [_attempt(tasks[0], 0), _attempt(tasks[0], 1), _attempt(tasks[0], 2, "Bye.")]
    passed.append(_attempt(tasks[1], 2))
    with BeamTestPipeline(options=PipelineOptions(["--runner=FnApiRunner"])) as p:
        out = {
            "task": p | "Tasks" >> beam.Create(tasks),
            "passed": p | "Passed" >> beam.Create(passed),
        } | GroupAttempts(3, str(tmp_path))
        assert_that(
            out[KEPT] | "K" >> beam.Map(lambda t: (t.id, t.difficulty.successes)),
            equal_to([(passed[0].id, 3), (passed[2].id, 3), (passed[3].id, 1)]),
            label="kept",
        )
        assert_that(
            out[REJECTED] | "R" >> beam.Map(lambda r: (r.record_id, r.reason)),
            equal_to([(passed[1].id, "duplicate_attempt"), (tasks[2].id, "no_passing_attempt")]),
            label="rejected",
        )
        assert_that(out[DEAD], equal_to([]), label="dead")
        assert_that(
            out[DIFFICULTY] | "D" >> beam.Map(lambda d: (d.id, d.difficulty.pass_rate)),
            equal_to([(tasks[0].id, 1.0), (tasks[1].id, 1 / 3), (tasks[2].id, 0.0)]),
            label="difficulty",
        )


def test_difficulty_summary_and_split_means(tasks):
    labelled = [
        TaskDifficulty(id=t.id, task=t, difficulty=Difficulty.of(2, c))
        for t, c in zip(tasks, (2, 1, 0), strict=True)
    ]
    summary = difficulty_summary(labelled, 2)
    assert summary["mean_pass_rate"] == 0.5
    assert summary["pass_hat_k"] == {"1": 0.5, "2": pytest.approx(1 / 3, abs=1e-4)}
    assert summary["pass_rate_histogram"] == {"0": 1, "1": 1, "2": 1}
    rows = [
        {"split": "train", "task_id": "a", "pass_rate": 1.0},
        {"split": "train", "task_id": "a", "pass_rate": 1.0},  # two rows of one task
        {"split": "train", "task_id": "b", "pass_rate": 0.5},
        {"split": "golden", "task_id": "c", "pass_rate": 0.25},
        {"split": "golden", "task_id": "d", "pass_rate": None},  # unmeasured
    ]
    assert split_difficulty(rows) == {
        "golden": {"tasks": 1, "mean_pass_rate": 0.25},
        "train": {"tasks": 2, "mean_pass_rate": 0.75},
    }


def test_accounting_counts_attempts_and_refused_tasks_k_times():
    outputs = dict(
        splits={},
        kept=3,
        rejected=2 + 4 + 1 + 1,  # 2 tasks refused early, 4 attempts, 1 repeat, 1 no-pass task
        dead_lettered=1 + 1,  # 1 task at synthesis, 1 attempt
        rejected_by_stage={
            "verify_task": {"already_solved": 2},
            "outcome": {"state_mismatch": 4},
            "attempts": {"duplicate_attempt": 1, "no_passing_attempt": 1},
        },
        dead_letter_by_stage={"synthesize": 1, "rollout": 1},
    )
    acc = accounting(num_tasks=6, k=3, outputs=Outputs(**outputs))
    # 18 attempts = 3 kept + (4 + 1 + 2*3) rejected + (1 + 1*3) dead
    assert (acc.inputs, acc.rejected, acc.dead_lettered) == (18, 11, 4)
    assert acc.holds and acc.unit == "attempt"
    assert acc.tasks_refused_before_attempts == 3
    assert acc.tasks_without_passing_attempt == 1
    lost = accounting(num_tasks=7, k=3, outputs=Outputs(**outputs))
    assert not lost.holds
    plain = Outputs(
        **outputs
        | {"kept": 3, "rejected": 2, "dead_lettered": 1}
        | {"rejected_by_stage": {"outcome": {"state_mismatch": 2}}}
        | {"dead_letter_by_stage": {"rollout": 1}}
    )
    assert accounting(6, 1, plain).holds
    assert accounting(6, 1, plain).unit == "task"


BASE = {
    "domain": "retail",
    "num_tasks": 2,
    "roles": {"agent": {"kind": "scripted", "responder": "echo"}},
}


def test_attempts_config_is_validated_and_refused_in_blueprint_mode():
    assert BuildConfig.model_validate(BASE).rollout.attempts == 1
    with pytest.raises(ValueError, match="needs `mode: rollout`"):
        BuildConfig.model_validate({**BASE, "mode": "blueprint", "rollout": {"attempts": 2}})
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        BuildConfig.model_validate({**BASE, "mode": "rollout", "rollout": {"attempts": 0}})


K2_BUILD = """
name: k2
domain: retail
num_tasks: {num_tasks}
seed: 3
mode: rollout
roles:
  agent: {{kind: scripted, responder: {responder}}}
rollout: {{agent: {agent}, user: scripted, attempts: 2}}
quality:
  shortcut: {{no_tool_baseline: false}}
  filters: [{{name: agent_tool_calls}}, {{name: loops}}, {{name: policy}}]
  dedup: {{semantic: {{enabled: false}}}}
output:
  num_shards: 1
  splits: {{train: 0.5, validation: 0.0, golden: 0.5}}
"""


def _lines(folder):
    return [line for f in sorted(folder.glob("*.jsonl")) for line in f.read_text().splitlines()]


def _build(tmp_path, expected_exit: int, **fields) -> tuple:
    (tmp_path / "k2.yaml").write_text(K2_BUILD.format(**fields))
    out = tmp_path / "run"
    argv = ["build", "--config", str(tmp_path / "k2.yaml"), "--output", str(out), "--no-progress"]
    assert main(argv) == expected_exit
    rejected = [json.loads(line) for line in _lines(out / "rejected")]
    return out, json.loads((out / "manifest.json").read_text()), rejected


def test_k2_oracle_rollout_build_end_to_end(tmp_path):
    """The oracle passes both attempts of every task with the same messages: one row per task
    with pass_rate 1.0 (golden split included), one duplicate per task, 2N attempts accounted."""
    out, manifest, rejected = _build(tmp_path, 0, num_tasks=6, agent="oracle", responder="echo")
    acc = manifest["accounting"]
    assert acc["unit"] == "attempt" and acc["inputs"] == 12 and acc["holds"]
    assert acc["kept"] + acc["rejected"] + acc["dead_lettered"] == 12
    tasks = 6 - acc["tasks_refused_before_attempts"]
    assert acc["kept"] == tasks and {r["reason"] for r in rejected} == {"duplicate_attempt"}
    rows = [
        r for f in sorted((out / "data").glob("*.parquet")) for r in pq.read_table(f).to_pylist()
    ]
    assert {r["split"] for r in rows} == {"train", "golden"}
    for r in rows:
        assert (r["attempts"], r["successes"], r["pass_rate"], r["pass_hat_k"]) == (
            2,
            2,
            1.0,
            [1.0, 1.0],
        )
        assert json.loads(r["trajectory_json"])["provenance"]["seeds"]["attempt"] == 0
    difficulty = manifest["difficulty"]
    assert difficulty["tasks"] == tasks and difficulty["mean_pass_rate"] == 1.0
    assert difficulty["by_split"]["golden"]["mean_pass_rate"] == 1.0
    per_task = [TaskDifficultyRow.from_json(line) for line in _lines(out / "difficulty")]
    assert sorted(t.task_id for t in per_task) == sorted({r["task_id"] for r in rows})
    assert all(t.difficulty == Difficulty.of(2, 2) for t in per_task)
    view = [r for f in (out / "views" / "messages").glob("*.parquet") for r in pq.read_table(f).to_pylist()]  # fmt: skip
    assert len(view) == len(rows) and all(v["pass_rate"] == 1.0 for v in view)
    card = (out / "README.md").read_text()
    assert "pass_rate" in card and "## Difficulty" in card
    assert "Difficulty (k attempts per task)" in (out / "report.html").read_text()
    # eval on the golden split: each task once, next to the build agent's baseline
    report_path = tmp_path / "eval.json"
    assert main(["eval", "--model", "oracle", "--tasks", str(out), "--json", str(report_path)]) == 0
    (report,) = json.loads(report_path.read_text())
    golden_tasks = {r["task_id"] for r in rows if r["split"] == "golden"}
    assert sorted(t["task_id"] for t in report["tasks"]) == sorted(golden_tasks)
    assert report["baseline"]["tasks"] == len(golden_tasks)
    assert report["baseline"]["pass_hat"] == {"1": 1.0, "2": 1.0}


@pytest.mark.slow  # a second whole build; the oracle one above covers the fast tier
def test_k2_always_wrong_agent_records_zero_pass_rates(tmp_path):
    """Every attempt fails the outcome: each task is refused once more, as a task, with its
    pass rate (0 of 2) in the payload; the attempts identity still holds."""
    out, manifest, rejected = _build(
        tmp_path, 1, num_tasks=2, agent="llm", responder="rollout_dry_run"
    )
    acc = manifest["accounting"]
    assert acc["holds"] and acc["inputs"] == 4 and acc["kept"] == 0
    no_pass = [r for r in rejected if r["reason"] == "no_passing_attempt"]
    assert (
        len(no_pass)
        == 2 - acc["tasks_refused_before_attempts"]
        == acc["tasks_without_passing_attempt"]
    )
    for r in no_pass:
        payload = TaskDifficulty.from_json(r["payload_json"])
        assert payload.difficulty == Difficulty.of(2, 0) and payload.id == r["record_id"]
    assert manifest["difficulty"]["pass_rate_histogram"]["0"] == len(no_pass)
    per_task = [TaskDifficultyRow.from_json(line) for line in _lines(out / "difficulty")]
    assert sorted(t.task_id for t in per_task) == sorted(r["record_id"] for r in no_pass)
