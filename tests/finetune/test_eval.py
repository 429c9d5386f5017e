"""pass@k / pass^k definitions, and `trajforge eval` with the oracle and an always-wrong agent."""

from __future__ import annotations

import json

import pytest

from trajforge.finetune.evaluate import TaskResult, build_report
from trajforge.finetune.metrics import pass_at_k, pass_hat_k, score
from trajforge.pipelines.cli import main

#: (n attempts, c successes, k) -> (pass^k, pass@k), computed by hand from the binomials.
TABLE = [
    ((4, 4, 1), (1.0, 1.0)),
    ((4, 0, 1), (0.0, 0.0)),
    ((4, 2, 1), (0.5, 0.5)),
    ((4, 2, 2), (1 / 6, 5 / 6)),  # C(2,2)/C(4,2); 1 - C(2,2)/C(4,2)
    ((4, 3, 2), (3 / 6, 1.0)),  # C(3,2)/C(4,2); 1 - C(1,2)/C(4,2) = 1 - 0
    ((5, 3, 3), (1 / 10, 1.0)),  # C(3,3)/C(5,3); C(2,3) = 0
    ((5, 1, 2), (0.0, 4 / 10)),  # C(1,2) = 0; 1 - C(4,2)/C(5,2) = 1 - 6/10
]


@pytest.mark.parametrize(("nck", "expected"), TABLE)
def test_pass_metrics_match_hand_computed_values(nck, expected):
    n, c, k = nck
    assert pass_hat_k(n, c, k) == pytest.approx(expected[0])
    assert pass_at_k(n, c, k) == pytest.approx(expected[1])


def test_scores_average_over_tasks_and_reject_k_above_n():
    s = score([(4, 2), (4, 4)], k=2)
    assert s.success == pytest.approx(0.75)
    assert s.pass_hat[2] == pytest.approx((1 / 6 + 1.0) / 2)
    assert s.pass_at[2] == pytest.approx((5 / 6 + 1.0) / 2)
    with pytest.raises(ValueError):
        pass_hat_k(2, 1, 3)


def test_report_groups_by_task_type_and_complexity():
    results = [
        TaskResult(task_id="a", task_types=("cancel_order",), complexity=1, attempts=2, successes=2, reasons=()),
        TaskResult(task_id="b", task_types=("cancel_order", "return_items"), complexity=2, attempts=2, successes=0, reasons=()),
    ]  # fmt: skip
    report = build_report("agent", 2, results)
    assert report.by_task_type["cancel_order"].pass_hat[1] == pytest.approx(0.5)
    assert report.by_task_type["return_items"].pass_hat[1] == 0.0
    assert report.by_complexity["1"].pass_hat[2] == 1.0
    assert report.overall.tasks == 2


def test_eval_oracle_scores_one_and_always_wrong_agent_zero(tmp_path, capsys):
    out = tmp_path / "eval.json"
    argv = ["eval", "--model", "oracle", "--model", "scripted:rollout_dry_run",
            "--domain", "retail", "--num-tasks", "3", "--k", "2", "--json", str(out)]  # fmt: skip
    assert main(argv) == 0
    oracle, wrong = json.loads(out.read_text())
    assert oracle["overall"]["tasks"] == wrong["overall"]["tasks"] >= 2
    assert oracle["overall"]["pass_hat"]["1"] == 1.0
    assert oracle["overall"]["pass_hat"]["2"] == 1.0
    assert wrong["overall"]["pass_hat"]["1"] == 0.0
    assert wrong["overall"]["pass_at"]["2"] == 0.0
    assert [t["task_id"] for t in oracle["tasks"]] == [t["task_id"] for t in wrong["tasks"]]
    assert "pass^1" in capsys.readouterr().out


def test_eval_on_a_run_directory_golden_split(tmp_path):
    """Held-out tasks come from a built run's test split (trajectory_json)."""
    from trajforge.finetune.evaluate import EvalConfig, held_out_tasks, split_tasks
    from trajforge.generators.domains import get_domain

    domain = get_domain("retail")
    fresh, _ = held_out_tasks(EvalConfig(num_tasks=2), domain)
    import pyarrow as pa
    import pyarrow.parquet as pq

    from trajforge.generators.agent import OracleAgent
    from trajforge.generators.llm.concurrency import run_all
    from trajforge.generators.rollout import run_rollout
    from trajforge.generators.user import ScriptedUser
    from trajforge.schemas import Provenance

    trajs = run_all(
        [run_rollout(t, domain, OracleAgent(t), ScriptedUser(t), seed=0, provenance=Provenance(models={}, seeds={})) for t in fresh],
        2,
    )  # fmt: skip
    (tmp_path / "data").mkdir()
    rows = [{"trajectory_json": t.model_dump_json()} for t in trajs]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "data" / "golden-00000-of-00001.parquet")
    assert [t.id for t in split_tasks(tmp_path, "golden")] == [t.id for t in fresh]
    out = tmp_path / "r.json"
    assert main(["eval", "--model", "oracle", "--tasks", str(tmp_path), "--json", str(out)]) == 0
    assert json.loads(out.read_text())[0]["overall"]["pass_hat"]["1"] == 1.0


def test_transcripts_hold_every_attempt_with_its_verdict_and_conversation(tmp_path):
    """`--transcripts`: one line per (agent, task, attempt), the typed failures of the failing
    agent, and a conversation a reader can follow (the oracle's ends with its tool calls made)."""
    from trajforge.finetune.evaluate import AttemptTranscript

    out = tmp_path / "attempts.jsonl"
    argv = ["eval", "--model", "oracle", "--model", "scripted:rollout_dry_run",
            "--domain", "retail", "--num-tasks", "2", "--k", "2", "--transcripts", str(out)]  # fmt: skip
    assert main(argv) == 0
    lines = [AttemptTranscript.model_validate_json(x) for x in out.read_text().splitlines()]
    by_agent = {
        a: [x for x in lines if x.agent == a] for a in ("oracle", "scripted:rollout_dry_run")
    }
    assert all(len(v) == 4 for v in by_agent.values())  # 2 tasks x k=2 each
    assert {(x.task_id, x.attempt) for x in by_agent["oracle"]} == {
        (x.task_id, x.attempt) for x in by_agent["scripted:rollout_dry_run"]
    }
    assert all(x.passed and not x.failures for x in by_agent["oracle"])
    assert all(not x.passed and x.failures for x in by_agent["scripted:rollout_dry_run"])
    oracle = by_agent["oracle"][0].trajectory
    assert oracle is not None and oracle.task.id == by_agent["oracle"][0].task_id
    assert any(m.tool_calls for m in oracle.messages if m.role == "assistant")
    assert not list(tmp_path.glob(".*.tmp"))  # written beside, renamed onto the target


def test_an_interrupted_write_leaves_the_previous_file_whole(tmp_path, monkeypatch):
    from trajforge.finetune import evaluate

    target = tmp_path / "r.json"
    target.write_text("previous")
    monkeypatch.setattr(evaluate.os, "replace", lambda *a: (_ for _ in ()).throw(OSError("disk")))
    with pytest.raises(OSError):
        evaluate.write_atomically(target, "new " * 1000)
    assert target.read_text() == "previous" and not list(tmp_path.glob(".*.tmp"))
