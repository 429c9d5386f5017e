"""Bounded LSH buckets as a Beam composite, and the scale counters the manifest reports.

    (key, (refiner, member)) -> count per key -> oversized keys (side input, small)
                             -> oversized keys refined by the refiner -> GroupByKey
                             -> (bucket key, [members])

Only the keys over `cap` travel as a side input (at most records x bands / cap of them), so no
worker holds every key; each bucket is then held whole by the one worker that checks it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter

from trajforge.verifiers.buckets import refined_key

#: Counters about dedup's own cost (candidate pairs, bucket sizes): kept out of the stage
#: counters' namespace so progress and accounting never mistake them for records.
SCALE_NAMESPACE = "trajforge.scale"


def scale_counter(name: str):
    return Metrics.counter(SCALE_NAMESPACE, name)


def scale_distribution(name: str):
    return Metrics.distribution(SCALE_NAMESPACE, name)


def _refine(item, oversized: dict, cap: int):
    key, (refiner, member) = item
    return refined_key(key, refiner, oversized.get(key, 0), cap), member


class BoundedBuckets(beam.PTransform):
    """(key, (refiner, member)) -> (bucket key, list of members): a key over `cap` records is
    split by the refiner (verifiers/buckets.py says why a content MinHash slot). With `then`,
    what `then` yields for each bucket instead, in the same Map (a ParDo fewer than a FlatMap
    after it: the local runner pays ~8 ms of CPU per ParDo of a build, issue 30)."""

    def __init__(
        self,
        cap: int,
        metric_prefix: str,
        then: Callable[[tuple[Any, list[Any]]], Iterable[Any]] | None = None,
    ):
        super().__init__()
        self.cap = cap
        self.prefix = metric_prefix
        self.then = then

    def expand(self, keyed):
        cap = self.cap
        sizes = scale_distribution(f"{self.prefix}.bucket_size")
        refined_keys = scale_counter(f"{self.prefix}.refined_keys")

        def oversized(kv):
            if kv[1] > cap:
                refined_keys.inc()
                return True
            return False

        big = (  # Count.PerKey ignores the values (combined before the shuffle, not sent)
            keyed
            | "CountPerKey" >> beam.combiners.Count.PerKey()
            | "Oversized" >> beam.Filter(oversized)
        )

        def measured(kv):
            members = list(kv[1])
            sizes.update(len(members))
            return kv[0], members

        then = self.then
        buckets = (
            keyed
            | "Refine" >> beam.Map(_refine, beam.pvalue.AsDict(big), cap)
            | "GroupByBucket" >> beam.GroupByKey()
        )
        if then is None:
            return buckets | "Measure" >> beam.Map(measured)
        return buckets | "Measure" >> beam.FlatMap(lambda kv: then(measured(kv)))


def scale_report(result) -> dict[str, dict[str, int]]:
    """Dedup's cost counters from a finished pipeline, for the manifest: candidate and verified
    pairs, refined keys, and bucket sizes (count / max / mean) per LSH family."""
    try:
        found = result.metrics().query(MetricsFilter().with_namespace(SCALE_NAMESPACE))
    except Exception:  # noqa: BLE001 - some runners cannot report metrics
        return {}
    out: dict[str, dict[str, int]] = {}
    for c in found["counters"]:
        family, name = c.key.metric.name.split(".", 1)
        value = c.committed if c.committed is not None else c.attempted
        out.setdefault(family, {})[name] = out.get(family, {}).get(name, 0) + int(value or 0)
    for d in found["distributions"]:
        family, name = d.key.metric.name.split(".", 1)
        data = d.committed if d.committed is not None else d.attempted
        if data is not None and data.count:
            out.setdefault(family, {}).update(
                {
                    f"{name}_buckets": data.count,
                    f"{name}_max": data.max,
                    f"{name}_mean": round(data.sum / data.count, 2),
                }
            )
    return out
