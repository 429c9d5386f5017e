"""One TestPipeline (FnApiRunner) test per transform: each stage routes kept / rejected /
dead-lettered, and every input comes out exactly once."""

import asyncio

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to

from trajforge.generators.domains import get_domain
from trajforge.generators.personas import sample_persona
from trajforge.generators.task_verification import verify_task
from trajforge.pipelines import stages
from trajforge.pipelines.config import BuildConfig
from trajforge.pipelines.resources import StageResources
from trajforge.pipelines.transforms.dedup import Dedup
from trajforge.pipelines.transforms.routing import (
    DEAD,
    KEPT,
    REJECTED,
    AsyncStageFn,
    RoutedStage,
    SyncStageFn,
)
from trajforge.schemas import Provenance, Rejected, Task, Trajectory

CONFIG = {
    "domain": "retail",
    "num_tasks": 4,
    "mode": "blueprint",
    "roles": {"agent": {"kind": "scripted", "responder": "blueprint"}},
}


def options():
    return PipelineOptions(["--runner=FnApiRunner"])


@pytest.fixture(scope="module")
def config():
    return BuildConfig.model_validate(CONFIG)


@pytest.fixture(scope="module")
def tasks():
    domain = get_domain("retail")
    return [verify_task(domain, domain.synthesize_task(sample_persona(i), i)) for i in range(4)]


@pytest.fixture(scope="module")
def trajectories(tasks):
    """Blueprint trajectories (scripted writer) with the outcome attached."""
    domain = get_domain("retail")
    from trajforge.generators.blueprint import run_blueprint
    from trajforge.generators.llm.responders import blueprint_writer
    from trajforge.generators.llm.scripted import ScriptedLLM

    llm = ScriptedLLM(responder=blueprint_writer)
    prov = Provenance(models={"agent": "scripted"}, seeds={})

    async def make(task):
        return await run_blueprint(task, domain, llm, model="scripted", seed=0, provenance=prov)

    made = [asyncio.run(make(t)) for t in tasks]
    res = StageResources(BuildConfig.model_validate(CONFIG), "/tmp/unused")
    res.setup()
    return [stages.verify_outcome(res, t) for t in made]


def ids(pcoll, label):
    return pcoll | label >> beam.Map(lambda r: r.id if hasattr(r, "id") else r.record_id)


def test_synthesize_tasks_transform(config, tmp_path):
    res = StageResources(config, str(tmp_path))
    with BeamTestPipeline(options=options()) as p:
        out = (
            p
            | beam.Create([0, 1, 2])
            | RoutedStage(SyncStageFn("synthesize", res, stages.synthesize_task))
        )
        assert_that(
            out[KEPT] | beam.Map(lambda t: isinstance(t, Task)), equal_to([True] * 3), label="kept"
        )
        assert_that(out[REJECTED], equal_to([]), label="rejected")
        assert_that(out[DEAD], equal_to([]), label="dead")


def test_verify_tasks_transform_rejects_with_typed_reason(config, tasks, tmp_path):
    res = StageResources(config, str(tmp_path))
    solved = tasks[0].model_copy(update={"gold_final_hash": "not-the-gold-hash"})
    with BeamTestPipeline(options=options()) as p:
        out = (
            p
            | beam.Create([tasks[1], solved])
            | RoutedStage(SyncStageFn("verify_task", res, stages.verify_task))
        )
        assert_that(ids(out[KEPT], "k"), equal_to([tasks[1].id]), label="kept")
        assert_that(
            out[REJECTED] | beam.Map(lambda r: (r.record_id, r.stage, r.reason)),
            equal_to([(solved.id, "verify_task", "gold_action_failed")]),
            label="rejected",
        )


def explode(res, element):
    if element == 2:
        raise ValueError("boom")
    if element == 1:
        raise Rejected("no_feasible_task", "nothing to do")
    return element


async def explode_async(res, element):
    await asyncio.sleep(0.01 * (3 - element))  # finish out of order
    return explode(res, element)


@pytest.mark.parametrize("async_stage", [False, True])
def test_routing_sends_each_element_to_exactly_one_output(config, tmp_path, async_stage):
    res = StageResources(config, str(tmp_path))
    fn = (
        AsyncStageFn("rollout", res, explode_async, 2)
        if async_stage
        else SyncStageFn("rollout", res, explode)
    )
    with BeamTestPipeline(options=options()) as p:
        out = p | beam.Create([0, 1, 2, 3]) | RoutedStage(fn)
        assert_that(out[KEPT], equal_to([0, 3]), label="kept")
        assert_that(
            out[REJECTED] | beam.Map(lambda r: (r.record_id, r.reason)),
            equal_to([("seed-1", "no_feasible_task")]),
            label="rej",
        )
        assert_that(
            out[DEAD] | beam.Map(lambda d: (d.record_id, d.error, "Traceback" in d.traceback)),
            equal_to([("seed-2", "ValueError: boom", True)]),
            label="dead",
        )


def test_generate_transform_blueprint(config, tasks, tmp_path):
    res = StageResources(config, str(tmp_path), needs_llm=True)
    with BeamTestPipeline(options=options()) as p:
        out = (
            p
            | beam.Create(tasks)
            | RoutedStage(AsyncStageFn("blueprint", res, stages.generate_trajectory, 3))
        )
        assert_that(
            out[KEPT] | beam.Map(lambda t: (t.task.id, t.mode, t.termination)),
            equal_to([(t.id, "blueprint", "blueprint_complete") for t in tasks]),
            label="kept",
        )


