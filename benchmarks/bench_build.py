"""Whole-build benchmark: `trajforge build` as a subprocess against the stub (issue 14).

For each mode (rollout: agent on the stub, scripted user; blueprint: verbaliser on the stub) and
each task count, one build in one process (`--beam` for others) with `max_in_flight` C, the
response cache off (`--cache` turns it on) and semantic dedup off (`--semantic` turns it on).
Reported per build:

  calls/s        LLM requests counted by the stub / subprocess wall time;
  efficiency     endpoint-bound ideal (calls x latency / C) / wall time, and the same ideal
                 floored at the critical path (the longest chain of sequential calls of one
                 task x latency; no schedule beats it);
  CPU ms/task    user+system CPU of the build process and its children (os.wait4 of that one
                 child, so neither the stub nor earlier builds count) / tasks; the marginal cost
                 between the smallest and the largest task count is printed too (imports and
                 pipeline construction cancel out);
  peak RSS       ru_maxrss (the largest process of the build) and, sampled every 0.05 s, the
                 summed RSS of the process tree, and each process's CPU (driver, then workers);
  outputs        a digest of the kept, rejected and dead-letter rows (order-free);
  stub max in flight;
  seen/served    the agent's mean call latency as the build saw it (the manifest's histogram)
                 over the stub's median served time: a build that cannot keep up with its
                 responses sees much more than the stub spends.

Usage:
  python benchmarks/bench_build.py                          # rollout+blueprint, 400 and 1600
  python benchmarks/bench_build.py --modes rollout --tasks 400 --repeats 2
  python benchmarks/bench_build.py --modes rollout --tasks 400 --profile   # cProfile a build
  python benchmarks/bench_build.py --modes rollout --tasks 1,10 --compare 18249bd   # fixed cost
  python benchmarks/bench_build.py --compare 73223e8   # each build also on that commit, alternating
  python benchmarks/bench_build.py --beam "--direct_num_workers=2 --direct_running_mode=multi_processing"
  python benchmarks/bench_build.py --modes rollout --beam-compare   # runner.local_processes auto vs 1
Writes benchmarks/results/build-<label>-<UTC time>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import pstats
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from build_outputs import TreeSampler, outputs_digest, trajectories_of  # noqa: E402
from stub_server import StubConfig, parse_cpus, pin_to, spawn_stub_process  # noqa: E402

RESULTS = HERE / "results"

BUILD_CONFIG = """\
name: bench-{mode}-stub
domain: retail
num_tasks: {num_tasks}
seed: 1
mode: {mode}
roles:
  agent: {{kind: openai, base_url: "{base_url}", model: stub-model, needs_api_key: false}}
rollout: {{agent: llm, user: scripted, max_turns: {max_turns}}}
sampling: {{temperature: 0.0, max_tokens: 64}}
concurrency: {{max_in_flight: {concurrency}}}
cache: {{enabled: {cache}}}
quality:
  dedup:
    semantic: {{enabled: {semantic}}}
output:
  num_shards: 2
  splits: {{train: 0.9, validation: 0.0, golden: 0.1}}
