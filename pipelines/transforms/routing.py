"""Thin Beam wrappers shared by every stage: route kept / rejected / dead-lettered, and count.

A stage's logic is a plain function over typed records (in generators/ or verifiers/). The DoFns
here only load resources in setup(), call that function, and route what comes back:
- a returned record goes to the main output ("kept");
- `Rejected(reason, detail)` becomes a `Rejection` on the "rejected" output;
- any other exception becomes a `DeadLetter` (error + traceback + the element) on "dead_letter".
Counters are updated on the DoFn thread (Metrics updates from other threads are lost).
Every element yields exactly one output, which is what makes the build's accounting identity
(inputs = kept + rejected + dead-lettered) checkable.
"""

from __future__ import annotations

import functools
import logging
import traceback
from collections.abc import Callable
from typing import Any

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindows

from trajforge.generators.llm.concurrency import InFlight, process_semaphore
from trajforge.generators.llm.redact import bounded, redact
from trajforge.pipelines.progress import FILTER_COUNTER_PREFIX, ProgressTally
from trajforge.pipelines.resources import StageResources
from trajforge.schemas import DeadLetter, Record, Rejected, Rejection, Stage, canonical_json

KEPT, REJECTED, DEAD = "kept", "rejected", "dead_letter"
METRICS_NAMESPACE = "trajforge"


CHATTY_LOGGERS = ("httpx", "httpcore", "openai", "aiohttp.access", "aiohttp.client", "urllib3")


def silence_http_loggers() -> None:
    """Per-request INFO lines from HTTP clients would flood worker logs at hundreds of calls/s."""
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def traceback_of(err: BaseException) -> str:
    """The traceback a dead letter keeps; none for a `Rejected`, which becomes a rejection
    without one. Formatting it read source lines for every rejected element (~1.5% of a
    rollout build's CPU when the outcome check rejects most trajectories)."""
    if isinstance(err, Rejected):
        return ""
    return "".join(traceback.format_exception(err))


def record_id_of(element: Any) -> str:
    if isinstance(element, Record) and hasattr(element, "id"):
        return str(element.id)
    return f"seed-{element}" if isinstance(element, int) else str(element)[:64]


def element_json(element: Any) -> str:
    return element.to_json() if isinstance(element, Record) else canonical_json(element)


def rejection_for(stage: Stage, element: Any, err: Rejected) -> Rejection:
    """The rejection keeps the record whole (the updated one when the stage attached one)."""
    payload = getattr(err, "record", None) or element
    return Rejection(
        record_id=record_id_of(element),
        stage=stage,
        reason=err.reason,
        detail=err.detail,
        payload_json=element_json(payload),
        filter=err.filter_name,
    )


#: Bounds of a dead letter's error text and traceback (characters, after redaction): the
#: element is kept whole, the error only says why (an error echoing a megabyte-long server
#: body was copied whole into every dead letter, issue 28).
DEAD_LETTER_ERROR_CHARS = 2_000
DEAD_LETTER_TRACEBACK_CHARS = 8_000


def dead_letter_for(stage: Stage, element: Any, err: BaseException, tb: str) -> DeadLetter:
    """The dead letter keeps the element whole; error text is redacted (a server may echo the
    request's Authorization header into its error body), then bounded."""
    return DeadLetter(
        record_id=record_id_of(element),
        stage=stage,
        error=bounded(redact(f"{type(err).__name__}: {err}"), DEAD_LETTER_ERROR_CHARS),
        traceback=bounded(redact(tb), DEAD_LETTER_TRACEBACK_CHARS),
        element_json=element_json(element),
    )


#: Per-role tallies that also feed the totals the progress bar and summary read.
_TOTALS = {
    "calls": "tokens.llm_calls",
    "cached_calls": "tokens.cached_calls",
    "prompt_tokens": "tokens.prompt_tokens",
    "completion_tokens": "tokens.completion_tokens",
    "requests": "tokens.requests",
}


class StageCounters:
    """Beam counters for one stage (`<stage>.kept`, `<stage>.rejected.<reason>`, ...), mirrored
    into the local progress tally so the driver can draw a live bar."""

    def __init__(self, stage: Stage, run_dir: str):
        self.stage = stage
        self.tally = ProgressTally.for_run(run_dir)
        self._counters: dict[str, Any] = {}

    def inc(self, name: str, n: int = 1) -> None:
        if name not in self._counters:
            self._counters[name] = Metrics.counter(METRICS_NAMESPACE, name)
        self._counters[name].inc(n)
        if self.tally is not None:
            self.tally.add(name, n)

    def flush(self) -> None:
        if self.tally is not None:
            self.tally.add("flushes", 1, flush=True)


def route(stage: Stage, counters: StageCounters, element: Any, outcome: Any, err, tb: str):
    """Turn (result | Rejected | exception) for one element into one tagged output."""
    if err is None:
        counters.inc(f"{stage}.kept")
        return outcome
    if isinstance(err, Rejected):
        counters.inc(f"{stage}.rejected.{err.reason}")
        return beam.pvalue.TaggedOutput(REJECTED, rejection_for(stage, element, err))
    counters.inc(f"{stage}.dead_letter")
    return beam.pvalue.TaggedOutput(DEAD, dead_letter_for(stage, element, err, tb))


