"""`trajforge calibrate`: how far the LLM judge agrees with the programmatic outcome verifier.

The outcome verifier (replayed state hash + expected outputs) is ground truth for task success.
Calibration judges a built run's trajectories, the kept ones (outcome passed) and the ones the
outcome stage rejected (outcome failed, kept whole in rejected/), with the run's judge binding,
and reports accuracy, precision, recall and Cohen's kappa of the judge's task_success axis.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator

from tqdm import tqdm

from trajforge.generators.llm.concurrency import InFlight
from trajforge.generators.run_domains import RunDomains
from trajforge.pipelines import io, ownership
from trajforge.pipelines.builders import build_judge
from trajforge.pipelines.config import BuildConfig
from trajforge.pipelines.resources import shared_role_clients
from trajforge.schemas import Trajectory, derive_seed
from trajforge.verifiers.calibration import calibrate


def run_trajectories(run_dir: str, limit: int | None = None) -> Iterator[Trajectory]:
    """Kept trajectories and outcome-rejected ones (those carry a failed outcome)."""
    count = 0
    for split in io.SPLITS:
        for path in io.split_files(run_dir, split):
            for row in io.iter_parquet(path, ["trajectory_json"]):
                if limit is not None and count >= limit:
                    return
                count += 1
                yield Trajectory.from_json(row["trajectory_json"])
    for rejection in io.jsonl_records(run_dir, io.REJECTED_DIR):
        if rejection["stage"] != "outcome":
            continue
        if limit is not None and count >= limit:
            return
        count += 1
        yield Trajectory.from_json(rejection["payload_json"])


def judge_with_progress(works: list, max_in_flight: int, show: bool = True) -> list:
    """Run the judge calls with a progress bar and a time estimate on stderr.

    Why: with the embedded CPU model a calibration takes tens of minutes; a silent command
    looks hung. Results come back in input order (errors re-raised), like `run_all`."""
    in_flight: InFlight = InFlight(max_in_flight)
    results: dict[int, object] = {}
    with tqdm(
        total=len(works), desc="calibrate", unit="traj", file=sys.stderr, disable=not show
    ) as bar:

        def collect(done) -> None:
            for item in done:
                results[item.key] = item.unwrap()
            bar.update(len(done))

        for index, work in enumerate(works):
            in_flight.submit(index, work)
            collect(in_flight.ready())
        while in_flight.outstanding:
            collect(_next_batch(in_flight))
    return [results[i] for i in range(len(works))]


def _next_batch(in_flight) -> list:
    """Wait briefly for the next finished units (so the bar moves while the rest run)."""
    done = in_flight.ready()
    while not done and in_flight.outstanding:
        time.sleep(0.05)
        done = in_flight.ready()
    return done


def calibrate_run(run_dir: str, limit: int | None = None, show_progress: bool = True) -> dict:
    config = BuildConfig.model_validate(json.loads(io.read_text(io.join(run_dir, "config.json"))))
    clients = shared_role_clients(config, run_dir)
    settings = config.quality.judge.settings
    judge = build_judge(config, clients)
    domains = RunDomains(config.domain_names)  # records name a plug-in by its short name
    trajectories = list(run_trajectories(run_dir, limit))
    if show_progress:
        print(
            f"judging {len(trajectories)} trajectories with {judge.name} "
            f"({settings.committee_size} call(s) each, up to {settings.max_attempts} attempts; "
            "the embedded CPU model takes seconds per call)",
            file=sys.stderr,
        )

    async def judged(t: Trajectory) -> Trajectory:
        judgement = await judge.judge(
            t, domains.get(t.task.domain).policy, derive_seed(t.id, "calibrate", 0)
        )
        return t.model_copy(update={"judgements": (*t.judgements, judgement)})

    results = judge_with_progress(
        [lambda t=t: judged(t) for t in trajectories],
        config.concurrency.max_in_flight,
        show_progress,
    )
    report = calibrate(results).model_dump(mode="json")
    report["judge"] = judge.name
    report["ungradeable"] = sum(
        1 for t in results if t.judgements and t.judgements[-1].status == "ungradeable"
    )

    ownership.write_text(run_dir, "calibration.json", json.dumps(report, indent=2))
    return report
