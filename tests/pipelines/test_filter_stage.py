"""The ShortcutFilters transform (FilterStageFn) on TestPipeline: routing plus one counter set per
configured filter, and each rejection naming the filter that refused it."""

import apache_beam as beam
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to

from tests.verifiers.trajectory_builders import Convo, cancel_convo, make_task
from trajforge.pipelines import stages
from trajforge.pipelines.config import BuildConfig
from trajforge.pipelines.resources import StageResources
from trajforge.pipelines.transforms.routing import (
    KEPT,
    METRICS_NAMESPACE,
    REJECTED,
    FilterStageFn,
    RoutedStage,
)

CONFIG = {
    "domain": "retail",
    "num_tasks": 3,
    "roles": {"agent": {"kind": "scripted", "responder": "blueprint"}},
}


def test_filter_stage_counts_per_filter_and_names_the_filter(tmp_path):
    good = cancel_convo().build(make_task(expected_outputs=("54.90",)))
    invented_total = cancel_convo(lookup_first=False).build()
    invented_name = Convo().user("Hi, my name is John Smith, cancel #W1234567").build()
    res = StageResources(BuildConfig.model_validate(CONFIG), str(tmp_path))
    p = BeamTestPipeline(options=PipelineOptions(["--runner=FnApiRunner"]))
    out = (
        p
        | beam.Create([good, invented_total, invented_name])
        | RoutedStage(FilterStageFn("shortcut", res, stages.shortcut_filters))
    )
    assert_that(out[KEPT] | beam.Map(lambda t: t.id), equal_to([good.id]), label="kept")
    assert_that(
        out[REJECTED] | beam.Map(lambda r: (r.record_id, r.filter, r.reason)),
        equal_to(
            [
                (invented_total.id, "hallucinated_values", "hallucinated_value"),
                (invented_name.id, "user_fidelity", "user_hallucination"),
            ]
        ),
        label="rejected",
    )
    result = p.run()
    result.wait_until_finish()
    query = result.metrics().query(MetricsFilter().with_namespace(METRICS_NAMESPACE))
    counts = {c.key.metric.name: c.committed for c in query["counters"]}
    assert counts["filter.agent_tool_calls.kept"] == 3
    assert counts["filter.answer_before_evidence.kept"] == 3
    assert counts["filter.hallucinated_values.kept"] == 2
    assert counts["filter.hallucinated_values.rejected.hallucinated_value"] == 1
    assert counts["filter.loops.kept"] == 2
    assert counts["filter.user_fidelity.kept"] == 1
    assert counts["filter.user_fidelity.rejected.user_hallucination"] == 1
    assert counts["shortcut.kept"] == 1


def test_progress_does_not_count_a_filter_rejection_twice():
    from trajforge.pipelines.progress import disposition

    counters = {
        "split.kept": 4,
        "outcome.rejected.state_mismatch": 1,
        "shortcut.rejected.loop_or_repeat": 2,
        "filter.loops.rejected.loop_or_repeat": 2,
        "filter.loops.kept": 4,
        "shortcut.dead_letter": 1,
        "tokens.llm_calls": 9,
    }
    assert disposition(counters) == (4, 3, 1, 9)
