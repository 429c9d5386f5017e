"""Live progress for local builds: per-stage counts (synthesized, verified, generated,
outcome-ok, kept), rejected / failed, LLM calls/s and tokens/s.

Beam's local runners only report metrics when the pipeline ends, and worker processes (with
`--direct_running_mode=multi_processing`) share no memory with the driver. So each worker
process keeps a small tally and writes it, at most twice a second, to
`<run_dir>/_progress/<pid>.json`; the driver sums those files in a thread and draws a tqdm bar.
Remote runs (gs:// run directories) skip the files; Dataflow shows the same counters.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Mapping
from typing import TextIO

from pydantic import BaseModel, ConfigDict
from tqdm import tqdm

from trajforge.pipelines import ownership

PROGRESS_DIR = "_progress"
FINAL_STAGE = "split"
#: Per-filter counters (`filter.<name>.kept`, `filter.<name>.rejected.<reason>`).
FILTER_COUNTER_PREFIX = "filter."


class ProgressTally:
    """This process's counts for one run directory, flushed to a file now and then."""

    _instances: dict[str, ProgressTally] = {}
    _lock = threading.Lock()

    def __init__(self, run_dir: str):
        self.run_dir = run_dir
        self.name = f"{PROGRESS_DIR}/{os.getpid()}.json"
        self.path = os.path.join(run_dir, PROGRESS_DIR, f"{os.getpid()}.json")
        self._recorded = False
        self.counts: Counter[str] = Counter()
        self._last_flush = 0.0
        self._mutex = threading.Lock()

    @classmethod
    def for_run(cls, run_dir: str) -> ProgressTally | None:
        if "://" in run_dir:
            return None
        with cls._lock:
            key = f"{os.getpid()}:{run_dir}"
            if key not in cls._instances:
                cls._instances[key] = cls(run_dir)
            return cls._instances[key]

    def add(self, name: str, n: int = 1, flush: bool = False) -> None:
        with self._mutex:
            self.counts[name] += n
            now = time.monotonic()
            if flush or now - self._last_flush > 0.5:
                self._last_flush = now
                self._write()

    def _write(self) -> None:
        if not self._recorded:  # the run owns what it writes: recorded before it exists
            ownership.ensure_dir(self.run_dir, PROGRESS_DIR)
            ownership.record(self.run_dir, [self.name, f"{self.name}.tmp"])
            self._recorded = True
        tmp = f"{self.path}.tmp"
        with open(tmp, "w") as f:
            json.dump(dict(self.counts), f)
        os.replace(tmp, self.path)


def clear_progress(run_dir: str) -> None:
    """Forget this process's cached tallies of `run_dir` (a second build into the same
    directory in one process, as in tests, would start from the first one's counts). The files
    a killed run left are recorded in its ledger and deleted with its partial outputs
    (`run_dir.prepare_run_dir`), never by their folder's name."""
    if "://" in run_dir:
        return
    with ProgressTally._lock:
        suffix = f":{run_dir}"
        for key in [k for k in ProgressTally._instances if k.endswith(suffix)]:
            del ProgressTally._instances[key]


PREPARATION_STAGES = ("synthesize", "verify_task")
GENERATION_STAGES = (*PREPARATION_STAGES, "baseline", "blueprint", "rollout")


class StageProgress(BaseModel):
    """Per-stage counts of a running build, from the summed stage counters."""

    model_config = ConfigDict(frozen=True)

    synthesized: int = 0
    verified: int = 0
    generated: int = 0
    outcome_ok: int = 0
    kept: int = 0
    rejected: int = 0
    failed: int = 0
    llm_calls: int = 0
    tokens: int = 0
    prepared: int = 0  # inputs past task verification (verified, or dropped before)
    done: int = 0  # inputs past generation (generated, or dropped before or during it)

    def fraction(self, total: int) -> float:
        """Half for preparing tasks (fast, moves from the first seconds), half for generating."""
        return (self.prepared + self.done) / max(2 * total, 1)

    @classmethod
    def of(cls, counters: Mapping[str, int], attempts: int = 1) -> StageProgress:
        """`attempts`: rollouts per task (`rollout.attempts`); generation counts in attempts,
        so `done` divides them back into tasks."""

        def dropped(stage: str) -> int:
            return sum(
                v
                for k, v in counters.items()
                if k.startswith(f"{stage}.rejected.") or k == f"{stage}.dead_letter"
            )

        generated = counters.get("blueprint.kept", 0) + counters.get("rollout.kept", 0)
        kept, rejected, failed, calls = disposition(counters)
        return cls(
            synthesized=counters.get("synthesize.kept", 0),
            verified=counters.get("verify_task.kept", 0),
            generated=generated,
            outcome_ok=counters.get("outcome.kept", 0),
            kept=kept,
            rejected=rejected,
            failed=failed,
            llm_calls=calls,
            tokens=counters.get("tokens.prompt_tokens", 0)
            + counters.get("tokens.completion_tokens", 0),
            prepared=counters.get("verify_task.kept", 0)
            + sum(dropped(s) for s in PREPARATION_STAGES),
            done=(generated + dropped("rollout")) // attempts
            + sum(dropped(s) for s in GENERATION_STAGES if s != "rollout"),
        )

    def stages_text(self) -> str:
        return (
            f"synthesized {self.synthesized} verified {self.verified} generated {self.generated} "
            f"outcome-ok {self.outcome_ok} kept {self.kept} | rejected {self.rejected} "
            f"failed {self.failed}"
        )

    def rates_text(self, elapsed: float) -> str:
        elapsed = max(elapsed, 1e-9)
        return f"{self.llm_calls / elapsed:.1f} calls/s {self.tokens / elapsed:.0f} tok/s"