"""


@dataclass(frozen=True)
class BuildSpec:
    """One benchmarked build."""

    mode: str
    num_tasks: int
    latency_ms: float = 50.0
    concurrency: int = 64
    max_turns: int = 4
    semantic: bool = False
    cache: bool = False  # the response cache (on in a default build: one key per request)
    beam_args: tuple[str, ...] = ()  # Beam pipeline options, e.g. the multi-process local mode
    build_cpus: frozenset[int] | None = None  # pin the build (and its workers) to these cores
    stub_cpus: frozenset[int] | None = None  # pin the stub to these cores


def spec_fields(spec: BuildSpec) -> dict[str, object]:
    """The spec as JSON-ready fields (core sets as sorted lists)."""
    return {k: sorted(v) if isinstance(v, frozenset) else v for k, v in spec.__dict__.items()}


def run_child(
    command: list[str],
    log: Path,
    timeout_s: float = 3600,
    env: dict | None = None,
    cpus: frozenset[int] | None = None,
) -> tuple[int, dict]:
    """Run `command`; its exit status and the CPU/RSS of that process tree alone (os.wait4
    reports the child plus every descendant it waited for, nothing else of ours). The tree's
    summed RSS and each process's CPU are sampled every ~0.05 s (a multi-process build)."""
    with log.open("w") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, preexec_fn=pin_to(cpus)
        )
        tree = TreeSampler(process.pid)
        deadline = time.monotonic() + timeout_s
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                process.kill()
            tree.sample()
            time.sleep(0.05)
    process.returncode = os.waitstatus_to_exitcode(status)
    return process.returncode, {
        "cpu_user_s": round(usage.ru_utime, 3),
        "cpu_system_s": round(usage.ru_stime, 3),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),  # Linux: kilobytes, largest process
        "tree_rss_mb": round(tree.peak_rss_mb, 1),  # all processes of the build together
        "process_cpu_s": tree.process_cpu_s(),  # the build process, then its workers
    }


def write_config(spec: BuildSpec, base_url: str, out_dir: Path) -> Path:
    path = out_dir / "build.yaml"
    path.write_text(
        BUILD_CONFIG.format(
            mode=spec.mode,
            num_tasks=spec.num_tasks,
            base_url=base_url,
            max_turns=spec.max_turns,
            concurrency=spec.concurrency,
            semantic=str(spec.semantic).lower(),
            cache=str(spec.cache).lower(),
        )
    )
    return path


def build_command(
    config: Path, run_dir: Path, profile_to: Path | None, beam_args: tuple[str, ...] = ()
) -> list[str]:
    script = Path(sys.executable).parent / "trajforge"
    args = ["build", "--config", str(config), "--output", str(run_dir), "--no-progress"]
    args += list(beam_args)
    # the console script where the package is installed, else the module (a source tree)
    target = [str(script)] if script.exists() else ["-m", "trajforge.pipelines.cli"]
    profiler = ["-m", "cProfile", "-o", str(profile_to)] if profile_to is not None else []
    if not profiler and script.exists():
        return [str(script), *args]
    return [sys.executable, *profiler, *target, *args]


def longest_chain(spec: BuildSpec, trajectories: list[dict], max_retries: int = 1) -> int:
    """Sequential LLM calls of the slowest task: rollout, one per assistant message (the agent
    waits for each reply; the scripted user makes none) plus the no-tool baseline; blueprint,
    utterances are verbalised concurrently, each retried at most `max_retries` times."""
    if spec.mode == "blueprint":
        return 1 + max_retries + 1
    agent_calls = [sum(m["role"] == "assistant" for m in t["messages"]) for t in trajectories]
    return max(agent_calls, default=0) + 1


TOP_LEVEL = ("schemas", "generators", "verifiers", "pipelines", "finetune")


def compile_bytecode(root: Path) -> None:
    """Compile a tree's modules ahead, as pip does for an installed wheel (and `make install`
    for the editable one). Where PYTHONDONTWRITEBYTECODE is set (as on these machines), an
    uncompiled tree makes every build process compile every trajforge module again
    (`bench_phases.py --imports`); compiling both trees keeps a comparison about the code. Incremental: only
    changed sources are compiled again."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", *(str(root / top) for top in TOP_LEVEL)],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def checkout(ref: str) -> Path:
    """A directory to put first on PYTHONPATH so `trajforge.*` imports commit `ref` (extracted
    with git archive; the venv's editable install finds the working tree only after it)."""
    root = RESULTS / f"tree-{ref}"
    shim = root / "shim" / "trajforge"
    if not shim.exists():
        (root / "src").mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "-C", str(HERE.parent), "archive", ref], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(root / "src")], input=archive, check=True)
        shim.mkdir(parents=True)
        for top in TOP_LEVEL:
            (shim / top).symlink_to(root / "src" / top)
    compile_bytecode(root / "src")
    return shim.parent


