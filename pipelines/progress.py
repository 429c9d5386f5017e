"""Live progress for local builds: kept / rejected / failed counts and LLM calls per second.

Beam's local runners only report metrics when the pipeline ends, and worker processes (with
`--direct_running_mode=multi_processing`) share no memory with the driver. So each worker
process keeps a small tally and writes it, at most twice a second, to
`<run_dir>/_progress/<pid>.json`; the driver sums those files in a thread and draws a tqdm bar.
Remote runs (gs:// run directories) skip the files; Dataflow shows the same counters.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from collections.abc import Mapping

from tqdm import tqdm

PROGRESS_DIR = "_progress"
FINAL_STAGE = "split"
#: Per-filter counters (`filter.<name>.kept`, `filter.<name>.rejected.<reason>`).
FILTER_COUNTER_PREFIX = "filter."


class ProgressTally:
    """This process's counts for one run directory, flushed to a file now and then."""

    _instances: dict[str, ProgressTally] = {}
    _lock = threading.Lock()

    def __init__(self, run_dir: str):
        self.path = os.path.join(run_dir, PROGRESS_DIR, f"{os.getpid()}.json")
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
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        tmp = f"{self.path}.tmp"
        with open(tmp, "w") as f:
            json.dump(dict(self.counts), f)
        os.replace(tmp, self.path)


def clear_progress(run_dir: str) -> None:
    """Forget earlier tallies of `run_dir`: the files a killed run left (a resumed build would
    add them to its own counts) and this process's cached tallies (a second build into the same
    directory in one process, as in tests, would start from the first one's counts)."""
    import shutil

    if "://" in run_dir:
        return
    shutil.rmtree(os.path.join(run_dir, PROGRESS_DIR), ignore_errors=True)
    with ProgressTally._lock:
        suffix = f":{run_dir}"
        for key in [k for k in ProgressTally._instances if k.endswith(suffix)]:
            del ProgressTally._instances[key]


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
    """Context manager: a tqdm bar over the build's inputs while the pipeline runs."""

    def __init__(self, run_dir: str, total: int, enabled: bool = True):
        self.run_dir = run_dir
        self.total = total
        self.enabled = enabled
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ProgressReporter:
        if self.enabled:
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        import shutil

        shutil.rmtree(os.path.join(self.run_dir, PROGRESS_DIR), ignore_errors=True)

    def _loop(self) -> None:
        started = time.monotonic()
        with tqdm(total=self.total, desc="build", unit="task", dynamic_ncols=True) as bar:
            while True:
                stopping = self._stop.wait(0.5)
                kept, rejected, failed, calls = disposition(read_totals(self.run_dir))
                elapsed = max(time.monotonic() - started, 1e-9)
                bar.n = kept + rejected + failed
                bar.set_postfix(
                    kept=kept, rejected=rejected, failed=failed, calls_s=f"{calls / elapsed:.1f}"
                )
                bar.refresh()
                if stopping:
                    return
