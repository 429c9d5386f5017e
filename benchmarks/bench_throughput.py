"""Throughput of trajforge's LLM calls against a local stub, and against peer frameworks.

Five measurements (see benchmarks/README.md); the stub always runs in its own process:
  efficiency  ideal time (calls x latency / concurrency) / measured time, the DoFn path
              (OpenAIBackend + InFlight: submit, ready, drain) at several concurrencies;
  overhead    client CPU per call against a zero-latency stub;
  peers       the same N single-turn calls through trajforge and each installed peer framework
              (each in its own venv under benchmarks/.venvs/<peer>, driven by benchmarks/peers/);
  rollout     multi-turn rollouts (LLMAgent on the openai backend against the stub's scripted
              tool-calling policy, ScriptedUser, retail tasks) through InFlight;
  build       a whole `trajforge build` (rollout mode, agent on the stub) as a subprocess.
Every A/B runs its variants alternately in one process, `--repeats` times, so a loaded machine
shows up as a range instead of as a difference.

Usage: python benchmarks/bench_throughput.py [--only efficiency,overhead,peers,rollout,build]
Writes benchmarks/results/throughput-<UTC time>.json and prints a table.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import functools
import json
import os
import platform
import pstats
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import MappingProxyType

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import openai  # noqa: E402
from stub_server import StubConfig, StubHandle, spawn_stub_process  # noqa: E402

from trajforge.generators.agent import LLMAgent  # noqa: E402
from trajforge.generators.domains import get_domain  # noqa: E402
from trajforge.generators.llm.concurrency import InFlight, run_all, shared_loop  # noqa: E402
from trajforge.generators.llm.openai_backend import OpenAIBackend, _http_module  # noqa: E402
from trajforge.generators.personas import sample_persona  # noqa: E402
from trajforge.generators.rollout import run_rollout  # noqa: E402
from trajforge.generators.tooling import Domain, TaskRejected, state_hash  # noqa: E402
from trajforge.generators.user import ScriptedUser  # noqa: E402
from trajforge.schemas import (  # noqa: E402
    ChatRequest,
    Message,
    Provenance,
    SamplingParams,
    Task,
    Trajectory,
)

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


class SdkAioHttpBackend(OpenAIBackend):
    """OpenAIBackend through the SDK (`AsyncOpenAI`) over its aiohttp transport: the default
    before the direct aiohttp path, kept as the A/B baseline (see README)."""

    def __init__(self, model: str, **options: object):
        super().__init__(model, transport="httpx", **options)  # type: ignore[arg-type]

    def _sdk_client(self) -> openai.AsyncOpenAI:
        http = _http_module()
        limits = http.Limits(
            max_connections=self.max_connections,
            max_keepalive_connections=self.max_connections,
        )
        return openai.AsyncOpenAI(
            api_key=self._api_key,
            base_url=self.base_url,
            timeout=self.timeout_s,
            max_retries=0,
            http_client=openai.DefaultAioHttpClient(limits=limits, timeout=self.timeout_s),
        )


def _sdk_httpx_backend(model: str, **options: object) -> OpenAIBackend:
    return OpenAIBackend(model, transport="httpx", **options)  # type: ignore[arg-type]


#: variant name -> backend constructor (model, **options); "trajforge" is the shipped default.
BACKENDS = MappingProxyType(
    {
        "trajforge": OpenAIBackend,
        "trajforge-sdk-aiohttp": SdkAioHttpBackend,
        "trajforge-sdk-httpx": _sdk_httpx_backend,
    }
)


def single_turn_request(index: int, max_tokens: int = 32) -> ChatRequest:
    prompt = f"Write one sentence about item number {index}."
    return ChatRequest(
        model="stub-model",
        messages=(Message(role="user", content=prompt),),
        sampling=SamplingParams(max_tokens=max_tokens),
    )


def run_trajforge(
    stub: StubHandle | Sequence[StubHandle],
    calls: int,
    concurrency: int,
    latency_ms: float,
    variant: str = "trajforge",
    warm_pool: bool = False,
) -> RunResult:
    """The DoFn pattern: submit each element, collect ready ones as we go, drain at the end.

    `warm_pool` first opens `concurrency` keep-alive connections with one untimed wave (the
    steady state of a long-running worker; connection set-up is then not in the number).
    Several stubs (separate processes) share the calls round-robin, one backend each: a
    diagnostic for how much of the shortfall is the single-loop stub's own queueing.
    """
    stubs = [stub] if isinstance(stub, StubHandle) else list(stub)
    backends = [BACKENDS[variant]("stub-model", base_url=s.base_url, max_retries=2) for s in stubs]
    requests = [single_turn_request(i) for i in range(calls)]
    if warm_pool:
        warm = [single_turn_request(-1 - i) for i in range(concurrency)]
        run_all(
            [
                functools.partial(backends[i % len(backends)].complete, r)
                for i, r in enumerate(warm)
            ],
            concurrency,
        )
    for each in stubs:
        each.reset_stats()
    inflight: InFlight = InFlight(max_in_flight=concurrency)
    ok = 0
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for index, request in enumerate(requests):
        inflight.submit(index, backends[index % len(backends)].complete(request))
        ok += sum(1 for done in inflight.ready() if done.ok)
    ok += sum(1 for done in inflight.drain(timeout_s=600) if done.ok)
    wall_s, cpu_s = time.perf_counter() - wall0, time.process_time() - cpu0
    for backend in backends:
        asyncio.run_coroutine_threadsafe(backend.aclose(), shared_loop()).result()
    stats = [each.stats() for each in stubs]
    return RunResult(
        variant, calls, ok, concurrency, latency_ms, wall_s, cpu_s,
        stub_max_in_flight=sum(s["max_in_flight"] for s in stats),
        notes={"stub_processes": len(stubs), "stub_served_ms": [s["served_ms"] for s in stats]},
    )  # fmt: skip


def warm_up(stub: StubHandle, concurrency: int, variant: str = "trajforge") -> None:
    """Import paths and pydantic validators warm, so the first measured point is not penalised."""
    run_trajforge(stub, min(concurrency, 64), concurrency, latency_ms=0, variant=variant)


def bench_efficiency(
    concurrencies: list[int],
    latency_ms: float,
    waves: int,
    variants: list[str],
    repeats: int,
    warm_pool: bool = True,
    stub_processes: int = 1,
) -> list[RunResult]:
    """Every (repeat, concurrency) point runs each variant back to back: A/B under equal load."""
    results = []
    with contextlib.ExitStack() as stack:
        config = StubConfig(latency_ms=latency_ms)
        stubs = [stack.enter_context(spawn_stub_process(config)) for _ in range(stub_processes)]
        for variant in variants:
            warm_up(stubs[0], max(concurrencies), variant)
        for repeat in range(repeats):
            for concurrency in concurrencies:
                calls = max(40, concurrency * waves)
                for variant in variants:
                    result = run_trajforge(
                        stubs, calls, concurrency, latency_ms, variant, warm_pool=warm_pool
                    )
                    result.notes.update(repeat=repeat)
                    results.append(result)
    return results


def bench_overhead(
    calls: int, concurrency: int, profile_to: Path | None, variants: list[str], repeats: int
) -> list[RunResult]:
    results = []
    with spawn_stub_process(StubConfig(latency_ms=0)) as stub:
        for variant in variants:
            warm_up(stub, concurrency, variant)
        for repeat in range(repeats):
            for variant in variants:
                result = run_trajforge(stub, calls, concurrency, 0, variant)
                result.notes.update(repeat=repeat)
                results.append(result)
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
    calls: int,
    latency_ms: float,
    concurrency: int,
    peers: list[str],
    log_dir: Path,
    variants: list[str],
    repeats: int,
) -> list[RunResult]:
    """trajforge variants and peers alternate within each repeat, against one stub process."""
    results = []
    with spawn_stub_process(StubConfig(latency_ms=latency_ms)) as stub:
        for variant in variants:
            warm_up(stub, concurrency, variant)
        for repeat in range(repeats):
            for variant in variants:
                result = run_trajforge(stub, calls, concurrency, latency_ms, variant)
                result.notes.update(repeat=repeat)
                results.append(result)
            for name in peers:
                print(f"  running {name} (repeat {repeat}) ...", flush=True)
                result = run_peer(name, stub, calls, latency_ms, log_dir)
                result.notes.update(repeat=repeat)
                results.append(result)
    return results


# -- multi-turn rollouts ---------------------------------------------------------------------


@dataclass
class RolloutResult:
    """Rollouts at one concurrency. Each trajectory's calls are sequential, so the wall time
    can never beat the longest trajectory (`critical_path_s`); `bound_s` is the larger of that
    and the throughput ideal, and `efficiency_vs_bound` is measured against it."""

    concurrency: int
    trajectories: int
    ok: int
    llm_calls: int
    max_calls_per_trajectory: int
    latency_ms: float
    wall_s: float
    cpu_s: float
    terminations: dict[str, int] = field(default_factory=dict)
    notes: dict[str, object] = field(default_factory=dict)

    def as_json(self) -> dict[str, object]:
        ideal_s = self.llm_calls * self.latency_ms / 1000.0 / self.concurrency
        critical_path_s = self.max_calls_per_trajectory * self.latency_ms / 1000.0
        bound_s = max(ideal_s, critical_path_s)
        wall = self.wall_s or float("nan")
        return {
            **asdict(self),
            "trajectories_per_s": round(self.ok / wall, 1),
            "calls_per_s": round(self.llm_calls / wall, 1),
            "ideal_s": round(ideal_s, 3),
            "critical_path_s": round(critical_path_s, 3),
            "efficiency": round(ideal_s / wall, 3),
            "efficiency_vs_bound": round(bound_s / wall, 3),
            "cpu_ms_per_call": round(1000 * self.cpu_s / max(self.llm_calls, 1), 3),
        }


ROLLOUT_PROVENANCE = Provenance(models={"agent": "stub-model", "user": "scripted"}, seeds={})


def retail_tasks(count: int) -> list[Task]:
    """The first `count` retail tasks the domain accepts (made before any clock starts)."""
    domain = get_domain("retail")
    tasks: list[Task] = []
    index = 0
    while len(tasks) < count:
        with contextlib.suppress(TaskRejected):
            tasks.append(domain.synthesize_task(sample_persona(index), index))
        index += 1
    return tasks


async def one_rollout(task: Task, domain: Domain, agent: LLMAgent, max_turns: int) -> Trajectory:
    return await run_rollout(
        task,
        domain,
        agent,
        ScriptedUser(task),
        max_turns=max_turns,
        seed=0,
        provenance=ROLLOUT_PROVENANCE,
    )


def run_rollouts(
    stub: StubHandle, tasks: list[Task], concurrency: int, latency_ms: float, max_turns: int
) -> RolloutResult:
    """The DoFn pattern again, one trajectory per element: submit, ready, drain."""
    domain = get_domain("retail")
    backend = OpenAIBackend(
        "stub-model", base_url=stub.base_url, max_retries=2, needs_api_key=False
    )
    agent = LLMAgent(backend, "stub-model", SamplingParams(temperature=0.0, max_tokens=64))
    stub.reset_stats()
    inflight: InFlight = InFlight(max_in_flight=concurrency)
    done = []
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for index, task in enumerate(tasks):
        inflight.submit(index, one_rollout(task, domain, agent, max_turns))
        done += inflight.ready()
    done += inflight.drain(timeout_s=900)
    wall_s, cpu_s = time.perf_counter() - wall0, time.process_time() - cpu0
    asyncio.run_coroutine_threadsafe(backend.aclose(), shared_loop()).result()
    trajectories = [item.result for item in done if item.ok]
    errors = [repr(item.error)[:200] for item in done if not item.ok]
    calls = [t.cost.llm_calls for t in trajectories]
    return RolloutResult(
        concurrency=concurrency,
        trajectories=len(tasks),
        ok=len(trajectories),
        llm_calls=sum(calls),
        max_calls_per_trajectory=max(calls, default=0),
        latency_ms=latency_ms,
        wall_s=wall_s,
        cpu_s=cpu_s,
        terminations=dict(Counter(t.termination for t in trajectories)),
        notes={"stub_requests": stub.stats()["requests"], "errors": errors[:3]},
    )


def domain_cpu_ms(tasks: list[Task]) -> float:
    """Mean CPU of building a task's initial world and hashing it, once per trajectory: work
    that runs on the loop thread inside `run_rollout` and competes with the calls' I/O."""
    domain = get_domain("retail")
    cpu0 = time.process_time()
    for task in tasks:
        state_hash(domain.initial_state(task.initial_state))
    return 1000.0 * (time.process_time() - cpu0) / len(tasks)


