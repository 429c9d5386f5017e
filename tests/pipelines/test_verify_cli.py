"""`trajforge verify`: the gate over a JSONL of real trajectories, one verdict per line."""

from __future__ import annotations

import asyncio
import json

from trajforge.generators.blueprint import run_blueprint
from trajforge.generators.domains import get_domain
from trajforge.generators.llm.scripted import ScriptedLLM
from trajforge.generators.personas import sample_persona
from trajforge.generators.task_verification import verify_task
from trajforge.pipelines.cli import main
from trajforge.schemas import Message, Provenance, derive_seed


def _blueprint(domain, index: int):
    persona = sample_persona(derive_seed(0, index, "persona"))
    task = verify_task(domain, domain.synthesize_task(persona, derive_seed(0, index, "task")))
    prov = Provenance(models={"agent": "none"}, seeds={})
    llm = ScriptedLLM(replies=[])
    return asyncio.run(
        run_blueprint(task, domain, llm, model="none", seed=1, provenance=prov, verbalise="none")
    )


def test_verify_writes_one_verdict_per_trajectory_with_typed_reasons(tmp_path, capsys):
    domain = get_domain("retail")
    good = _blueprint(domain, 1)
    talk = list(good.messages)
    user_turn = next(i for i, m in enumerate(talk) if m.role == "user" and i > 1)
    talk[user_turn] = Message(role="user", content="How can I help you today?")
    confused = good.model_copy(update={"messages": tuple(talk), "id": "confused"})
    source = tmp_path / "in.jsonl"
    source.write_text(good.to_json() + "\n" + confused.to_json() + "\n")
    out = tmp_path / "verdicts.jsonl"
    assert main(["verify", "--input", str(source), "--output", str(out)]) == 0
    verdicts = [json.loads(line) for line in out.read_text().splitlines()]
    assert [v["id"] for v in verdicts] == [good.id, "confused"]
    assert verdicts[0]["kept"] and verdicts[0]["reasons"] == []
    assert not verdicts[1]["kept"]
    assert {r["reason"] for r in verdicts[1]["reasons"]} >= {"role_confusion"}
    assert "kept" in capsys.readouterr().out


def test_verify_refuses_a_missing_input(tmp_path, capsys):
    code = main(["verify", "--input", str(tmp_path / "nope"), "--output", str(tmp_path / "o")])
    assert code == 2 and "does not exist" in capsys.readouterr().err


JUDGED = """
name: verify-judge
domain: retail
num_tasks: 1
roles:
  agent: {kind: scripted, responder: blueprint}
  judge: {kind: scripted, responder: RESPONDER}
quality: {judge: {enabled: true}}
cache: {enabled: false}
"""


def _verify_with_judge(tmp_path, responder: str) -> list[dict]:
    good = _blueprint(get_domain("retail"), 1)
    source = tmp_path / "in.jsonl"
    source.write_text(good.to_json() + "\n")
    config = tmp_path / "judge.yaml"
    config.write_text(JUDGED.replace("RESPONDER", responder))
    out = tmp_path / f"{responder}.jsonl"
    args = ["verify", "--input", str(source), "--output", str(out), "--config", str(config)]
    assert main(args) == 0
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_verify_runs_the_judge_when_the_config_enables_it(tmp_path):
    """A judge that approves keeps the good trajectory; one that answers no JSON (the echo
    responder) makes it ungradeable: the judge's verdict is really part of the output."""
    approved = _verify_with_judge(tmp_path, "judge_approves")
    assert approved[0]["kept"] and approved[0]["reasons"] == []
    refused = _verify_with_judge(tmp_path, "echo")
    assert not refused[0]["kept"]
    assert [(r["check"], r["reason"]) for r in refused[0]["reasons"]] == [
        ("judge", "judge_ungradeable")
    ]
