"""`beam.CombineGlobally(fn)` with its output for no input, in four ParDos instead of six.

Beam's CombineGlobally keys every element with None, combines per key, drops the key, and
then, for its default, runs a one-element `Create` (Impulse, FlatMap, Map) whose `InjectDefault`
Map reads the combined value as a side input: six ParDos and a side-input stage. The local
runner pays ~8 ms of CPU per ParDo of a build's graph, whatever the data (its construction, its
`to_runner_api`, its bundle processor; `get_dofn_specs` alone inspects every method of the DoFn
seven times), and a build had four of these combines (issue 30, a build's fixed cost).

Here the input is keyed and combined per key as CombineGlobally does (the combine is lifted:
partial results cross the shuffle, not the elements), then the combined value and one marker
from an Impulse meet in a GroupByKey of at most two small elements, whose Map gives the value,
or `fn`'s output for nothing where there was no input (what CombineGlobally's default does:
setup, `fn.apply([])`, teardown). ParDos: the key, the combine, the marker's key and that Map,
which also applies `then` when given (a summary written where it is computed, instead of by one
more Map after it). `CombineEachKey` is the same for keyed input and a fixed set of keys, each
of which gets its output (several summaries, e.g. one per output folder, from one combine).

The marker joins after the combine, never before it: a Flatten in front of `CombinePerKey`
stops the local runner from lifting the combine, and it then held every element (1,500 100 KB
strings: 895 MB peak instead of 175).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import apache_beam as beam


class _Marker:
    """Stands in for a key's combined value where the input had none."""


def _with_none(element):
    return None, element


def _markers(_impulse: bytes, keys: tuple[Any, ...]):
    return [(key, _Marker()) for key in keys]


def _default(fn: beam.CombineFn) -> Any:
    """`fn` over nothing, as `beam.CombineGlobally` makes its default."""
    try:
        fn.setup()
        return fn.apply([])
    finally:
        fn.teardown()


def _value(grouped, fn: beam.CombineFn) -> tuple[Any, Any]:
    """(key, [its combined value and/or its marker]) -> (key, the value or `fn`'s default)."""
    key, values = grouped
    found = [v for v in values if not isinstance(v, _Marker)]
    return key, found[0] if found else _default(fn)


def _then_value(grouped, fn: beam.CombineFn, then: Callable[..., Any] | None, *args):
    value = _value(grouped, fn)[1]
    return value if then is None else then(value, *args)


def _then_keyed(grouped, fn: beam.CombineFn, then: Callable[..., Any] | None, *args):
    key, value = _value(grouped, fn)
    return (key, value) if then is None else then(key, value, *args)


def _with_defaults(keyed, fn: beam.CombineFn, keys: tuple[Any, ...]):
    """(key, value) -> (key, [`fn` over its values, and/or a marker for each key of `keys`])."""
    markers = keyed.pipeline | "Once" >> beam.Impulse() | "Markers" >> beam.FlatMap(_markers, keys)
    return (
        (keyed | "Combine" >> beam.CombinePerKey(fn), markers)
        | "WithMarkers" >> beam.Flatten()
        | "Gather" >> beam.GroupByKey()
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
        return _with_defaults(keyed, self.fn, (None,)) | "Value" >> beam.Map(
            _then_value, self.fn, self.then, *self.args
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
        return _with_defaults(keyed, self.fn, self.keys) | "Value" >> beam.Map(
            _then_keyed, self.fn, self.then, *self.args
        )
