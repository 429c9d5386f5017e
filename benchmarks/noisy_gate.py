"""Gate ablation counts (issue 25): what each build of the noisy teacher kept and refused.

For each run directory (a build with `rollout.agent: noisy`, e.g. configs/noisy_toy.yaml and
configs/noisy_toy_nogate.yaml), reads the kept rows and the rejected records, and reports:
kept / rejected and the rejections per typed reason (the build's first reason per trajectory),
per injected fault class (from each trajectory's `provenance.injected_faults`) how many
trajectories carried it, how many were kept, and the reasons of the refused ones; and, per
fault class, every reason the default gate gives when all its checks run (`gate_verdict`).

    .venv/bin/python -m trajforge.pipelines.cli build --config configs/noisy_toy.yaml \
        --output /tmp/noisy_on --no-progress
    .venv/bin/python -m trajforge.pipelines.cli build --config configs/noisy_toy_nogate.yaml \
        --output /tmp/noisy_off --no-progress
    .venv/bin/python benchmarks/noisy_gate.py /tmp/noisy_on /tmp/noisy_off
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow.parquet as pq

from trajforge.generators.domains import get_domain
from trajforge.schemas import Trajectory
from trajforge.verifiers.filters import DEFAULT_FILTERS, build_filters
from trajforge.verifiers.gate import gate_verdict


def _trajectories(run: Path) -> list[tuple[Trajectory, str | None]]:
    """(trajectory, None) for each kept row, (trajectory, reason) for each rejected one."""
    out: list[tuple[Trajectory, str | None]] = []
    for shard in sorted((run / "data").glob("*.parquet")):
        for row in pq.read_table(shard, columns=["trajectory_json"]).to_pylist():
            out.append((Trajectory.from_json(row["trajectory_json"]), None))
    for shard in sorted((run / "rejected").glob("*.jsonl")):
        for line in shard.read_text().splitlines():
            record = json.loads(line)
            payload = json.loads(record["payload_json"])
            if "messages" in payload:  # a trajectory (tasks refused earlier carry a task)
                out.append((Trajectory.model_validate(payload), record["reason"]))
    return out


def summarise(run: Path) -> dict:
    """Kept/rejected per reason and per injected fault class for one run directory."""
    rows = _trajectories(run)
    reasons = Counter(reason for _, reason in rows if reason is not None)
    faults: dict[str, Counter] = defaultdict(Counter)
    for trajectory, reason in rows:
        classes = {f.fault for f in trajectory.provenance.injected_faults} or {"(none)"}
        for fault in classes:
            faults[fault]["n"] += 1
            faults[fault]["kept" if reason is None else f"rejected:{reason}"] += 1
    return {
        "every_reason_by_fault": _every_reason(rows),
        "run": str(run),
        "trajectories": len(rows),
        "kept": sum(reason is None for _, reason in rows),
        "rejected": sum(reasons.values()),
        "rejected_by_reason": dict(sorted(reasons.items())),
        "by_fault": {k: dict(sorted(v.items())) for k, v in sorted(faults.items())},
    }


def _every_reason(rows: list[tuple[Trajectory, str | None]]) -> dict[str, dict[str, int]]:
    """Fault class -> how many of its trajectories each check of the default gate refuses
    (`gate_verdict`: the outcome and every default filter, all reasons, not only the first
    one the build stops at), whatever gate the run itself had."""
    filters = build_filters(DEFAULT_FILTERS)
    found: dict[str, Counter] = defaultdict(Counter)
    for trajectory, _ in rows:
        verdict = gate_verdict(trajectory, get_domain(trajectory.task.domain), filters)
        reasons = {r.reason for r in verdict.reasons} or {"(kept)"}
        for fault in {f.fault for f in trajectory.provenance.injected_faults} or {"(none)"}:
            found[fault].update(reasons)
    return {k: dict(sorted(v.items())) for k, v in sorted(found.items())}


def markdown(summaries: list[dict]) -> str:
    lines = []
    for s in summaries:
        lines += [
            f"### {s['run']}: {s['kept']} kept, {s['rejected']} rejected "
            f"of {s['trajectories']} trajectories",
            "",
            "| reason | rejected |",
            "|---|---|",
            *(f"| {r} | {n} |" for r, n in s["rejected_by_reason"].items()),
            "",
            "| injected fault | trajectories | kept | rejected (reason: n) |",
            "|---|---|---|---|",
        ]
        for fault, counts in s["by_fault"].items():
            refused = ", ".join(
                f"{k.removeprefix('rejected:')}: {n}"
                for k, n in counts.items()
                if k.startswith("rejected:")
            )
            lines.append(f"| {fault} | {counts['n']} | {counts.get('kept', 0)} | {refused} |")
        lines += [
            "",
            "Every reason the default gate gives (all checks, not only the first):",
            "",
            "| injected fault | reasons (n trajectories) |",
            "|---|---|",
        ]
        for fault, reasons in s["every_reason_by_fault"].items():
            lines.append(f"| {fault} | {', '.join(f'{r}: {n}' for r, n in reasons.items())} |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="build output directories")
    parser.add_argument("--json", type=Path, help="also write the summaries here")
    args = parser.parse_args()
    summaries = [summarise(run) for run in args.runs]
    if args.json:
        args.json.write_text(json.dumps(summaries, indent=1, sort_keys=True))
    print(markdown(summaries))


if __name__ == "__main__":
    main()
