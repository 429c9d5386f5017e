"""Where a one-process build's time per LLM call goes: loop lag, GC pauses, stage occupancy.

Runs the whole-build benchmark's rollout build (`bench_build.py`: retail, the 50 ms stub in its
own process, `max_in_flight: 64`, one process) in a child interpreter that installs probes
before calling `trajforge build`, under one setting per variant:

  loop lag       a coroutine on the build's shared event loop sleeps 2 ms, again and again, and
                 records how late it wakes: how long a ready response waits before the build
                 reads it;
  gc             the time of every collection by generation (`gc.callbacks`);
  occupancy      every 50 ms, the units running and queued in each async stage's `InFlight`
                 (baseline and generate), averaged while the stage has work;
  seen latency   the agent's mean call latency from the manifest's histogram, and the stub's
                 median time to serve a call.

Variants (comma-separated): `default`; `si=MS` (sys.setswitchinterval); `gc=A:B:C` (collector
thresholds instead of the build's own); `gc=off` (collector disabled). Variants alternate
within each repeat, so each comparison comes from one run under the same load.

Usage:
  python benchmarks/bench_loop.py --tasks 1600
  python benchmarks/bench_loop.py --tasks 1600 --variants default,si=1,gc=100000:20:20,gc=off --repeats 2
Writes benchmarks/results/loop-<label>-<UTC time>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_build import RESULTS, BuildSpec, write_config  # noqa: E402
from stub_server import StubConfig, spawn_stub_process  # noqa: E402

ONE_PROCESS = "--direct_running_mode=in_memory"


def apply_variant(variant: str) -> None:
    """Set the interpreter up as the variant says (before the build imports anything)."""
    if variant == "default":
        return
    key, _, value = variant.partition("=")
    if key == "si":
        sys.setswitchinterval(float(value) / 1000)
    elif key == "gc" and value == "off":
        gc.disable()
    elif key == "gc":
        gc.set_threshold(*(int(v) for v in value.split(":")))  # the build keeps a chosen one
    else:
        raise SystemExit(f"unknown variant {variant!r}: default, si=MS, gc=A:B:C or gc=off")


class Probes:
    """The loop heartbeat, the collector's pauses and the InFlight occupancy of one process."""

    def __init__(self) -> None:
        self.lags_ms: list[float] = []
        self.gc_ms: dict[int, list[float]] = {0: [], 1: [], 2: []}
        self.occupancy: dict[str, list[tuple[int, int]]] = {}
        self._gc_started = 0.0
        self._stop = threading.Event()
        self._restore = lambda: None

    def install(self) -> None:
        from trajforge.generators.llm import concurrency

        gc.callbacks.append(self._on_gc)
        instances: list = []
        original_init = concurrency.InFlight.__init__

        def init(inflight, *args, **kwargs):
            original_init(inflight, *args, **kwargs)
            instances.append(inflight)

        concurrency.InFlight.__init__ = init  # type: ignore[method-assign]
        self._restore = lambda: setattr(concurrency.InFlight, "__init__", original_init)
        asyncio.run_coroutine_threadsafe(self._heartbeat(), concurrency.shared_loop())
        threading.Thread(target=self._sample, args=(instances,), daemon=True).start()

    def _on_gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            self.gc_ms[info["generation"]].append(1000 * (time.perf_counter() - self._gc_started))

    async def _heartbeat(self) -> None:
        while not self._stop.is_set():
            started = time.perf_counter()
            await asyncio.sleep(0.002)
            self.lags_ms.append(1000 * (time.perf_counter() - started) - 2.0)

    def _sample(self, instances: list) -> None:
        while not self._stop.wait(0.05):
            for inflight in list(instances):
                semaphore = inflight._semaphore
                name = semaphore.name if semaphore is not None else "unnamed"
                running, queued = inflight._running, len(inflight._queued)
                if running or queued:
                    self.occupancy.setdefault(name, []).append((running, queued))

    def uninstall(self) -> None:
        """Stop probing (a test process goes on after it)."""
        self._stop.set()
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)
        self._restore()

    def report(self) -> dict:
        self._stop.set()
        lags = sorted(self.lags_ms)

        def pct(q: float) -> float:
            return round(lags[min(len(lags) - 1, int(q * len(lags)))], 2) if lags else 0.0

        return {
            "loop_lag_ms": {
                "beats": len(lags),
                "mean": round(statistics.fmean(lags), 2) if lags else 0.0,
                "p50": pct(0.5),
                "p90": pct(0.9),
                "p99": pct(0.99),
            },
            "gc_ms": {
                f"gen{g}": {
                    "collections": len(ms),
                    "total": round(sum(ms)),
                    "max": round(max(ms), 1) if ms else 0.0,
                }
                for g, ms in self.gc_ms.items()
            },
            "occupancy": {
                name: {
                    "running": round(statistics.fmean(r for r, _ in samples), 1),
                    "queued": round(statistics.fmean(q for _, q in samples), 1),
                }
                for name, samples in self.occupancy.items()
            },
        }


