"""`CombineAll` gives what `beam.CombineGlobally` gives, for no input too, in fewer ParDos."""

from __future__ import annotations

import apache_beam as beam
import pytest
from apache_beam.testing.util import assert_that, equal_to

from trajforge.pipelines.transforms.global_combine import CombineAll
from trajforge.pipelines.transforms.jsonl import ShardSummary, SummaryJson, summary_json


@pytest.mark.parametrize(
    "values",
    [
        [],
        [ShardSummary(shards=(("a", 2),), counts=(("s", "r", 2),))],
        [
            ShardSummary(shards=(("b", 1),), counts=(("s", "r", 1),)),
            ShardSummary(shards=(("a", 2),), counts=(("s", "q", 2),)),
        ],
    ],
)
@pytest.mark.parametrize("combine", [CombineAll, beam.CombineGlobally])
def test_same_as_combine_globally(values, combine):
    """Both give `fn.apply(values)`, the empty input's default included."""
    with beam.Pipeline() as p:
        out = p | beam.Create(values, reshuffle=False) | combine(SummaryJson())
        assert_that(out, equal_to([summary_json(values)]))


def test_sum_of_nothing_is_zero():
    with beam.Pipeline() as p:
        total = p | beam.Create([], reshuffle=False) | CombineAll(beam.combiners.CountCombineFn())
        assert_that(total, equal_to([0]))


def pardos(transform) -> int:
    p = beam.Pipeline()
    _ = p | beam.Create([1], reshuffle=False) | transform
    found = []

    class Count(beam.pipeline.PipelineVisitor):
        def visit_transform(self, node):
            found.append(isinstance(node.transform, beam.ParDo))

    p.visit(Count())
    return sum(found)


def test_fewer_pardos_than_combine_globally():
    fn = beam.combiners.CountCombineFn()
    assert pardos(CombineAll(fn)) + 2 <= pardos(beam.CombineGlobally(fn))


def test_the_combine_reads_the_keyed_input_itself():
    """No Flatten in front of the CombinePerKey: the local runner then does not lift it and
    holds every element (the marker joins after the combine)."""
    p = beam.Pipeline()
    _ = p | beam.Create([1], reshuffle=False) | "All" >> CombineAll(SummaryJson())
    producers = {}

    class Inputs(beam.pipeline.PipelineVisitor):
        def enter_composite_transform(self, node):
            self.visit_transform(node)

        def visit_transform(self, node):
            if isinstance(node.transform, beam.CombinePerKey):
                producers[node.full_label] = [i.producer.full_label for i in node.inputs]

    p.visit(Inputs())
    assert producers == {"All/Combine": ["All/KeyWithNone"]}
