"""`dofn_specs_once`: Beam's `get_dofn_specs` asked once per DoFn inside the block, the same
answers, Beam's own callers served by it, and Beam's function back afterwards."""

from __future__ import annotations

import apache_beam as beam
from apache_beam.coders import VarIntCoder
from apache_beam.transforms import userstate

from trajforge.pipelines.dofn_specs import dofn_specs_once

COUNT = userstate.ReadModifyWriteStateSpec("count", VarIntCoder())


class Plain(beam.DoFn):
    def process(self, element):
        yield element


class Stateful(beam.DoFn):
    def process(self, element, count=beam.DoFn.StateParam(COUNT)):
        yield element


def _counting(monkeypatch) -> list[object]:
    asked: list[object] = []
    original = userstate.get_dofn_specs

    def counted(dofn):
        asked.append(dofn)
        return original(dofn)

    monkeypatch.setattr(userstate, "get_dofn_specs", counted)
    return asked


def test_each_dofn_is_inspected_once_with_the_same_answer(monkeypatch):
    plain, stateful = Plain(), Stateful()
    expected = {d: userstate.get_dofn_specs(d) for d in (plain, stateful)}
    asked = _counting(monkeypatch)
    with dofn_specs_once():
        for _ in range(3):
            for dofn in (plain, stateful):
                assert userstate.get_dofn_specs(dofn) == expected[dofn]
        # Beam's callers look the function up on the module: they are served from it too
        assert userstate.is_stateful_dofn(stateful) and not userstate.is_stateful_dofn(plain)
        userstate.validate_stateful_dofn(stateful)
        beam.ParDo(Stateful())  # a new DoFn: asked once more
    assert len(asked) == 3
    assert expected[stateful][0] == {COUNT}


def test_answers_are_copies_and_beams_function_comes_back(monkeypatch):
    asked = _counting(monkeypatch)
    counted = userstate.get_dofn_specs
    stateful = Stateful()
    with dofn_specs_once():
        userstate.get_dofn_specs(stateful)[0].clear()
        assert userstate.get_dofn_specs(stateful)[0] == {COUNT}
    assert userstate.get_dofn_specs is counted
    userstate.get_dofn_specs(stateful)
    assert len(asked) == 2


def test_a_pipeline_runs_the_same_inside_the_block():
    from apache_beam.testing.util import assert_that, equal_to

    with dofn_specs_once(), beam.Pipeline("FnApiRunner") as p:
        out = p | beam.Create([("a", 1), ("a", 2), ("b", 3)]) | beam.ParDo(Stateful())
        assert_that(out, equal_to([("a", 1), ("a", 2), ("b", 3)]))
