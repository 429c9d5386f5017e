import asyncio
import json
import math

import pytest
from trajectory_builders import cancel_convo, make_task

from trajforge.generators.llm.scripted import ScriptedLLM
from trajforge.schemas import AxisScore, CriterionResult, Judgement, OutcomeResult
from trajforge.verifiers.calibration import calibrate, cohen_kappa
from trajforge.verifiers.judge import (
    RUBRIC,
    JudgeConfig,
    MalformedAnswer,
    TrajectoryJudge,
    criterion_ids,
    judge_gate,
    parse_answer,
)

ALL_IDS = criterion_ids(tuple(RUBRIC))


def answer(failing: frozenset[str] = frozenset(), drop: str | None = None) -> str:
    criteria = {
        cid: {"passed": cid not in failing, "rationale": "ok"} for cid in ALL_IDS if cid != drop
    }
    return json.dumps({"criteria": criteria})


def run_judge(llms, config=None, models=None):
    config = config or JudgeConfig()
    judge = TrajectoryJudge(llms, models or [f"m{i}" for i in range(len(llms))], config)
    trajectory = cancel_convo().build(make_task(expected_outputs=("54.90",)))
    return asyncio.run(judge.judge(trajectory, policy="Confirm before writes.", seed=7))


def scores(j: Judgement) -> dict[str, float]:
    return {a.axis: a.score for a in j.axes}


def test_good_json_is_graded_and_passes_gate():
    llm = ScriptedLLM(replies=[answer()])
    j = run_judge([llm])
    assert j.status == "graded" and j.disagreement is None
    assert scores(j) == {axis: 1.0 for axis in RUBRIC}
    assert judge_gate(j, JudgeConfig()).passed
    request = llm.requests[0]
    assert request.response_format == "json_object"
    assert "Confirm before writes." in request.messages[1].content
    assert "cancel_pending_order" in request.messages[1].content


def test_malformed_twice_then_good_is_graded_with_new_seeds():
    llm = ScriptedLLM(replies=["not json", answer(drop="grounding.facts_supported"), answer()])
    j = run_judge([llm])
    assert j.status == "graded"
    seeds = [r.seed for r in llm.requests]
    assert len(seeds) == 3 and len(set(seeds)) == 3


def test_always_malformed_is_ungradeable_and_rejected():
    bad = json.dumps({"criteria": {cid: {"passed": "yes"} for cid in ALL_IDS}})  # wrong type
    llm = ScriptedLLM(replies=["{", bad, "[]"])
    j = run_judge([llm])
    assert j.status == "ungradeable" and j.axes == ()
    gate = judge_gate(j, JudgeConfig())
    assert not gate.passed and gate.reason == "judge_ungradeable"


def test_llm_errors_count_as_failed_attempts():
    j = run_judge([ScriptedLLM(replies=[])], JudgeConfig(max_attempts=2))
    assert j.status == "ungradeable" and "ran out" in j.detail


def test_below_threshold_names_the_axis():
    j = run_judge([ScriptedLLM(replies=[answer(frozenset({"grounding.no_invented_ids"}))])])
    assert scores(j)["grounding"] == pytest.approx(2 / 3)
    gate = judge_gate(j, JudgeConfig())
    assert not gate.passed and gate.reason == "judge_below_threshold"
    assert "grounding" in gate.detail and "task_success" not in gate.detail


def test_committee_majority_and_disagreement():
    fail_two = frozenset({"efficiency.few_turns", "efficiency.concise"})
    llms = [
        ScriptedLLM(replies=[answer()]),
        ScriptedLLM(replies=[answer(fail_two)]),
        ScriptedLLM(replies=[answer(frozenset({"efficiency.concise"}))]),
    ]
    config = JudgeConfig(committee_size=3, aggregation="majority")
    j = run_judge(llms, config)
    assert j.judge.startswith("committee[3]")
    # few_turns: 2 of 3 pass -> pass; concise: 1 of 3 pass -> fail
    assert scores(j)["efficiency"] == 0.5
    # efficiency member scores 1, 0, 0.5 -> pstdev 0.408; other axes 0; mean over 6 axes
    assert j.disagreement == pytest.approx(0.40824829 / 6)

    mean = run_judge(
        [ScriptedLLM(replies=[a]) for a in (answer(), answer(fail_two), answer(fail_two))],
        JudgeConfig(committee_size=3, aggregation="mean"),
    )
    assert scores(mean)["efficiency"] == pytest.approx(1 / 3)


def test_committee_survives_one_ungradeable_member_but_not_two():
    ok = JudgeConfig(committee_size=3, max_attempts=1)
    j = run_judge(
        [
            ScriptedLLM(replies=[answer()]),
            ScriptedLLM(replies=["x"]),
            ScriptedLLM(replies=[answer()]),
        ],
        ok,
    )
    assert j.status == "graded" and "1 member(s) ungradeable" in j.detail
    j = run_judge(
        [ScriptedLLM(replies=[answer()]), ScriptedLLM(replies=["x"]), ScriptedLLM(replies=["y"])],
        ok,
    )
    assert j.status == "ungradeable"