def disposition(counters: Mapping[str, int]) -> tuple[int, int, int, int]:
    """(kept, rejected, failed, LLM calls) from stage counters named `<stage>.kept`,
    `<stage>.rejected.<reason>`, `<stage>.dead_letter` and `tokens.llm_calls` (per-filter
    counters, `filter.<name>.*`, repeat the shortcut stage's and are left out)."""
    kept = counters.get(f"{FINAL_STAGE}.kept", 0)
    rejected = sum(
        v
        for k, v in counters.items()
        if ".rejected." in k and not k.startswith(FILTER_COUNTER_PREFIX)
    )
    failed = sum(v for k, v in counters.items() if k.endswith(".dead_letter"))
    return kept, rejected, failed, counters.get("tokens.llm_calls", 0)


def read_totals(run_dir: str) -> Counter[str]:
    totals: Counter[str] = Counter()
    folder = os.path.join(run_dir, PROGRESS_DIR)
    if not os.path.isdir(folder):
        return totals
    for name in os.listdir(folder):
        if name.endswith(".json"):
            try:
                with open(os.path.join(folder, name)) as f:
                    totals.update(json.load(f))
            except (OSError, ValueError):
                continue  # being replaced right now; next poll reads it
    return totals


class ProgressReporter:
    """Context manager: live per-stage progress while the pipeline runs.

    On a terminal, a tqdm bar (half for tasks prepared, half for tasks past generation, so it
    moves from the first seconds, long before anything is kept) with per-stage counts and
    rates.
    Otherwise (a log file, CI), one plain line every `plain_every_s` seconds, changed or not
    (a log that stays silent for minutes reads as a hung build), and a last one when the build
    ends: a quickstart log stays a few KB instead of a frame every half second.
    """

    def __init__(
        self,
        run_dir: str,
        total: int,
        enabled: bool = True,
        plain: bool | None = None,
        plain_every_s: float = 20.0,
        stream: TextIO | None = None,
        attempts: int = 1,
    ):
        self.run_dir = run_dir
        self.total = total
        self.attempts = attempts
        self.enabled = enabled
        self.plain = (not sys.stdout.isatty()) if plain is None else plain
        self.plain_every_s = plain_every_s
        self.stream = stream
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ProgressReporter:
        if self.enabled:
            target = self._plain_loop if self.plain else self._bar_loop
            self._thread = threading.Thread(target=target, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if "://" not in self.run_dir:  # the tallies' files and folder, as recorded: only ours
            ownership.delete_recorded(self.run_dir, ownership.under(PROGRESS_DIR))

    def line(self, progress: StageProgress, elapsed: float) -> str:
        return (
            f"[{elapsed:5.0f}s] {progress.fraction(self.total):4.0%} of {self.total} tasks: "
            f"{progress.stages_text()} | {progress.rates_text(elapsed)}"
        )

    def _plain_loop(self) -> None:
        out = self.stream or sys.stdout
        started = time.monotonic()
        last_text, last_at = None, -self.plain_every_s
        print(f"[    0s] building {self.total} tasks", file=out, flush=True)
        while True:
            stopping = self._stop.wait(0.5)
            now = time.monotonic()
            progress = StageProgress.of(read_totals(self.run_dir), self.attempts)
            text = progress.stages_text()
            due = now - last_at >= self.plain_every_s
            if due or (stopping and text != last_text):
                print(self.line(progress, now - started), file=out, flush=True)
                last_text, last_at = text, now
            if stopping:
                return

    def _bar_loop(self) -> None:
        started = time.monotonic()
        with tqdm(
            total=2 * self.total,
            desc=f"build {self.total} tasks",
            dynamic_ncols=True,
            file=self.stream or sys.stderr,
            bar_format="{l_bar}{bar}| [{elapsed}] {postfix}",
        ) as bar:
            while True:
                stopping = self._stop.wait(0.5)
                progress = StageProgress.of(read_totals(self.run_dir), self.attempts)
                elapsed = time.monotonic() - started
                bar.n = progress.prepared + progress.done
                bar.set_postfix_str(
                    f"{progress.stages_text()} | {progress.rates_text(elapsed)}", refresh=False
                )
                bar.refresh()
                if stopping:
                    return
