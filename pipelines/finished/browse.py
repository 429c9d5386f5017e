"""Reading a finished run back for people: kept and rejected trajectories, as transcripts.

Shared by `trajforge show` (terminal) and `trajforge report` (HTML), so both render the same
turns: roles, tool calls with their arguments, results or errors, the state each call changed,
and the outcome with its reasons.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator

from trajforge.pipelines import io
from trajforge.schemas import Record, Rejection, Trajectory


class Turn(Record):
    """One block of a transcript: a speaker, its text, and indented detail lines."""

    role: str
    text: str = ""
    details: tuple[str, ...] = ()


class Sample(Record):
    """A trajectory as people see it: where it ended up and why."""

    id: str
    status: str  # the split it was kept in, or `rejected`
    reason: str = ""
    detail: str = ""
    turns: tuple[Turn, ...] = ()


def kept(
    run_dir: str, split: str | None = None, batch_rows: int = 1024
) -> Iterator[tuple[str, Trajectory]]:
    """(split, trajectory) of kept rows, in file order, read `batch_rows` at a time (a caller
    that stops after n rows reads about n)."""
    for name in io.SPLITS:
        if split is not None and name != split:
            continue
        for path in io.split_files(run_dir, name):
            for row in io.iter_parquet(path, ["trajectory_json"], batch_rows):
                yield name, Trajectory.from_json(row["trajectory_json"])


def rejected(run_dir: str, reason: str | None = None) -> Iterator[Rejection]:
    for r in io.jsonl_records(run_dir, io.REJECTED_DIR):
        if reason is None or r["reason"] == reason:
            yield Rejection.model_validate(r)


def _payload_trajectory(rejection: Rejection) -> Trajectory | None:
    """The rejected record as a trajectory, when it is one (task-level rejections are not)."""
    try:
        data = json.loads(rejection.payload_json)
    except ValueError:
        return None
    if isinstance(data, dict) and "messages" in data and "steps" in data:
        return Trajectory.model_validate(data)
    return None


def _json(value) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def transcript(trajectory: Trajectory) -> tuple[Turn, ...]:
    """Messages in order; each tool result carries the state diff of its call; then outcome."""
    steps = {s.call.id: s for s in trajectory.steps}
    turns = []
    for m in trajectory.messages:
        details = tuple(f"call {c.name}({_json(c.arguments)})" for c in m.tool_calls)
        if m.role == "tool" and m.tool_call_id in steps:
            step = steps[m.tool_call_id]
            details = tuple(
                f"state {d.path}: {_json(d.before)} -> {_json(d.after)}" for d in step.state_diff
            )
        turns.append(Turn(role=m.role, text=m.content or "", details=details))
    outcome = trajectory.outcome
    if outcome is not None:
        verdict = "passed" if outcome.passed else "failed"
        turns.append(Turn(role="outcome", text=f"{verdict}: {outcome.reason}"))
    for j in trajectory.judgements:
        scores = ", ".join(f"{a.axis}={a.score:.2f}" for a in j.axes)
        turns.append(Turn(role="judge", text=f"{j.judge} ({j.status}): {scores}"))
    return tuple(turns)


def kept_samples(run_dir: str, split: str | None, n: int) -> list[Sample]:
    """The first `n` kept rows as transcripts: only those rows are read (batches of n), never
    a whole shard."""
    rows = itertools.islice(kept(run_dir, split, batch_rows=max(1, n)), n)
    return [Sample(id=t.id, status=name, turns=transcript(t)) for name, t in rows]


def rejected_samples(run_dir: str, reason: str | None, n: int) -> list[Sample]:
    """The first `n` rejections (of `reason`, if given) as samples: the JSONL shards are
    streamed line by line and left once n are found."""
    out = []
    for r in rejected(run_dir, reason):
        if len(out) >= n:
            break
        t = _payload_trajectory(r)
        out.append(
            Sample(
                id=r.record_id,
                status=f"rejected at {r.stage}",
                reason=r.reason,
                detail=r.detail,
                turns=transcript(t) if t is not None else (),
            )
        )
    return out
