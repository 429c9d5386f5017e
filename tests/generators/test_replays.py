"""Memoised replays: the same hashes as replaying by hand, computed once, keyed by content."""

from __future__ import annotations

import pytest

from trajforge.generators import replays
from trajforge.generators.domains import get_domain
from trajforge.generators.personas import sample_persona
from trajforge.generators.replays import gold_calls, replay_domain, run_replay
from trajforge.generators.task_verification import verify_task
from trajforge.generators.tooling import TaskRejected, state_hash
from trajforge.schemas import GoldAction, InitialState, ToolCall
from trajforge.verifiers.outcome import replay_hash

DOMAIN = get_domain("retail")


@pytest.fixture(autouse=True)
def fresh_memo():
    replays.MEMO.clear()
    yield
    replays.MEMO.clear()
    replays.MEMO.enabled = True


def a_task(index: int = 0):
    for seed in range(index, index + 50):
        try:
            return DOMAIN.synthesize_task(sample_persona(seed), seed)
        except TaskRejected:
            continue
    raise AssertionError("no task synthesized")


def by_hand(task, calls) -> list[str]:
    """The reference: execute on a fresh state, dump and hash after every write."""
    state = DOMAIN.initial_state(task.initial_state)
    hashes = [state_hash(state)]
    for call in calls:
        execution = DOMAIN.toolbox.execute(state, call)
        hashes.append(state_hash(state) if execution.mutating else hashes[-1])
    hashes[-1] = state_hash(state)
    return hashes


def test_replay_matches_replaying_by_hand():
    task = a_task()
    calls = gold_calls(task.gold_actions)
    replays.MEMO.enabled = False
    fresh = replay_domain(DOMAIN, task.initial_state, calls, prefixes=True)
    assert list(fresh.hashes) == by_hand(task, calls)
    assert fresh.final == task.gold_final_hash and fresh.failed is None


def test_synthesis_leaves_the_replay_that_verification_and_outcome_reuse():
    task = a_task()  # synthesis replays the gold plan once, with every prefix hash
    misses = replays.MEMO.misses
    verify_task(DOMAIN, task)
    assert replay_hash(DOMAIN, task.initial_state, gold_calls(task.gold_actions)) == (
        task.gold_final_hash
    )
    assert replays.MEMO.misses == misses  # neither replayed again


def test_edited_calls_and_another_world_miss_the_memo():
    task = a_task()
    calls = gold_calls(task.gold_actions)
    replay_domain(DOMAIN, task.initial_state, calls)
    renamed = [c.model_copy(update={"id": f"other_{i}"}) for i, c in enumerate(calls)]
    hits = replays.MEMO.hits
    replay_domain(DOMAIN, task.initial_state, renamed)  # ids do not change what tools do
    assert replays.MEMO.hits == hits + 1
    dropped = replay_domain(DOMAIN, task.initial_state, calls[:-1])
    assert dropped.final == by_hand(task, calls[:-1])[-1]
    # another world: the next seed, without this task's patches (they name its own user)
    other = InitialState(seed=task.initial_state.seed + 1)
    misses = replays.MEMO.misses
    replay_domain(DOMAIN, other, calls)
    assert replays.MEMO.misses == misses + 1


def test_a_failed_call_is_reported_and_the_replay_goes_on():
    task = a_task()
    bad = ToolCall(id="x", name="get_order_details", arguments={"order_id": "#nope"})
    calls = [bad, *gold_calls(task.gold_actions)]
    result = run_replay(DOMAIN.toolbox, DOMAIN.initial_state(task.initial_state), calls, True)
    assert result.failed is not None and result.failed[0] == 0
    assert result.final == task.gold_final_hash  # a failed read changes nothing


def test_verification_reports_the_failed_gold_action_from_the_memo():
    task = a_task()
    broken = GoldAction(name="cancel_pending_order", arguments={"order_id": "#W0", "reason": "x"})
    bad = task.model_copy(update={"gold_actions": (*task.gold_actions, broken)})
    with pytest.raises(TaskRejected) as err:
        verify_task(DOMAIN, bad)
    assert err.value.reason == "gold_action_failed"
    assert f"gold action {len(task.gold_actions)} cancel_pending_order failed" in err.value.detail


def test_memo_is_bounded():
    memo = replays.ReplayMemo(maxsize=2)
    for key in "abc":
        memo.put(key, replays.Replay(final=key))
    assert memo.get("a") is None and memo.get("c").final == "c"


def test_fast_replay_paths_match_replaying_by_hand_over_many_tasks():
    """The final hash taken from the last write's dump, and a replay on a state the caller
    built (`built`), give exactly the hand replay's hashes, for plans ending in a read or a
    write and for a plan with a failing write."""
    replays.MEMO.enabled = False
    endings, failures = set(), 0
    for index in range(0, 60, 3):
        task = a_task(index)
        calls = gold_calls(task.gold_actions)
        endings.add(DOMAIN.toolbox.spec(calls[-1].name).mutates_state)
        expected = by_hand(task, calls)
        built = DOMAIN.initial_state(task.initial_state)
        for result in (
            replay_domain(DOMAIN, task.initial_state, calls, prefixes=True),
            replays.replay(
                DOMAIN.name,
                DOMAIN.toolbox,
                DOMAIN.initial_state,
                task.initial_state,
                calls,
                True,
                built,
            ),
        ):
            assert list(result.hashes) == expected and result.final == expected[-1]
        assert replay_domain(DOMAIN, task.initial_state, calls).final == expected[-1]
        failing = [*calls, ToolCall(id="x", name=calls[-1].name, arguments=calls[-1].arguments)]
        if DOMAIN.toolbox.spec(calls[-1].name).mutates_state:  # the same write again
            again = replay_domain(DOMAIN, task.initial_state, failing, prefixes=True)
            assert list(again.hashes) == by_hand(task, failing)
            failures += again.failed is not None  # a cancelled order cannot be cancelled twice
    assert endings == {True, False} and failures > 0


def test_plan_search_and_replays_with_held_dumps_make_the_same_tasks(monkeypatch):
    """Synthesis (plan search, gold replay, gold hash) with one held dump per working state
    (`LiveDump`) makes exactly the tasks it makes dumping afresh around every write."""
    from trajforge.generators.tooling import LiveDump

    def tasks() -> list[str]:
        replays.MEMO.clear()
        out = []
        for seed in range(24):
            try:
                out.append(DOMAIN.synthesize_task(sample_persona(seed), seed).model_dump_json())
            except TaskRejected as err:
                out.append(err.reason)
        return out

    held = tasks()
    monkeypatch.setattr(LiveDump, "SHARE", False)
    assert held == tasks()
    assert sum(t.startswith("{") for t in held) >= 12
