"""Shared by the peer scripts (each runs inside its own venv, so standard library only)."""

from __future__ import annotations

import argparse
import json
import resource
import time


def parse_args(default_concurrency: int) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True, help="OpenAI-style base URL ending in /v1")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=default_concurrency)
    parser.add_argument("--model", default="stub-model")
    parser.add_argument("--max-tokens", type=int, default=32)
    return parser.parse_args()


def prompts(n: int) -> list[str]:
    """Distinct prompts, so no framework can deduplicate or cache its way out of the work."""
    return [f"Write one sentence about item number {i}." for i in range(n)]


def cpu_seconds() -> float:
    """CPU of this process and of the children it has reaped (worker processes)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class Timer:
    def __enter__(self) -> Timer:
        self.wall0, self.cpu0 = time.perf_counter(), cpu_seconds()
        return self

    def __exit__(self, *_: object) -> None:
        self.wall_s = time.perf_counter() - self.wall0
        self.cpu_s = cpu_seconds() - self.cpu0


def report(peer: str, args: argparse.Namespace, ok: int, timer: Timer, **settings: object) -> None:
    """One JSON line on stdout, read by bench_throughput.py."""
    print(
        "RESULT "
        + json.dumps(
            {
                "peer": peer,
                "n": args.n,
                "ok": ok,
                "wall_s": round(timer.wall_s, 3),
                "cpu_s": round(timer.cpu_s, 3),
                "req_per_s": round(ok / timer.wall_s, 1) if timer.wall_s else 0.0,
                "settings": {"concurrency": args.concurrency, **settings},
            }
        ),
        flush=True,
    )
