"""bench_loop's variants and probes, without a build."""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from bench_loop import Probes, apply_variant  # noqa: E402

from trajforge.generators.llm.concurrency import InFlight, process_semaphore  # noqa: E402


def test_variants_set_the_interpreter_and_refuse_unknown_ones():
    interval, thresholds, enabled = sys.getswitchinterval(), gc.get_threshold(), gc.isenabled()
    try:
        apply_variant("si=1")
        assert sys.getswitchinterval() == pytest.approx(0.001)
        apply_variant("gc=1000:20:30")
        assert gc.get_threshold() == (1000, 20, 30)
        apply_variant("gc=off")
        assert not gc.isenabled()
        with pytest.raises(SystemExit, match="unknown variant"):
            apply_variant("threads=2")
    finally:
        sys.setswitchinterval(interval)
        gc.set_threshold(*thresholds)
        if enabled:
            gc.enable()


ORIGINAL_INIT = InFlight.__init__


def test_probes_see_loop_lag_collections_and_occupancy():
    probes = Probes()
    probes.install()
    try:
        inflight = InFlight(4, semaphore=process_semaphore(4, name="probe-test"))

        async def busy_then_sleep(i):
            time.sleep(0.02)  # holds the loop: the heartbeat must see it late
            await asyncio.sleep(0.1)
            return i

        for i in range(6):
            inflight.submit(i, lambda i=i: busy_then_sleep(i))
        gc.collect()
        assert sorted(c.result for c in inflight.drain(timeout_s=10)) == list(range(6))
        time.sleep(0.1)
    finally:
        report = probes.report()
        probes.uninstall()
    assert InFlight.__init__ is ORIGINAL_INIT
    assert report["loop_lag_ms"]["beats"] > 0 and report["loop_lag_ms"]["p99"] >= 10
    assert report["gc_ms"]["gen2"]["collections"] >= 1
    occupancy = report["occupancy"]["probe-test"]
    assert 0 < occupancy["running"] <= 4
