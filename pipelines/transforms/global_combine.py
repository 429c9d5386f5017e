"""`beam.CombineGlobally(fn)` with its output for no input, in four ParDos instead of six.

Beam's CombineGlobally keys every element with None, combines per key, drops the key, and
then, for its default, runs a one-element `Create` (Impulse, FlatMap, Map) whose `InjectDefault`
Map reads the combined value as a side input: six ParDos and a side-input stage. The local
runner pays ~8 ms of CPU per ParDo of a build's graph, whatever the data (its construction, its
`to_runner_api`, its bundle processor; `get_dofn_specs` alone inspects every method of the DoFn
seven times), and a build had four of these combines (issue 30, a build's fixed cost).

Here one marker element from an Impulse joins the keyed input and the combine skips it: for no
input the output is `fn`'s combination of nothing, exactly CombineGlobally's default
(`fn.apply([])`), and for any input the marker changes no accumulator. ParDos: the key, the
marker's key, the combine and the unkeying, which also applies `then` when given (a summary
written where it is computed, instead of by one more Map after it). `CombineEachKey` is the
same for keyed input and a fixed set of keys, each of which gets its output (several
summaries, e.g. one per output folder, from one combine).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import apache_beam as beam


class _Marker:
    """The element that makes an empty input yield one output; never combined."""


def _with_none(element):
    return None, element


def _markers(_impulse: bytes, keys: tuple[Any, ...]):
    return [(key, _Marker()) for key in keys]


def _value(keyed, then: Callable[..., Any] | None, *args):
    return keyed[1] if then is None else then(keyed[1], *args)


def _keyed_value(keyed, then: Callable[..., Any] | None, *args):
    return keyed if then is None else then(keyed[0], keyed[1], *args)


class _SkipMarker(beam.CombineFn):
    """`fn` over the elements that are not the marker."""

    def __init__(self, fn: beam.CombineFn):
        super().__init__()
        self.fn = fn

    def setup(self, *args, **kwargs):
        self.fn.setup(*args, **kwargs)

    def create_accumulator(self, *args, **kwargs):
        return self.fn.create_accumulator(*args, **kwargs)

    def add_input(self, accumulator, element, *args, **kwargs):
        if isinstance(element, _Marker):
            return accumulator
        return self.fn.add_input(accumulator, element, *args, **kwargs)

    def merge_accumulators(self, accumulators, *args, **kwargs):
        return self.fn.merge_accumulators(accumulators, *args, **kwargs)

    def compact(self, accumulator, *args, **kwargs):
        return self.fn.compact(accumulator, *args, **kwargs)

    def extract_output(self, accumulator, *args, **kwargs):
        return self.fn.extract_output(accumulator, *args, **kwargs)

    def teardown(self, *args, **kwargs):
        self.fn.teardown(*args, **kwargs)


def _combined(keyed, fn: beam.CombineFn, keys: tuple[Any, ...]):
    """`keyed` with one marker per key of `keys`, combined per key by `fn` (markers skipped)."""
    markers = keyed.pipeline | "Once" >> beam.Impulse() | "Markers" >> beam.FlatMap(_markers, keys)
    return (
        (keyed, markers)
        | "WithMarkers" >> beam.Flatten()
        | "Combine" >> beam.CombinePerKey(_SkipMarker(fn))
    )


class CombineAll(beam.PTransform):
    """PCollection -> one element: `fn` over all of it (`fn`'s output for nothing when empty),
    as `beam.CombineGlobally(fn)` gives; with `then`, `then(that output, *args)` instead (`args`
    may be side inputs)."""

    def __init__(self, fn: beam.CombineFn, then: Callable[..., Any] | None = None, *args):
        super().__init__()
        self.fn = fn
        self.then = then
        self.args = args

    def expand(self, pcoll):
        keyed = pcoll | "KeyWithNone" >> beam.Map(_with_none)
        return _combined(keyed, self.fn, (None,)) | "Value" >> beam.Map(
            _value, self.then, *self.args
        )


class CombineEachKey(beam.PTransform):
    """(key, value) pairs -> (key, `fn` over its values) for every key of `keys`, those with
    no value too (`fn`'s output for nothing); with `then`, `then(key, that output, *args)`
    instead. Values of keys outside `keys` are combined as by `beam.CombinePerKey`."""

    def __init__(
        self,
        fn: beam.CombineFn,
        keys: tuple[Any, ...],
        then: Callable[..., Any] | None = None,
        *args,
    ):
        super().__init__()
        self.fn = fn
        self.keys = keys
        self.then = then
        self.args = args

    def expand(self, keyed):
        return _combined(keyed, self.fn, self.keys) | "Value" >> beam.Map(
            _keyed_value, self.then, *self.args
        )