def test_outcome_transform(config, trajectories, tmp_path):
    res = StageResources(config, str(tmp_path))
    good = trajectories[0].model_copy(update={"outcome": None})
    broken = good.model_copy(update={"final_state_hash": "0" * 64, "id": "broken"})
    with BeamTestPipeline(options=options()) as p:
        out = (
            p
            | beam.Create([good, broken])
            | RoutedStage(SyncStageFn("outcome", res, stages.verify_outcome))
        )
        assert_that(
            out[KEPT] | beam.Map(lambda t: (t.id, t.outcome.passed)),
            equal_to([(good.id, True)]),
            label="kept",
        )
        assert_that(
            out[REJECTED] | beam.Map(lambda r: r.record_id), equal_to(["broken"]), label="rej"
        )


def test_judge_and_shortcut_transforms(trajectories, tmp_path):
    cfg = BuildConfig.model_validate(
        {
            **CONFIG,
            "roles": {
                "agent": {"kind": "scripted", "responder": "blueprint"},
                "judge": {"kind": "scripted", "responder": "judge_approves"},
            },
            "quality": {"judge": {"enabled": True}},
        }
    )
    res = StageResources(cfg, str(tmp_path), needs_llm=True)
    plain = StageResources(cfg, str(tmp_path))
    with BeamTestPipeline(options=options()) as p:
        judged = (
            p
            | beam.Create(trajectories)
            | RoutedStage(AsyncStageFn("judge", res, stages.judge_trajectory, 4))
        )
        assert_that(
            judged[KEPT] | beam.Map(lambda t: [j.status for j in t.judgements]),
            equal_to([["graded"]] * len(trajectories)),
            label="judged",
        )
        filtered = judged[KEPT] | RoutedStage(
            SyncStageFn("shortcut", plain, stages.shortcut_filters)
        )
        assert_that(
            filtered[KEPT] | beam.Map(lambda t: t.signatures is not None),
            equal_to([True] * len(trajectories)),
            label="signed",
        )


PARAPHRASES = (  # function words and stock phrases of the drafts (generators/*voice.py)
    (" is ", " would be "),
    ("My ", "The "),
    (" my ", " the "),
    (" the ", " that "),
    ("ould you", "ould you kindly"),
    ("an you", "ould you"),
    (" want to", " wish to"),
    ("Thanks", "Thank you"),
    ("anything else", "something more"),
    ("go ahead", "proceed"),
    (" I ", " we "),
    (" and ", " plus "),
    (", ", "; "),
)


def paraphrase(text: str) -> str:
    for old, new in PARAPHRASES:
        text = text.replace(old, new)
    return text


def test_dedup_transform_drops_exact_near_and_semantic_duplicates(trajectories, tmp_path):
    original = trajectories[0]
    copy = original.model_copy(update={"id": "zz-copy"})  # same text, larger id: the one dropped
    from trajforge.schemas import Message

    near_messages = list(original.messages)
    i = next(k for k, m in enumerate(near_messages) if m.role == "user" and m.content)
    near_messages[i] = Message(role="user", content=(near_messages[i].content or "") + " Thanks!")
    near = original.model_copy(update={"id": "zz-near", "messages": tuple(near_messages)})
    # A paraphrase: most phrases reworded, so shingle Jaccard is ~0.4 (not a near-duplicate)
    # but the embedding cosine is 0.92; other tasks in this set stay below 0.89.
    para = original.model_copy(
        update={
            "id": "zz-para",
            "messages": tuple(
                m.model_copy(update={"content": paraphrase(m.content)})
                if m.content and m.role in ("user", "assistant")
                else m
                for m in original.messages
            ),
        }
    )
    cfg = BuildConfig.model_validate(
        {**CONFIG, "quality": {"dedup": {"semantic": {"enabled": True, "threshold": 0.91}}}}
    )
    with BeamTestPipeline(options=options()) as p:
        out = (
            p
            | beam.Create([*trajectories, copy, near, para])
            | Dedup(cfg.quality.dedup, str(tmp_path))
        )
        assert_that(ids(out[KEPT], "k"), equal_to([t.id for t in trajectories]), label="kept")
        assert_that(
            out[REJECTED] | beam.Map(lambda r: (r.record_id, r.reason, r.detail)),
            equal_to(
                [
                    ("zz-copy", "exact_duplicate", f"duplicate of {original.id}"),
                    ("zz-near", "near_duplicate", f"duplicate of {original.id}"),
                    ("zz-para", "semantic_duplicate", f"duplicate of {original.id}"),
                ]
            ),
            label="rej",
        )


def test_to_dataset_records_transform(config, trajectories, tmp_path):
    res = StageResources(config, str(tmp_path))
    with BeamTestPipeline(options=options()) as p:
        out = (
            p
            | beam.Create(trajectories)
            | RoutedStage(SyncStageFn("split", res, stages.to_dataset_record))
        )
        assert_that(
            out[KEPT]
            | beam.Map(
                lambda r: (r.id, r.outcome_passed, Trajectory.from_json(r.trajectory_json).id)
            ),
            equal_to([(t.id, True, t.id) for t in trajectories]),
            label="kept",
        )