def test_single_client_committee_reuses_client_with_distinct_seeds():
    llm = ScriptedLLM(replies=[answer()] * 3)
    j = run_judge([llm], JudgeConfig(committee_size=3))
    assert j.status == "graded" and j.disagreement == 0.0
    assert len({r.seed for r in llm.requests}) == 3


def test_parse_answer_accepts_fenced_json_and_rejects_missing():
    assert parse_answer("```json\n" + answer() + "\n```", ALL_IDS).criteria
    with pytest.raises(MalformedAnswer, match="missing"):
        parse_answer(answer(drop="tool_use.right_tools"), ALL_IDS)


# --- calibration --------------------------------------------------------------------------


def _judged(outcome_passed: bool | None, judge_score: float | None):
    t = cancel_convo().build()
    update = {}
    if outcome_passed is not None:
        update["outcome"] = OutcomeResult(
            passed=outcome_passed,
            state_match=outcome_passed,
            outputs_communicated=True,
            termination_ok=True,
            expected_hash="a",
            actual_hash="a",
            reason="",
        )
    if judge_score is not None:
        axis = AxisScore(
            axis="task_success",
            score=judge_score,
            criteria=(CriterionResult(criterion="x", passed=judge_score == 1.0),),
        )
        update["judgements"] = (Judgement(judge="m", status="graded", axes=(axis,)),)
    return t.model_copy(update=update)


def test_calibration_confusion_and_kappa():
    data = (
        [_judged(True, 1.0)] * 4  # tp
        + [_judged(False, 1.0)] * 1  # fp
        + [_judged(False, 0.0)] * 3  # tn
        + [_judged(True, 0.5)] * 2  # fn
        + [_judged(None, 1.0), _judged(True, None)]  # skipped
    )
    r = calibrate(data)
    assert (r.true_positive, r.false_positive, r.true_negative, r.false_negative) == (4, 1, 3, 2)
    assert r.n == 10 and r.skipped == 2
    assert r.accuracy == pytest.approx(0.7)
    assert r.precision == pytest.approx(0.8)
    assert r.recall == pytest.approx(4 / 6)
    # p_o = .7, p_e = (5*6 + 5*4)/100 = .5 -> kappa .4
    assert r.cohen_kappa == pytest.approx(0.4)
    assert calibrate(data, threshold=0.5).false_negative == 0


def test_kappa_edge_cases():
    assert math.isnan(cohen_kappa(5, 0, 0, 0))  # both raters constant: undefined, not 1.0
    assert math.isnan(cohen_kappa(0, 0, 0, 0))
    assert cohen_kappa(0, 3, 0, 3) < 0
    assert cohen_kappa(3, 0, 3, 0) == 1.0
    r = calibrate([_judged(True, 1.0)] * 4)
    assert r.cohen_kappa is None and "chance agreement is 1" in r.kappa_note
    assert "no negatives" in r.warning
    assert calibrate([_judged(True, 1.0), _judged(False, 0.0)]).warning == ""


def test_meaningless_figures_are_named():
    nothing = calibrate([_judged(True, None), _judged(False, None)])
    assert nothing.n == 0 and nothing.problem.startswith("nothing graded")
    failed = calibrate([_judged(False, 1.0)] * 3)  # every outcome failed, the judge passes all
    assert failed.problem.startswith("degenerate: all outcomes failed")
    assert calibrate([_judged(True, 1.0), _judged(False, 0.0)]).problem == ""


def test_plugin_rubric_grades_its_own_axes():
    from trajforge.generators.llm.responders import judge_approves

    config = JudgeConfig(rubric="tests.plugins.rubrics:RUBRIC", thresholds={"tone": 1.0})
    assert config.graded_axes() == ("task_success", "tone")
    llm = ScriptedLLM(responder=judge_approves)
    j = run_judge([llm], config)
    assert scores(j) == {"task_success": 1.0, "tone": 1.0}
    assert [c.criterion for a in j.axes for c in a.criteria][-1] == "tone.plain_words"
    assert "Did the agent avoid jargon" in llm.requests[0].messages[0].content
    assert judge_gate(j, config).passed


@pytest.mark.parametrize(
    "fields, expected",
    [
        ({"rubric": "tests.plugins.rubrics:BAD_RUBRIC"}, "rubric: not a rubric.*Tone"),
        ({"rubric": "tests.plugins.rubrics:NOPE"}, "rubric: module .* has no attribute 'NOPE'"),
        ({"rubric": "tests.plugins.rubrics:RUBRIC", "axes": ["grounding"]}, "not in the rubric"),
        ({"thresholds": {"tone": 0.5}}, "axes tone are not in the rubric"),
    ],
)
def test_bad_rubric_settings_say_what_to_fix(fields, expected):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=expected):
        JudgeConfig(**fields)


def test_threshold_overrides_keep_the_other_defaults():
    config = JudgeConfig(thresholds={"efficiency": 0.9})
    assert config.threshold("efficiency") == 0.9
    assert config.threshold("task_success") == 1.0 and config.threshold("tool_use") == 0.5
