"""`trajforge verify`: the gate over trajectories already on disk, one verdict per line.

Input is a JSONL file of `Trajectory` records (one per line) or a finished run directory (its
`data/*.parquet` rows carry `trajectory_json`). Nothing is generated: an old build can be
re-filtered with new rules, another system's trajectories checked as they are. Every non-LLM
check runs always; with `--config` the config's filters and domains (plugins included) are used,
without it a run directory's own `config.json` names its domains (a plug-in's import path),
and when that config enables `quality.judge` the LLM judge grades each trajectory too (its
verdict joins the others, and its calls go through the same client, cache and limits as a build).
"""

from __future__ import annotations

import glob
import json
import os
from collections import Counter
from collections.abc import Iterator
from itertools import islice
from pathlib import Path

from trajforge.generators.llm.concurrency import run_all
from trajforge.generators.run_domains import RunDomains
from trajforge.pipelines.config import BuildConfig
from trajforge.pipelines.io import iter_parquet
from trajforge.pipelines.resources import StageResources
from trajforge.schemas import Trajectory, derive_seed
from trajforge.verifiers.filters import DEFAULT_FILTERS, build_filters
from trajforge.verifiers.gate import GateReason, Verdict, gate_verdict
from trajforge.verifiers.protocol import run_filter

#: Trajectories judged concurrently per batch: bounds memory for a large input while keeping
#: `concurrency.max_in_flight` calls busy.
JUDGE_BATCH = 512


def read_trajectories(source: str) -> Iterator[Trajectory]:
    """Trajectories from a JSONL file or a run directory's data shards, in a stable order."""
    if os.path.isdir(source):
        shards = sorted(glob.glob(os.path.join(source, "data", "*.parquet")))
        if not shards:
            raise FileNotFoundError(f"{source} has no data/*.parquet (is it a finished run?)")
        for shard in shards:
            for row in iter_parquet(shard, ["trajectory_json"]):
                yield Trajectory.from_json(row["trajectory_json"])
        return
    with open(source, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if line.strip():
                try:
                    yield Trajectory.from_json(line)
                except ValueError as err:
                    raise ValueError(f"{source} line {number} is not a Trajectory: {err}") from None


def _batches(items: Iterator[Trajectory], size: int) -> Iterator[list[Trajectory]]:
    while batch := list(islice(items, size)):
        yield batch


class _Checker:
    """The verdicts for one batch: the non-LLM gate, plus the judge when the config has one."""

    def __init__(self, config: BuildConfig | None, cache_dir: str, domains: RunDomains):
        self.config = config
        self.filters = build_filters(config.quality.filters if config else DEFAULT_FILTERS)
        self.judging = bool(config and config.quality.judge.enabled)
        self.resources = None
        if config is not None:
            self.resources = StageResources(config, cache_dir, needs_llm=self.judging)
            self.resources.setup()
        self.domains = domains

    def domain(self, name: str):
        if self.resources is not None:
            return self.resources.domain_for(name)
        return self.domains.get(name)

    def verdicts(self, batch: list[Trajectory]) -> list[Verdict]:
        verdicts = [gate_verdict(t, self.domain(t.task.domain), self.filters) for t in batch]
        if not self.judging:
            return verdicts
        judged = self._judge(batch)
        return [self._with_judge(v, t) for v, t in zip(verdicts, judged, strict=True)]

    def _judge(self, batch: list[Trajectory]) -> list[Trajectory]:
        """Each trajectory with the judge's judgement appended (same seed as a build's judge
        stage, so a build's cached judgements replay)."""
        res = self.resources
        assert res is not None and res.roles is not None and self.config is not None

        async def judged(t: Trajectory) -> Trajectory:
            policy = res.domain_for(t.task.domain).policy
            judgement = await res.roles.judge.judge(t, policy, derive_seed(t.id, "judge", 0))
            return t.model_copy(update={"judgements": (*t.judgements, judgement)})

        works = [lambda t=t: judged(t) for t in batch]
        return run_all(works, self.config.concurrency.max_in_flight)

    def _with_judge(self, verdict: Verdict, judged: Trajectory) -> Verdict:
        assert self.resources is not None and self.resources.gates is not None
        gate = self.resources.gates.judge
        result = run_filter(gate, judged, self.resources.context_for(judged.task.domain))
        if result.passed:
            return verdict
        assert result.reason is not None
        reason = GateReason(check=gate.name, reason=result.reason, detail=result.detail)
        return verdict.model_copy(update={"kept": False, "reasons": (*verdict.reasons, reason)})


def source_domains(source: str) -> RunDomains:
    """The domains a source's records may name: a run directory's own (its config.json keeps
    a plug-in's import path; records keep only its short name), else the built-in ones."""
    return RunDomains.of_local_run(source) if os.path.isdir(source) else RunDomains()


def verify_file(source: str, output: str, config: BuildConfig | None = None) -> Counter:
    """Write one `Verdict` per trajectory to `output`; return counts (kept, and per reason).
    Without a config: the default filters over the run's (or the built-in) domains, no judge. A config's
    response cache (when enabled) lives next to `output`, so re-verifying is free."""
    cache_dir = str(Path(output).resolve().parent)
    checker = _Checker(config, cache_dir, source_domains(source))
    counts: Counter = Counter()
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    with open(output, "w", encoding="utf-8") as out:
        for batch in _batches(read_trajectories(source), JUDGE_BATCH):
            for verdict in checker.verdicts(batch):
                out.write(json.dumps(verdict.model_dump(mode="json"), sort_keys=True) + "\n")
                counts["kept" if verdict.kept else "rejected"] += 1
                counts.update(f"reason.{r.reason}" for r in verdict.reasons)
    return counts