def child(config: str, out_dir: str, stats_file: str, variant: str) -> int:
    """The build, probed (runs in the child interpreter)."""
    apply_variant(variant)
    probes = Probes()
    probes.install()
    from trajforge.pipelines.cli import main

    try:
        code = main(
            ["build", "--config", config, "--output", out_dir, "--no-progress", ONE_PROCESS]
        )
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    Path(stats_file).write_text(json.dumps(probes.report()))
    return code


def run_variant(spec: BuildSpec, variant: str, out_dir: Path) -> dict:
    """One probed build against a fresh stub; its row."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with spawn_stub_process(
        StubConfig(latency_ms=spec.latency_ms, tool_calls_per_episode=3)
    ) as stub:
        config = write_config(spec, stub.base_url, out_dir)
        stub.reset_stats()
        stats_file = out_dir / "probes.json"
        command = [sys.executable, __file__, "--child", str(config), str(out_dir / "run")]
        command += [str(stats_file), variant]
        started = time.perf_counter()
        with (out_dir / "log").open("w") as log:
            usage_before = os.times()
            code = subprocess.call(command, stdout=log, stderr=subprocess.STDOUT)
            usage_after = os.times()
        wall_s = time.perf_counter() - started
        served = stub.stats()["served_ms"]
    cpu_s = (usage_after.children_user - usage_before.children_user) + (
        usage_after.children_system - usage_before.children_system
    )
    manifest = json.loads((out_dir / "run" / "manifest.json").read_text())
    seen = manifest.get("llm", {}).get("agent", {}).get("latency_ms", {})
    return {
        "variant": variant,
        "exit_code": code,
        "wall_s": round(wall_s, 2),
        "cpu_ms_per_task": round(1000 * cpu_s / spec.num_tasks, 1),
        "seen_mean_ms": seen.get("mean"),
        "served_p50_ms": served.get("p50"),
        **json.loads(stats_file.read_text()),
    }


def print_row(row: dict) -> None:
    lag, occ = row["loop_lag_ms"], row["occupancy"].get("rollout", {})
    gc_total = sum(g["total"] for g in row["gc_ms"].values())
    print(
        f"{row['variant']:<22}{row['wall_s']:>7.1f}{row['cpu_ms_per_task']:>8.1f}"
        f"{row['seen_mean_ms'] or 0:>7.0f}/{row['served_p50_ms'] or 0:<4.0f}"
        f"{lag['mean']:>8.1f}{lag['p90']:>8.1f}{lag['p99']:>8.1f}{gc_total:>8}"
        f"{occ.get('running', 0):>8.1f}{occ.get('queued', 0):>7.1f}",
        flush=True,
    )


HEADER = (
    f"{'variant':<22}{'wall s':>7}{'cpu ms':>8}{'seen/served':>12}{'lag ms':>8}{'p90':>8}"
    f"{'p99':>8}{'gc ms':>8}{'running':>8}{'queued':>7}"
)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        sys.exit(child(*sys.argv[2:6]))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1600)
    parser.add_argument("--variants", default="default")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--label", default="run")
    args = parser.parse_args()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    work = RESULTS / f"loop-{args.label}-{stamp}"
    spec = BuildSpec(mode="rollout", num_tasks=args.tasks, beam_args=(ONE_PROCESS,))
    rows = []
    print(HEADER)
    for repeat in range(args.repeats):
        for variant in args.variants.split(","):
            row = run_variant(spec, variant, work / f"{variant.replace(':', '_')}-r{repeat}")
            row["repeat"] = repeat
            rows.append(row)
            print_row(row)
    report = {"date_utc": stamp, "tasks": args.tasks, "load_average": os.getloadavg(), "runs": rows}
    out = RESULTS / f"loop-{args.label}-{stamp}.json"
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