class SyncStageFn(beam.DoFn):
    """Runs `logic(resources, element) -> record` for each element."""

    def __init__(self, stage: Stage, resources: StageResources, logic: Callable[..., Any]):
        self.stage = stage
        self.resources = resources
        self.logic = logic

    def setup(self):
        self.resources.setup()
        self.counters = StageCounters(self.stage, self.resources.run_dir)

    def process(self, element):
        try:
            result, err, tb = self.logic(self.resources, element), None, ""
        except Exception as e:  # noqa: BLE001 - every failure is routed, never lost
            result, err, tb = None, e, traceback_of(e)
        yield route(self.stage, self.counters, element, result, err, tb)

    def finish_bundle(self):
        self.counters.flush()


class FilterStageFn(SyncStageFn):
    """A SyncStageFn over an ordered filter list that also counts per filter:
    `filter.<name>.kept` for each filter a trajectory passed and
    `filter.<name>.rejected.<reason>` for the one that refused it (later filters never ran)."""

    def process(self, element):
        for out in super().process(element):
            self._count_filters(out)
            yield out

    def _count_filters(self, out: Any) -> None:
        names = [f.name for f in self.resources.gates.filters]
        if not isinstance(out, beam.pvalue.TaggedOutput):
            passed, rejection = names, None
        elif out.tag == REJECTED and out.value.filter in names:
            rejection = out.value
            passed = names[: names.index(rejection.filter)]
        else:  # dead-lettered: no filter gave a verdict
            return
        for name in passed:
            self.counters.inc(f"{FILTER_COUNTER_PREFIX}{name}.kept")
        if rejection is not None:
            self.counters.inc(
                f"{FILTER_COUNTER_PREFIX}{rejection.filter}.rejected.{rejection.reason}"
            )


class AsyncStageFn(beam.DoFn):
    """Runs `async logic(resources, element)` with many elements in flight per process.

    Elements are submitted to the process-wide event loop as they arrive (blocking only when
    `max_in_flight` are pending), finished ones are emitted as soon as they are done
    (continuous refill across the bundle), and finish_bundle drains the rest.
    """

    def __init__(
        self,
        stage: Stage,
        resources: StageResources,
        logic: Callable[..., Any],
        max_in_flight: int,
    ):
        self.stage = stage
        self.resources = resources
        self.logic = logic
        self.max_in_flight = max_in_flight

    def setup(self):
        silence_http_loggers()
        self.resources.setup()
        self.counters = StageCounters(self.stage, self.resources.run_dir)

    def _count_llm(self) -> None:
        """LLM calls, requests, retries by cause and tokens per role (`llm.<role>.<name>`),
        from the process-wide role tallies: each increment is taken once, here on the DoFn
        thread, so the counters cover every call (baseline and judge included, retries too)."""
        clients = self.resources.clients
        if clients is None:
            return
        for role, client in clients.by_role().items():
            for name, n in client.stats.take_delta().items():
                self.counters.inc(f"llm.{role}.{name}", n)
                if name in _TOTALS:
                    self.counters.inc(_TOTALS[name], n)

    def start_bundle(self):

        # One budget per stage for the whole process: several DoFn threads (or instances) in
        # a worker share it instead of multiplying the concurrency the endpoint sees.
        self.in_flight = InFlight(
            self.max_in_flight, semaphore=process_semaphore(self.max_in_flight, name=self.stage)
        )
        self.elements: dict[int, Any] = {}
        self._next_key = 0

    def _emit(self, done, windowed: bool):
        if done:
            self._count_llm()
        for item in done:
            element = self.elements.pop(item.key)
            out = route(
                self.stage, self.counters, element, item.result, item.error, item.traceback or ""
            )
            if windowed:
                if isinstance(out, beam.pvalue.TaggedOutput):
                    out = beam.pvalue.TaggedOutput(out.tag, GlobalWindows.windowed_value(out.value))
                else:
                    out = GlobalWindows.windowed_value(out)
            yield out

    def process(self, element):
        key = self._next_key
        self._next_key += 1
        self.elements[key] = element
        self.in_flight.submit(key, functools.partial(self.logic, self.resources, element))
        yield from self._emit(self.in_flight.ready(), windowed=False)

    def finish_bundle(self):
        # While the last units run, report the calls they have made (progress counts each call
        # as it completes, not when its conversation ends).
        yield from self._emit(self.in_flight.drain(on_wait=self._count_llm), windowed=True)
        self._count_llm()
        self.counters.flush()


class RoutedStage(beam.PTransform):
    """ParDo(fn) with the three outputs; `.kept`, `.rejected`, `.dead_letter` on the result."""

    def __init__(self, fn: beam.DoFn, label: str | None = None):
        super().__init__(label or f"Routed[{fn.stage}]")
        self.fn = fn

    def expand(self, pcoll):
        return pcoll | beam.ParDo(self.fn).with_outputs(REJECTED, DEAD, main=KEPT)