def alternate(script: str, argv: list[str], ref: str, repeats: int) -> dict[str, list[str]]:
    """Run `script argv` on this tree and on commit `ref`, alternating, `repeats` times each
    (so both see the same load); each run's stdout (stripped) per tree label, echoed as it
    comes. The one-process benchmarks (`bench_synthesis.py`, `bench_blueprint_cpu.py`) compare
    trees this way."""
    compile_bytecode(HERE.parent)
    trees = {"this tree": None, ref: checkout(ref)}
    runs: dict[str, list[str]] = {label: [] for label in trees}
    for _ in range(repeats):
        for label, shim in trees.items():
            env = dict(os.environ)
            if shim is not None:
                env["PYTHONPATH"] = os.pathsep.join([str(shim), env.get("PYTHONPATH", "")])
            command = [sys.executable, script, *argv]
            out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
            runs[label].append(out.stdout.strip())
            print(f"{label}: {runs[label][-1]}", flush=True)
    return runs


def bench_one(
    spec: BuildSpec, out_dir: Path, profile: bool = False, tree: Path | None = None
) -> dict[str, object]:
    """One build as a subprocess against a fresh stub process; the row of the report. `tree`:
    build with the code of another commit (`checkout`)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stub_config = StubConfig(latency_ms=spec.latency_ms, tool_calls_per_episode=3)
    profile_to = out_dir / "build.prof" if profile else None
    with spawn_stub_process(stub_config, spec.stub_cpus) as stub:
        config = write_config(spec, stub.base_url, out_dir)
        stub.reset_stats()
        started = time.perf_counter()
        env = None if tree is None else {**os.environ, "PYTHONPATH": str(tree)}
        command = build_command(config, out_dir / "run", profile_to, spec.beam_args)
        code, usage = run_child(command, out_dir / "log", env=env, cpus=spec.build_cpus)
        wall_s = time.perf_counter() - started
        stats = stub.stats()
    manifest_path = out_dir / "run" / "manifest.json"
    if not manifest_path.exists():
        return {"spec": spec_fields(spec), "failed": f"exit {code}, see {out_dir / 'log'}"}
    manifest = json.loads(manifest_path.read_text())
    calls = stats["requests"]
    cpu_s = usage["cpu_user_s"] + usage["cpu_system_s"]
    ideal_s = calls * spec.latency_ms / 1000 / spec.concurrency
    chain = longest_chain(spec, trajectories_of(out_dir / "run"))
    critical_s = chain * spec.latency_ms / 1000
    row = {
        "spec": spec_fields(spec),
        "exit_code": code,
        "wall_s": round(wall_s, 2),
        "pipeline_wall_s": manifest.get("wall_time_s"),
        "llm_calls": calls,
        "manifest_requests": manifest["tokens"].get("requests"),  # the counters across processes
        "calls_per_s": round(calls / wall_s, 1),
        "ideal_s": round(ideal_s, 2),
        "critical_path_s": round(critical_s, 2),
        "efficiency": round(ideal_s / wall_s, 3),
        "efficiency_vs_bound": round(max(ideal_s, critical_s) / wall_s, 3),
        "cpu_s": round(cpu_s, 2),
        "cpu_ms_per_task": round(1000 * cpu_s / spec.num_tasks, 1),
        **usage,
        "stub_max_in_flight": stats["max_in_flight"],
        "stub_connections": stats.get("connections"),
        "stub_served_ms": stats["served_ms"],
        "seen_latency_ms": seen_latency(manifest),
        "stub_cpu_s": stats.get("cpu_s"),
        "accounting": manifest["accounting"],
        "local_processes": manifest.get("local_processes"),
        "outputs": outputs_digest(out_dir / "run"),
    }
    if profile_to is not None:
        row["profile"] = str(profile_to)
        print_profile(profile_to)
    return row


def seen_latency(manifest: dict) -> dict[str, dict] | None:
    """Per role, the latency the build saw (mean, p50/p90/p99 bounds; the manifest's
    histogram), to set against the stub's own `served_ms`: the difference is the time a
    response waited for the build. None for a tree from before the histogram."""
    seen = {
        role: {k: v for k, v in counts["latency_ms"].items() if k != "histogram"}
        for role, counts in manifest.get("llm", {}).items()
        if isinstance(counts.get("latency_ms"), dict)
    }
    return seen or None


def print_profile(path: Path, top: int = 35) -> None:
    """The build's main thread (where Beam runs the DoFns), by cumulative and by own time."""
    stats = pstats.Stats(str(path))
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)


