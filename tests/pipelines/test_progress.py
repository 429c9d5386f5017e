"""Progress: per-stage counts from the first tally, plain lines when not on a terminal."""

import io
import json
import time

from trajforge.pipelines import ownership
from trajforge.pipelines.progress import PROGRESS_DIR, ProgressReporter, StageProgress

COUNTERS = {
    "synthesize.kept": 10,
    "synthesize.rejected.no_feasible_task": 2,
    "verify_task.kept": 9,
    "verify_task.rejected.prefix_solves": 1,
    "blueprint.kept": 4,
    "blueprint.dead_letter": 1,
    "outcome.kept": 3,
    "outcome.rejected.state_mismatch": 1,
    "split.kept": 0,
    "tokens.llm_calls": 20,
    "tokens.prompt_tokens": 900,
    "tokens.completion_tokens": 100,
}


def test_stage_progress_counts_each_stage_and_moves_before_anything_is_kept():
    p = StageProgress.of(COUNTERS)
    assert (p.synthesized, p.verified, p.generated, p.outcome_ok, p.kept) == (10, 9, 4, 3, 0)
    assert p.rejected == 4 and p.failed == 1
    assert p.prepared == 9 + 2 + 1  # verified + dropped while preparing
    assert p.done == 4 + 2 + 1 + 1  # generated + dropped before or during generation
    assert p.fraction(16) == (12 + 8) / 32
    assert p.tokens == 1000
    assert p.rates_text(10.0) == "2.0 calls/s 100 tok/s"


def write_tally(run_dir, counts):
    """As a worker's tally does: recorded as the run's (so the reporter may delete it)."""
    ownership.ensure_dir(str(run_dir), PROGRESS_DIR)
    ownership.record(str(run_dir), [f"{PROGRESS_DIR}/1.json"])
    (run_dir / PROGRESS_DIR / "1.json").write_text(json.dumps(counts))


def test_plain_mode_writes_a_few_short_lines(tmp_path):
    out = io.StringIO()
    write_tally(tmp_path, {"synthesize.kept": 1})
    with ProgressReporter(str(tmp_path), 16, plain=True, plain_every_s=0.2, stream=out):
        time.sleep(0.8)
        write_tally(tmp_path, COUNTERS)
        time.sleep(0.8)
    lines = out.getvalue().splitlines()
    assert lines[0].endswith("building 16 tasks")
    assert "synthesized 1 " in lines[1]
    assert "62% of 16 tasks" in lines[-1] and "outcome-ok 3" in lines[-1]
    assert 3 <= len(lines) <= 1 + 1.6 / 0.2 + 2  # a line per period, not per half second
    assert "\r" not in out.getvalue() and all(len(line) < 200 for line in lines)
    assert not (tmp_path / PROGRESS_DIR).exists()


def test_plain_mode_prints_a_line_every_period_even_when_nothing_changes(tmp_path):
    """A non-terminal log gets a line at least every `plain_every_s` seconds: a model that
    takes minutes per stage must not leave the log silent (issue 29: 18 minutes of nothing)."""
    out = io.StringIO()
    write_tally(tmp_path, {"synthesize.kept": 16, "verify_task.kept": 16})
    with ProgressReporter(str(tmp_path), 16, plain=True, plain_every_s=0.3, stream=out):
        time.sleep(2.0)
    lines = out.getvalue().splitlines()[1:]
    assert len(lines) >= 3, lines  # a check every 0.5 s: ~4 periods, counts unchanged
    seconds = [int(line[1:6]) for line in lines]
    assert seconds == sorted(seconds)


def test_bar_mode_draws_stage_counts(tmp_path):
    out = io.StringIO()
    write_tally(tmp_path, COUNTERS)
    with ProgressReporter(str(tmp_path), 16, plain=False, stream=out):
        time.sleep(0.8)
    text = out.getvalue()
    assert "62%" in text and "generated 4" in text and "calls/s" in text


def test_progress_counts_k_attempts_back_into_tasks():
    """With rollout.attempts K, generation reports attempts: `done` divides them into tasks."""
    counters = {
        "synthesize.kept": 4,
        "verify_task.kept": 4,
        "rollout.kept": 5,
        "rollout.dead_letter": 1,  # 6 attempts of K=2 past generation: 3 tasks
        "baseline.rejected.shortcut_prone_task": 1,
    }
    p = StageProgress.of(counters, attempts=2)
    assert p.done == 3 + 1 and p.fraction(4) == (4 + 4) / 8
    assert StageProgress.of(counters).done == 6 + 1
