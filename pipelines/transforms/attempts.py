"""Beam wrappers of k attempts per task: fan a task out into K attempts, and group the passing
attempts back per task (pipelines/attempts.py holds the logic).

`GroupAttempts` co-groups the tasks that were rolled out with the attempts that passed every
gate, by task id. Each task yields its distinct passing attempts (difficulty attached) on the
main output, repeats and tasks without a pass on "rejected", and its `TaskDifficulty` on
"difficulty" (the build's summary). One shuffle of the passing trajectories and the tasks;
a group holds at most K trajectories, never the dataset.
"""

from __future__ import annotations

import json
import traceback

import apache_beam as beam

from trajforge.pipelines import io, ownership
from trajforge.pipelines.attempts import (
    STAGE,
    TaskDifficultyRow,
    difficulty_summary,
    expand_attempts,
    group_attempts,
)
from trajforge.pipelines.transforms.routing import (
    DEAD,
    KEPT,
    REJECTED,
    StageCounters,
    dead_letter_for,
)
from trajforge.pipelines.transforms.text_file import WriteTextFile

DIFFICULTY = "difficulty"


class ExpandAttempts(beam.PTransform):
    """Task -> K `TaskAttempt`s (the Generate stage's elements)."""

    def __init__(self, k: int):
        super().__init__()
        self.k = k

    def expand(self, tasks):
        k = self.k
        # The K attempts of a task are K rollouts' worth of work: spread them over workers.
        return (
            tasks
            | "FanOut" >> beam.FlatMap(lambda task: expand_attempts(task, k))
            | "ReshuffleAttempts" >> beam.Reshuffle()
        )


class GroupAttemptsFn(beam.DoFn):
    """(task id, {"task": [Task], "passed": [Trajectory...]}) -> kept / rejected / difficulty;
    an error dead-letters each passing attempt of the task (one record per attempt, so the
    accounting still holds)."""

    def __init__(self, k: int, run_dir: str):
        self.k = k
        self.run_dir = run_dir

    def setup(self):
        self.counters = StageCounters(STAGE, self.run_dir)

    def process(self, element):
        _, grouped = element
        tasks, passed = list(grouped["task"]), list(grouped["passed"])
        try:
            if not tasks:
                raise ValueError("passing attempts of a task that was never rolled out")
            group = group_attempts(tasks[0], passed, self.k, copies=len(tasks))
        except Exception as err:  # noqa: BLE001 - every attempt is routed, never lost
            tb = traceback.format_exc()
            for trajectory in passed:
                self.counters.inc(f"{STAGE}.dead_letter")
                yield beam.pvalue.TaggedOutput(DEAD, dead_letter_for(STAGE, trajectory, err, tb))
            return
        self.counters.inc("difficulty.tasks")
        self.counters.inc(f"difficulty.successes.{group.task_difficulty.difficulty.successes}")
        yield beam.pvalue.TaggedOutput(DIFFICULTY, group.task_difficulty)
        for rejection in group.rejections:
            self.counters.inc(f"{STAGE}.rejected.{rejection.reason}")
            yield beam.pvalue.TaggedOutput(REJECTED, rejection)
        for trajectory in group.kept:
            self.counters.inc(f"{STAGE}.kept")
            yield trajectory

    def finish_bundle(self):
        self.counters.flush()


class GroupAttempts(beam.PTransform):
    """{"task": tasks rolled out, "passed": attempts that passed every gate} -> per task."""

    def __init__(self, k: int, run_dir: str):
        super().__init__()
        self.k = k
        self.run_dir = run_dir

    def expand(self, inputs):
        keyed = {
            "task": inputs["task"] | "KeyTasks" >> beam.Map(lambda t: (t.id, t)),
            "passed": inputs["passed"] | "KeyPassed" >> beam.Map(lambda t: (t.task.id, t)),
        }
        return (
            keyed
            | "ByTask" >> beam.CoGroupByKey()
            | "Group"
            >> beam.ParDo(GroupAttemptsFn(self.k, self.run_dir)).with_outputs(
                REJECTED, DEAD, DIFFICULTY, main=KEPT
            )
        )


def _summary_json(labelled, k: int) -> str:
    return json.dumps(difficulty_summary(labelled, k), sort_keys=True)


class WriteDifficulty(beam.PTransform):
    """Every rolled-out task's `TaskDifficulty` -> one `TaskDifficultyRow` per task in
    <run_dir>/difficulty/*.jsonl, and <run_dir>/difficulty.json (the summary the manifest and
    card show; the summary gathers one small record per task on one worker)."""

    def __init__(self, run_dir: str, k: int):
        super().__init__()
        self.run_dir = run_dir
        self.k = k

    def expand(self, labelled):
        gathered = labelled | "Gather" >> beam.combiners.ToList()
        gathered | "WriteRows" >> beam.Map(_write_rows, self.run_dir)
        return (
            gathered
            | "Summary" >> beam.Map(_summary_json, self.k)
            | "Write" >> WriteTextFile(io.DIFFICULTY_FILE, self.run_dir)
        )


def _write_rows(labelled, run_dir: str) -> str:
    """difficulty/difficulty-00000-of-00001.jsonl, lines sorted (a retry writes the same
    bytes), written as the run's own file (`ownership.create`): Beam's `WriteToText` renamed
    files the run's ledger never saw. The summary gathers the same records on one worker."""
    lines = sorted(TaskDifficultyRow.of(t).to_json() for t in labelled)
    name = f"{io.DIFFICULTY_DIR}/{io.DIFFICULTY_DIR}-00000-of-00001.jsonl"
    return ownership.write_text(run_dir, name, "".join(line + "\n" for line in lines))
