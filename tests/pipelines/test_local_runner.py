"""The build's local runner hands freed memory back after every bundle (issue 30,
`pipelines/local_runner.py`), through the one Beam method it relies on."""

from __future__ import annotations

import apache_beam as beam
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from trajforge.pipelines import heap, local_runner


def test_beam_still_runs_bundles_through_the_overridden_method():
    assert callable(FnApiRunner._execute_bundle)


def test_a_trim_follows_each_bundle(monkeypatch):
    calls = []
    monkeypatch.setattr(heap, "release_free_heap", lambda: calls.append(1) or True)
    bundles = []
    real = FnApiRunner._execute_bundle

    def counted(self, *args, **kwargs):
        bundles.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(FnApiRunner, "_execute_bundle", counted)
    with beam.Pipeline(runner=local_runner.TrimmingFnApiRunner()) as p:
        (p | beam.Create([1, 2, 3]) | beam.Map(lambda x: (x % 2, x)) | beam.GroupByKey())
    assert bundles and len(calls) == len(bundles)
