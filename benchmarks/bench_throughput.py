"""Throughput of trajforge's LLM calls against a local stub, and against peer frameworks.

Three measurements (see benchmarks/README.md):
  efficiency  ideal time (calls x latency / concurrency) / measured time, the DoFn path
              (OpenAIBackend + InFlight: submit, ready, drain) at several concurrencies;
  overhead    client CPU per call against a zero-latency stub (stub in another process);
  peers       the same N single-turn calls through trajforge and each installed peer framework
              (each in its own venv under benchmarks/.venvs/<peer>, driven by benchmarks/peers/).

Usage: python benchmarks/bench_throughput.py [--only efficiency,overhead,peers] [--n 2000]
Writes benchmarks/results/throughput-<UTC time>.json and prints a table.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import platform
import pstats
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import MappingProxyType

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import openai  # noqa: E402
from stub_server import StubConfig, StubHandle, spawn_stub_process  # noqa: E402

from pipelines.concurrency import InFlight, shared_loop  # noqa: E402
from pipelines.llm.openai_backend import OpenAIBackend, _http_module  # noqa: E402
from schemas import ChatRequest, Message, SamplingParams  # noqa: E402

RESULTS = HERE / "results"
VENVS = HERE / ".venvs"


@dataclass(frozen=True)
class PeerRun:
    """How to run one peer: its venv, its driver script, the concurrency it is tuned to."""

    venv: str
    script: str
    concurrency: int


PEERS = MappingProxyType(
    {
        "distilabel": PeerRun("distilabel", "run_distilabel.py", 200),
        "curator": PeerRun("curator", "run_curator.py", 256),
        "data-designer": PeerRun("data-designer", "run_data_designer.py", 256),
    }
)


@dataclass
class RunResult:
    framework: str
    calls: int
    ok: int
    concurrency: int
    latency_ms: float
    wall_s: float
    cpu_s: float
    stub_max_in_flight: int = 0
    notes: dict[str, object] = field(default_factory=dict)

    @property
    def req_per_s(self) -> float:
        return self.ok / self.wall_s if self.wall_s else 0.0

    @property
    def ideal_s(self) -> float:
        return self.calls * self.latency_ms / 1000.0 / self.concurrency

    def as_json(self) -> dict[str, object]:
        return {
            **asdict(self),
            "req_per_s": round(self.req_per_s, 1),
            "efficiency": round(self.ideal_s / self.wall_s, 3) if self.wall_s else 0.0,
            "cpu_ms_per_call": round(1000 * self.cpu_s / max(self.ok, 1), 3),
        }


class AioHttpTransportBackend(OpenAIBackend):
    """OpenAIBackend with the SDK's aiohttp transport instead of httpx (experiment, see README).

    httpx's connection pool scans every connection (with a poll() syscall each) on every
    request, which is quadratic in the number of connections in flight; aiohttp's is not.
    """

    def _client_for_running_loop(self) -> openai.AsyncOpenAI:
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            http = _http_module()
            limits = http.Limits(
                max_connections=self.max_connections,
                max_keepalive_connections=self.max_connections,
            )
            self._client = openai.AsyncOpenAI(
                api_key=self._api_key,
                base_url=self.base_url,
                timeout=self.timeout_s,
                max_retries=0,
                http_client=openai.DefaultAioHttpClient(limits=limits, timeout=self.timeout_s),
            )
            self._client_loop = loop
        return self._client


BACKENDS = MappingProxyType(
    {"trajforge": OpenAIBackend, "trajforge-aiohttp": AioHttpTransportBackend}
)


def single_turn_request(index: int, max_tokens: int = 32) -> ChatRequest:
    prompt = f"Write one sentence about item number {index}."
    return ChatRequest(
        model="stub-model",
        messages=(Message(role="user", content=prompt),),
        sampling=SamplingParams(max_tokens=max_tokens),
    )


def run_trajforge(
    stub: StubHandle, calls: int, concurrency: int, latency_ms: float, variant: str = "trajforge"
) -> RunResult:
    """The DoFn pattern: submit each element, collect ready ones as we go, drain at the end."""
    backend = BACKENDS[variant]("stub-model", base_url=stub.base_url, max_retries=2)
    requests = [single_turn_request(i) for i in range(calls)]
    stub.reset_stats()
    inflight: InFlight = InFlight(max_in_flight=concurrency)
    ok = 0
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for index, request in enumerate(requests):
        inflight.submit(index, backend.complete(request))
        ok += sum(1 for done in inflight.ready() if done.ok)
    ok += sum(1 for done in inflight.drain(timeout_s=600) if done.ok)
    wall_s, cpu_s = time.perf_counter() - wall0, time.process_time() - cpu0
    asyncio.run_coroutine_threadsafe(backend.aclose(), shared_loop()).result()
    return RunResult(
        variant, calls, ok, concurrency, latency_ms, wall_s, cpu_s,
        stub_max_in_flight=stub.stats()["max_in_flight"],
    )  # fmt: skip


def warm_up(stub: StubHandle, concurrency: int, variant: str = "trajforge") -> None:
    """Import paths and pydantic validators warm, so the first measured point is not penalised."""
    run_trajforge(stub, min(concurrency, 64), concurrency, latency_ms=0, variant=variant)


def bench_efficiency(concurrencies: list[int], latency_ms: float, waves: int) -> list[RunResult]:
    results = []
    with spawn_stub_process(StubConfig(latency_ms=latency_ms)) as stub:
        for variant in BACKENDS:
            warm_up(stub, max(concurrencies), variant)
            for concurrency in concurrencies:
                calls = max(40, concurrency * waves)
                results.append(run_trajforge(stub, calls, concurrency, latency_ms, variant))
    return results


def bench_overhead(calls: int, concurrency: int, profile_to: Path | None) -> list[RunResult]:
    results = []
    with spawn_stub_process(StubConfig(latency_ms=0)) as stub:
        for variant in BACKENDS:
            warm_up(stub, concurrency, variant)
            results.append(run_trajforge(stub, calls, concurrency, 0, variant))
        if profile_to:
            results.append(profile_on_loop_thread(stub, calls, concurrency, profile_to))
    return results


def profile_on_loop_thread(
    stub: StubHandle, calls: int, concurrency: int, profile_to: Path
) -> RunResult:
    """cProfile sees one thread only: enable it on the shared loop thread, where calls run."""
    loop = shared_loop()
    profiler = cProfile.Profile()
    asyncio.run_coroutine_threadsafe(_call(profiler.enable), loop).result()
    result = run_trajforge(stub, calls, concurrency, 0)
    asyncio.run_coroutine_threadsafe(_call(profiler.disable), loop).result()
    profiler.dump_stats(str(profile_to))
    pstats.Stats(profiler).sort_stats("tottime").print_stats(15)
    result.framework += " (profiled)"
    return result


async def _call(function: object) -> None:
    function()  # type: ignore[operator]


def peer_environment() -> dict[str, str]:
    """Telemetry off, everything offline (PEERS.md)."""
    tokenizers = next(
        VENVS.glob("*/lib/python*/site-packages/litellm/litellm_core_utils/tokenizers"), None
    )
    env = dict(os.environ)
    env.update(
        TELEMETRY_ENABLED="false",  # curator (posthog)
        NEMO_TELEMETRY_ENABLED="false",  # data-designer
        DO_NOT_TRACK="1",
        CURATOR_DISABLE_RICH_DISPLAY="1",
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        PYTHONUNBUFFERED="1",
    )
    if tokenizers is not None:
        env["TIKTOKEN_CACHE_DIR"] = str(tokenizers)
    env.pop("VIRTUAL_ENV", None)
    return env


def run_peer(
    name: str, stub: StubHandle, calls: int, latency_ms: float, log_dir: Path
) -> RunResult:
    peer = PEERS[name]
    python = VENVS / peer.venv / "bin" / "python"
    if not python.exists():
        return RunResult(name, calls, 0, peer.concurrency, latency_ms, 0.0, 0.0,
                         notes={"skipped": f"no venv at {python}; run benchmarks/setup_peers.sh"})  # fmt: skip
    stub.reset_stats()
    command = [str(python), str(HERE / "peers" / peer.script), "--base-url", stub.base_url,
               "--n", str(calls), "--concurrency", str(peer.concurrency)]  # fmt: skip
    log_path = log_dir / f"{name}.log"
    with log_path.open("w") as log:
        completed = subprocess.run(
            command, stdout=subprocess.PIPE, stderr=log, text=True, env=peer_environment(),
            timeout=900, cwd=log_dir,
        )  # fmt: skip
        log.write(completed.stdout)
    lines = [line for line in completed.stdout.splitlines() if line.startswith("RESULT ")]
    if completed.returncode != 0 or not lines:
        return RunResult(name, calls, 0, peer.concurrency, latency_ms, 0.0, 0.0,
                         notes={"failed": f"exit {completed.returncode}, see {log_path}"})  # fmt: skip
    data = json.loads(lines[-1].removeprefix("RESULT "))
    return RunResult(
        name, calls, data["ok"], peer.concurrency, latency_ms, data["wall_s"], data["cpu_s"],
        stub_max_in_flight=stub.stats()["max_in_flight"], notes={"settings": data["settings"]},
    )  # fmt: skip


def bench_peers(
    calls: int, latency_ms: float, concurrency: int, peers: list[str], log_dir: Path
) -> list[RunResult]:
    results = []
    with spawn_stub_process(StubConfig(latency_ms=latency_ms)) as stub:
        for variant in BACKENDS:
            warm_up(stub, concurrency, variant)
            results.append(run_trajforge(stub, calls, concurrency, latency_ms, variant))
        for name in peers:
            print(f"  running {name} ...", flush=True)
            results.append(run_peer(name, stub, calls, latency_ms, log_dir))
    return results


def print_table(title: str, results: list[RunResult], baseline: RunResult | None = None) -> None:
    print(f"\n{title}")
    header = f"{'framework':<14}{'conc':>6}{'calls':>7}{'ok':>7}{'wall s':>9}{'req/s':>9}"
    header += f"{'eff':>7}{'cpu ms/call':>13}{'stub max':>10}"
    if baseline:
        header += f"{'tf/peer':>9}"
    print(header)
    for result in results:
        row = result.as_json()
        line = f"{result.framework:<14}{result.concurrency:>6}{result.calls:>7}{result.ok:>7}"
        line += f"{result.wall_s:>9.2f}{result.req_per_s:>9.1f}{row['efficiency']:>7.2f}"
        line += f"{row['cpu_ms_per_call']:>13.2f}{result.stub_max_in_flight:>10}"
        if baseline:
            ratio = baseline.req_per_s / result.req_per_s if result.req_per_s else float("nan")
            line += f"{ratio:>9.2f}"
        if result.notes.get("skipped") or result.notes.get("failed"):
            line += f"  {result.notes}"
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="efficiency,overhead,peers")
    parser.add_argument("--n", type=int, default=2000, help="calls in the peer comparison")
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, default=256, help="trajforge, peer comparison")
    parser.add_argument("--efficiency-concurrency", default="1,16,64,256")
    parser.add_argument("--waves", type=int, default=16, help="calls = concurrency x waves")
    parser.add_argument("--overhead-calls", type=int, default=2000)
    parser.add_argument("--peers", default=",".join(PEERS))
    parser.add_argument("--profile", action="store_true", help="cProfile the overhead run")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    RESULTS.mkdir(exist_ok=True)
    log_dir = RESULTS / f"logs-{stamp}"
    log_dir.mkdir()
    report: dict[str, object] = {
        "date_utc": stamp,
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },  # fmt: skip
    }
    if "efficiency" in parts:
        concurrencies = [int(c) for c in args.efficiency_concurrency.split(",")]
        results = bench_efficiency(concurrencies, args.latency_ms, args.waves)
        print_table(f"(a) efficiency, {args.latency_ms:g} ms latency", results)
        report["efficiency"] = [r.as_json() for r in results]
    if "overhead" in parts:
        profile_to = RESULTS / f"overhead-{stamp}.prof" if args.profile else None
        results = bench_overhead(args.overhead_calls, 64, profile_to)
        print_table("(b) client CPU per call, zero-latency stub", results)
        report["overhead"] = [r.as_json() for r in results]
    if "peers" in parts:
        peers = [p for p in args.peers.split(",") if p]
        results = bench_peers(args.n, args.latency_ms, args.concurrency, peers, log_dir)
        print_table(
            f"(c) {args.n} single-turn calls, {args.latency_ms:g} ms latency", results, results[0]
        )
        report["peers"] = [r.as_json() for r in results]
    out = RESULTS / f"throughput-{stamp}.json"
    out.write_text(json.dumps(report, indent=2))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