def bench_rollout(
    concurrencies: list[int], latency_ms: float, waves: int, max_turns: int, repeats: int
) -> list[RolloutResult]:
    """`waves` x C trajectories per concurrency (at least 32), the stub's agent policy making
    3 tool calls per episode, so each trajectory is ~2 x max_turns + 2 sequential calls."""
    tasks = retail_tasks(max(32, waves * max(concurrencies)))
    domain_ms = domain_cpu_ms(tasks[:16])
    config = StubConfig(latency_ms=latency_ms, tool_calls_per_episode=3)
    results = []
    with spawn_stub_process(config) as stub:
        run_rollouts(stub, tasks[:16], 16, 0.0, max_turns)  # warm-up
        for repeat in range(repeats):
            for concurrency in concurrencies:
                count = max(32, waves * concurrency)
                result = run_rollouts(stub, tasks[:count], concurrency, latency_ms, max_turns)
                result.notes.update(repeat=repeat, domain_cpu_ms_per_trajectory=domain_ms)
                results.append(result)
    return results


def print_rollouts(title: str, results: list[RolloutResult]) -> None:
    print(f"\n{title}")
    print(
        f"{'conc':>6}{'traj':>6}{'ok':>6}{'calls':>8}{'max/traj':>9}{'wall s':>9}{'traj/s':>9}"
        f"{'calls/s':>9}{'eff':>7}{'eff(bound)':>11}{'cpu ms/call':>13}{'domain ms/traj':>16}"
    )
    for result in results:
        row = result.as_json()
        print(
            f"{result.concurrency:>6}{result.trajectories:>6}{result.ok:>6}{result.llm_calls:>8}"
            f"{result.max_calls_per_trajectory:>9}{result.wall_s:>9.2f}"
            f"{row['trajectories_per_s']:>9}{row['calls_per_s']:>9}{row['efficiency']:>7.2f}"
            f"{row['efficiency_vs_bound']:>11.2f}{row['cpu_ms_per_call']:>13.2f}"
            f"{result.notes.get('domain_cpu_ms_per_trajectory', 0.0):>16.1f}"
        )