def marginal_cpu(rows: list[dict]) -> dict[str, float]:
    """Per mode: CPU ms per extra task between the smallest and the largest build (the fixed
    cost of imports and pipeline construction cancels out)."""
    out = {}
    for mode in sorted({r["spec"]["mode"] for r in rows if "cpu_s" in r}):
        ok = sorted(
            (r for r in rows if r["spec"]["mode"] == mode and "cpu_s" in r),
            key=lambda r: r["spec"]["num_tasks"],
        )
        small, large = ok[0], ok[-1]
        extra = large["spec"]["num_tasks"] - small["spec"]["num_tasks"]
        if extra > 0:
            out[mode] = round(1000 * (large["cpu_s"] - small["cpu_s"]) / extra, 1)
    return out


def ratios(rows: list[dict], ref: str, new: str = "HEAD") -> list[dict]:
    """`new` against `ref` for each build of the same repeat (the two ran back to back): CPU
    and wall speed-ups, efficiencies, and whether both wrote the same rows."""
    out = []
    for row in rows:
        if row["tree"] != new or "cpu_s" not in row:
            continue
        key = (row["spec"]["mode"], row["spec"]["num_tasks"], row["repeat"])
        twin = [
            r
            for r in rows
            if r["tree"] == ref and (r["spec"]["mode"], r["spec"]["num_tasks"], r["repeat"]) == key
        ]
        if twin and "cpu_s" in twin[0]:
            old = twin[0]
            item = {
                "mode": row["spec"]["mode"],
                "num_tasks": row["spec"]["num_tasks"],
                "repeat": row["repeat"],
                "cpu_ms_per_task": [old["cpu_ms_per_task"], row["cpu_ms_per_task"]],
                "cpu_speedup": round(old["cpu_s"] / row["cpu_s"], 2),
                "wall_speedup": round(old["wall_s"] / row["wall_s"], 2),
                "efficiency": [old["efficiency"], row["efficiency"]],
                "tree_rss_mb": [old.get("tree_rss_mb"), row.get("tree_rss_mb")],
                "outputs_identical": old.get("outputs") == row.get("outputs"),
            }
            out.append(item)
            print(f"{ref} -> {new}: {json.dumps(item)}")
    return out


def print_row(row: dict) -> None:
    spec = row["spec"]
    tree = row.get("tree", "HEAD")[:8]
    if "failed" in row:
        print(f"{tree:<9}{spec['mode']:<10}{spec['num_tasks']:>6}  FAILED {row['failed']}")
        return
    print(
        f"{tree:<9}{spec['mode']:<10}{spec['num_tasks']:>6}{row['wall_s']:>8.1f}{row['llm_calls']:>7}"
        f"{row['calls_per_s']:>8.1f}{row['efficiency']:>6.2f}{row['efficiency_vs_bound']:>7.2f}"
        f"{row['cpu_ms_per_task']:>8.1f}{row['peak_rss_mb']:>8.0f}{row['tree_rss_mb']:>8.0f}"
        f"{row['stub_max_in_flight']:>6}{_agent_seen(row):>14}  {row['outputs']['kept'][:8]}",
        flush=True,
    )


def _agent_seen(row: dict) -> str:
    """The agent's mean latency as the build saw it / the stub's median served time (ms)."""
    seen = (row.get("seen_latency_ms") or {}).get("agent")
    served = row.get("stub_served_ms", {}).get("p50")
    if seen is None or served is None:
        return "-"
    return f"{seen['mean']:.0f}/{served:.0f}"


