"""Pre-rollout task verification: refuse tasks that are broken or that a shortcut could solve.

Domain-agnostic: it only replays gold actions through the domain's `Toolbox` on fresh states
from `domain.initial_state`, and reads the task's scenario text. Checks run in a fixed order and
the first failure raises `TaskRejected` with its typed reason, so counters say why tasks die:

- gold_executes (`gold_action_failed`): every gold action runs without an error observation;
- not_already_solved (`already_solved`): a write task's start state is not already the gold state;
- gold_changes_state (`gold_no_state_change`): replaying the writes changes the state; a task
  with no writes must instead have expected outputs (something to find out);
- gold_hash_reproduced (`gold_action_failed`): replay ends at `gold_final_hash`;
- no_prefix_solves (`prefix_solves`): no strict prefix of the gold plan that drops a write
  already reaches the gold state (a redundant write would teach busywork);
- no_exposed_constant (`exposed_constant`): values the agent must look up (id- or amount-like
  strings in gold arguments, and every expected output) do not appear in the scenario text
  unless the user legitimately knows them (they are in known_info);
- no_tool_answer_fails (`no_tool_answer_succeeds`): a write task needs a write; a read-only
  task's expected outputs are not all already in the scenario.
"""

from __future__ import annotations

import re

from trajforge.generators.replays import gold_calls, replay_domain
from trajforge.generators.tooling import Domain, TaskRejected
from trajforge.generators.user_tools import world_toolbox
from trajforge.generators.values import leaf_strings
from trajforge.schemas import Task, TaskVerification

CHECKS = (
    "gold_executes",
    "not_already_solved",
    "gold_changes_state",
    "gold_hash_reproduced",
    "no_prefix_solves",
    "no_exposed_constant",
    "no_tool_answer_fails",
)

#: A gold argument counts as a looked-up constant when it has a digit and at least this many
#: characters (ids, amounts, zips); shorter values ("2") would match innocent text.
MIN_CONSTANT_LENGTH = 3


def _write_indices(domain: Domain, task: Task) -> list[int]:
    """Positions of gold actions whose tool is a state-changing write (not read/think/transfer),
    the user's own writes included (dual control)."""
    return [
        i
        for i, action in enumerate(task.gold_actions)
        if (spec := world_toolbox(domain).spec(action.name)) is not None and spec.kind == "write"
    ]


def _replay_hashes(domain: Domain, task: Task) -> list[str]:
    """State hash before any action and after each gold action, on one fresh state.

    A prefix's end state is the state after that many actions of the same replay (tools are
    deterministic), so one pass answers every prefix question. Only state-mutating tools are
    rehashed (reads keep the previous hash); the last entry is always a fresh hash. Synthesis
    already ran this replay (generators/replays.py), so in the same process it is not rerun.
    """
    replayed = replay_domain(domain, task.initial_state, gold_calls(task.gold_actions), True)
    if replayed.failed is not None:
        i, observation = replayed.failed
        raise TaskRejected(
            "gold_action_failed",
            f"gold action {i} {task.gold_actions[i].name} failed: {observation}",
            task,
        )
    assert replayed.hashes is not None
    return list(replayed.hashes)


def lookup_constants(task: Task) -> set[str]:
    """Values the agent must find with tools: id/amount-like gold arguments and expected outputs."""
    from_arguments = {
        s
        for action in task.gold_actions
        for s in leaf_strings(action.arguments)
        if len(s) >= MIN_CONSTANT_LENGTH and any(c.isdigit() for c in s)
    }
    return from_arguments | {o for o in task.expected_outputs if o.strip()}


_ASCII_WORD = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_DIGITS = frozenset("0123456789")


def _mentions(text: str, constant: str) -> bool:
    """Whole-token, case-insensitive: '54.20' is not mentioned by '154.20' or '54.205'.

    ASCII text (every generated scenario) is scanned with `str.find`: a pattern per constant
    overflowed `re`'s cache, so most calls compiled one (~3% of a rollout build's CPU). Other
    text keeps the regex, whose IGNORECASE folds Unicode case (tested to agree on ASCII)."""
    if not (text.isascii() and constant.isascii()):
        return _mentions_regex(text, constant)
    text, constant = text.lower(), constant.lower()
    start = text.find(constant)
    while start >= 0:
        end = start + len(constant)
        before_ok = start == 0 or text[start - 1] not in _ASCII_WORD
        after = text[end : end + 2]
        after_ok = not after or (
            after[0] not in _ASCII_WORD and not (after[0] == "." and after[1:] in _DIGITS)
        )
        if before_ok and after_ok:
            return True
        start = text.find(constant, start + 1)
    return False


def _mentions_regex(text: str, constant: str) -> bool:
    pattern = r"(?<![0-9A-Za-z_])" + re.escape(constant) + r"(?![0-9A-Za-z_]|\.[0-9])"
    return re.search(pattern, text, flags=re.IGNORECASE) is not None


def _scenario_text(task: Task, include_known: bool) -> str:
    s = task.scenario
    parts = [s.reason_for_contact, s.instructions, *s.unknown_info]
    if include_known:
        parts += [*s.known_info.keys(), *s.known_info.values()]
    return "\n".join(parts)


def _exposed_constants(task: Task) -> list[str]:
    known = "\n".join(task.scenario.known_info.values())
    told = _scenario_text(task, include_known=True)
    return sorted(
        c for c in lookup_constants(task) if _mentions(told, c) and not _mentions(known, c)
    )


def verify_task(domain: Domain, task: Task) -> Task:
    """The task with its verification record, or TaskRejected naming the first failed check."""
    passed: list[str] = []
    writes = _write_indices(domain, task)
    hashes = _replay_hashes(domain, task)  # raises gold_action_failed
    passed.append("gold_executes")

    if writes and hashes[0] == task.gold_final_hash:
        raise TaskRejected("already_solved", "the initial state already is the gold state", task)
    passed.append("not_already_solved")

    if writes and hashes[-1] == hashes[0]:
        raise TaskRejected("gold_no_state_change", "the gold writes change nothing", task)
    if not writes and not task.expected_outputs:
        raise TaskRejected(
            "gold_no_state_change", "read-only task with no expected outputs to find", task
        )
    passed.append("gold_changes_state")

    if hashes[-1] != task.gold_final_hash:
        raise TaskRejected(
            "gold_action_failed", "replaying the gold actions does not reach gold_final_hash", task
        )
    passed.append("gold_hash_reproduced")

    if writes:
        for k in range(1, writes[-1] + 1):
            if hashes[k] == task.gold_final_hash:
                raise TaskRejected(
                    "prefix_solves",
                    f"the first {k} of {len(task.gold_actions)} gold actions already reach the "
                    "gold state; a later write is redundant",
                    task,
                )
    passed.append("no_prefix_solves")

    exposed = _exposed_constants(task)
    if exposed:
        raise TaskRejected(
            "exposed_constant",
            f"the scenario gives away values the agent must look up: {exposed}",
            task,
        )
    passed.append("no_exposed_constant")

    if not writes:
        told = _scenario_text(task, include_known=True)
        if all(_mentions(told, o) for o in task.expected_outputs):
            raise TaskRejected(
                "no_tool_answer_succeeds",
                "every expected output is already in what the user says or knows",
                task,
            )
    elif hashes[0] == task.gold_final_hash:  # unreachable after not_already_solved; kept explicit
        raise TaskRejected("no_tool_answer_succeeds", "doing nothing reaches the gold state", task)
    passed.append("no_tool_answer_fails")

    verification = TaskVerification(checks_run=CHECKS, checks_passed=tuple(passed))
    return task.model_copy(update={"verification": verification})