# -- whole build -----------------------------------------------------------------------------


def bench_build(
    num_tasks: int, latency_ms: float, concurrency: int, max_turns: int, out_dir: Path
) -> dict[str, object]:
    """`trajforge build` as a subprocess (imports, Beam, writing parquet included), rollout
    mode: the same run as benchmarks/bench_build.py (which also does blueprint, task counts,
    CPU per task and the comparison with another commit)."""
    from bench_build import BuildSpec, bench_one

    spec = BuildSpec(
        mode="rollout",
        num_tasks=num_tasks,
        latency_ms=latency_ms,
        concurrency=concurrency,
        max_turns=max_turns,
    )
    return bench_one(spec, out_dir)


def print_table(title: str, results: list[RunResult], baseline: RunResult | None = None) -> None:
    print(f"\n{title}")
    header = f"{'framework':<22}{'conc':>6}{'calls':>7}{'ok':>7}{'wall s':>9}{'req/s':>9}"
    header += f"{'eff':>7}{'cpu ms/call':>13}{'stub max':>10}"
    if baseline:
        header += f"{'tf/peer':>9}"
    print(header)
    for result in results:
        row = result.as_json()
        line = f"{result.framework:<22}{result.concurrency:>6}{result.calls:>7}{result.ok:>7}"
        line += f"{result.wall_s:>9.2f}{result.req_per_s:>9.1f}{row['efficiency']:>7.2f}"
        line += f"{row['cpu_ms_per_call']:>13.2f}{result.stub_max_in_flight:>10}"
        if baseline:
            ratio = baseline.req_per_s / result.req_per_s if result.req_per_s else float("nan")
            line += f"{ratio:>9.2f}"
        if result.notes.get("skipped") or result.notes.get("failed"):
            line += f"  {result.notes}"
        print(line)