HEADER = (
    f"{'tree':<9}{'mode':<10}{'tasks':>6}{'wall s':>8}{'calls':>7}{'calls/s':>8}{'eff':>6}{'eff(b)':>7}"
    f"{'cpu ms':>8}{'rss MB':>8}{'tree MB':>8}{'stub':>6}{'seen/served':>14}  kept rows"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="rollout,blueprint")
    parser.add_argument("--tasks", default="400,1600", help="comma-separated task counts")
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, default=64, help="max_in_flight")
    parser.add_argument("--max-turns", type=int, default=4)
    parser.add_argument("--semantic", action="store_true", help="semantic dedup on")
    parser.add_argument(
        "--cache", action="store_true", help="response cache on (a default build's setting)"
    )
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="cProfile each build")
    parser.add_argument(
        "--beam",
        default="",
        help="Beam options for every build, space-separated (default: one process), e.g. "
        "'--direct_num_workers=2 --direct_running_mode=multi_processing'",
    )
    parser.add_argument(
        "--beam-compare",
        action="store_true",
        help="run each build twice, alternating: in one process (tree '1proc') and with --beam "
        "(tree 'beam'; without --beam, 'auto': runner.local_processes decides); reports their "
        "ratios and whether the outputs are identical",
    )
    parser.add_argument(
        "--build-cpus",
        type=parse_cpus,
        default=None,
        help="pin each build (and its workers) to these cores, e.g. '0,1'",
    )
    parser.add_argument(
        "--stub-cpus",
        type=parse_cpus,
        default=None,
        help="pin the stub to these cores, e.g. '2-5': an endpoint off the build's cores",
    )
    parser.add_argument("--label", default="run", help="tag in the results file name")
    parser.add_argument(
        "--compare", default=None, help="git ref: run each build on it too, alternating"
    )
    args = parser.parse_args()
    compile_bytecode(HERE.parent)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    work = RESULTS / f"build-{args.label}-{stamp}"
    report: dict[str, object] = {
        "date_utc": stamp,
        "label": args.label,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_at_start": os.getloadavg(),
            "build_cpus": sorted(args.build_cpus) if args.build_cpus else None,
            "stub_cpus": sorted(args.stub_cpus) if args.stub_cpus else None,
        },
    }
    # (label, tree to import, Beam options): the builds of one spec run back to back. One
    # process unless --beam says otherwise (`auto` would follow the load of the moment).
    given, one = tuple(args.beam.split()), ("--direct_running_mode=in_memory",)
    variants: list[tuple[str, Path | None, tuple[str, ...]]] = [("HEAD", None, given or one)]
    if args.compare:
        variants.append((args.compare, checkout(args.compare), given or one))
    if args.beam_compare:  # without --beam: what runner.local_processes auto decides
        variants = [("beam" if given else "auto", None, given), ("1proc", None, one)]
    rows = []
    print(HEADER)
    for repeat in range(args.repeats):
        for mode in args.modes.split(","):
            for num_tasks in (int(n) for n in args.tasks.split(",")):
                for name, tree, options in variants:
                    spec = BuildSpec(
                        mode=mode,
                        num_tasks=num_tasks,
                        latency_ms=args.latency_ms,
                        concurrency=args.concurrency,
                        max_turns=args.max_turns,
                        semantic=args.semantic,
                        cache=args.cache,
                        beam_args=options,
                        build_cpus=args.build_cpus,
                        stub_cpus=args.stub_cpus,
                    )
                    out = work / f"{name}-{mode}-{num_tasks}-r{repeat}"
                    row = bench_one(spec, out, args.profile, tree)
                    row.update(repeat=repeat, tree=name)
                    rows.append(row)
                    print_row(row)
    report["builds"] = rows
    report["marginal_cpu_ms_per_task"] = {
        name: marginal_cpu([r for r in rows if r["tree"] == name]) for name, _, _ in variants
    }
    if len(variants) == 2:  # the second variant is the reference
        report["ratios"] = ratios(rows, variants[1][0], variants[0][0])
    report["load_average_at_end"] = os.getloadavg()
    print(f"marginal CPU ms per task: {report['marginal_cpu_ms_per_task']}")
    out = RESULTS / f"build-{args.label}-{stamp}.json"
    out.write_text(json.dumps(report, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