def print_ranges(results: list[RunResult]) -> dict[str, dict[str, list[float]]]:
    """Min-max over repeats per (framework, concurrency): the numbers to quote."""
    groups: dict[str, list[RunResult]] = {}
    for result in results:
        groups.setdefault(f"{result.framework} C={result.concurrency}", []).append(result)
    ranges = {}
    print("ranges over repeats (min-max):")
    for name, group in groups.items():
        rows = [r.as_json() for r in group]
        eff = [float(row["efficiency"]) for row in rows]  # type: ignore[arg-type]
        rps = [float(row["req_per_s"]) for row in rows]  # type: ignore[arg-type]
        ranges[name] = {"efficiency": [min(eff), max(eff)], "req_per_s": [min(rps), max(rps)]}
        print(
            f"  {name:<34} eff {min(eff):.2f}-{max(eff):.2f}  req/s {min(rps):.0f}-{max(rps):.0f}"
        )
    return ranges


def concurrency_list(text: str) -> list[int]:
    return [int(c) for c in text.split(",") if c]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="efficiency,overhead,peers,rollout,build")
    parser.add_argument("--n", type=int, default=2000, help="calls in the peer comparison")
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, default=256, help="trajforge, peer comparison")
    parser.add_argument("--efficiency-concurrency", default="1,16,64,256")
    parser.add_argument("--waves", type=int, default=32, help="calls = concurrency x waves")
    parser.add_argument(
        "--cold-pool", action="store_true", help="efficiency: count connection set-up too"
    )
    parser.add_argument(
        "--stub-processes", type=int, default=1, help="efficiency: calls spread over K stubs"
    )
    parser.add_argument("--overhead-calls", type=int, default=2000)
    parser.add_argument("--peers", default=",".join(PEERS))
    parser.add_argument("--variants", default="trajforge,trajforge-sdk-aiohttp")
    parser.add_argument("--repeats", type=int, default=2, help="alternating A/B repetitions")
    parser.add_argument("--rollout-concurrency", default="16,64,256")
    parser.add_argument("--rollout-waves", type=int, default=2, help="trajectories = C x waves")
    parser.add_argument("--max-turns", type=int, default=4, help="rollout and build")
    parser.add_argument("--build-tasks", type=int, default=200)
    parser.add_argument("--build-concurrency", type=int, default=64)
    parser.add_argument("--profile", action="store_true", help="cProfile the overhead run")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    variants = [v for v in args.variants.split(",") if v]
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
            "load_average_at_start": os.getloadavg(),
        },  # fmt: skip
    }
    if "efficiency" in parts:
        concurrencies = concurrency_list(args.efficiency_concurrency)
        results = bench_efficiency(
            concurrencies,
            args.latency_ms,
            args.waves,
            variants,
            args.repeats,
            warm_pool=not args.cold_pool,
            stub_processes=args.stub_processes,
        )
        print_table(f"(a) efficiency, {args.latency_ms:g} ms latency", results)
        report["efficiency"] = [r.as_json() for r in results]
        report["efficiency_ranges"] = print_ranges(results)
    if "overhead" in parts:
        profile_to = RESULTS / f"overhead-{stamp}.prof" if args.profile else None
        results = bench_overhead(args.overhead_calls, 64, profile_to, variants, args.repeats)
        print_table("(b) client CPU per call, zero-latency stub", results)
        report["overhead"] = [r.as_json() for r in results]
        report["overhead_ranges"] = print_ranges(results)
    if "peers" in parts:
        peers = [p for p in args.peers.split(",") if p]
        results = bench_peers(
            args.n, args.latency_ms, args.concurrency, peers, log_dir, variants, args.repeats
        )
        print_table(
            f"(c) {args.n} single-turn calls, {args.latency_ms:g} ms latency", results, results[0]
        )
        report["peers"] = [r.as_json() for r in results]
        report["peer_ranges"] = print_ranges(results)
    if "rollout" in parts:
        rollouts = bench_rollout(
            concurrency_list(args.rollout_concurrency),
            args.latency_ms,
            args.rollout_waves,
            args.max_turns,
            args.repeats,
        )
        print_rollouts(f"(d) rollouts, {args.latency_ms:g} ms latency", rollouts)
        report["rollout"] = [r.as_json() for r in rollouts]
    if "build" in parts:
        builds = []
        for latency_ms in (0.0, args.latency_ms):  # 0 ms: the pipeline's own floor
            run_dir = log_dir / f"build-{latency_ms:g}ms"
            run_dir.mkdir()
            builds.append(
                bench_build(
                    args.build_tasks, latency_ms, args.build_concurrency, args.max_turns, run_dir
                )
            )
            print(
                f"\n(e) trajforge build, rollout mode, agent on the stub:\n{json.dumps(builds[-1])}"
            )
        report["build"] = builds
    report["load_average_at_end"] = os.getloadavg()
    out = RESULTS / f"throughput-{stamp}.json"
    out.write_text(json.dumps(report, indent=2))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
