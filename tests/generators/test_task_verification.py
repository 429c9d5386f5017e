"""Pre-rollout task verification: each typed rejection on a hand-made task, and the pass rate."""

from __future__ import annotations

from collections import Counter

import pytest

from trajforge.generators.domains import get_domain
from trajforge.generators.domains.retail.tasks import gold_final_hash
from trajforge.generators.personas import sample_persona
from trajforge.generators.task_verification import CHECKS, lookup_constants, verify_task
from trajforge.generators.tooling import TaskRejected
from trajforge.schemas import GoldAction, InitialState, IntentCoordinates, Task, UserScenario

DOMAIN = get_domain("retail")
SEED = 21
PERSONA = sample_persona(3)
INIT = InitialState(seed=SEED)
STATE = DOMAIN.initial_state(INIT)
USER = STATE.users[sorted(STATE.users)[0]]
AUTH = (
    GoldAction(name="find_user_id_by_email", arguments={"email": USER.email}),
    GoldAction(name="get_user_details", arguments={"user_id": USER.user_id}),
)
NEW_ADDRESS = dict(
    address1="77 Lantern Ln",
    address2="",
    city="Millbrook",
    state_code="NY",
    country="USA",
    zip="40404",
)
KNOWN = {"name": f"{USER.name.first_name} {USER.name.last_name}", "email": USER.email}


def address_action(user_id: str = USER.user_id, **address) -> GoldAction:
    return GoldAction(name="modify_user_address", arguments={"user_id": user_id, **address})


def make_task(
    actions,
    *,
    known=None,
    instructions="Update your default address. End with ###STOP###.",
    expected_outputs=(),
    declared_hash=None,
    task_types=("update_user_address",),
) -> Task:
    actions = tuple(actions)
    return Task.create(
        domain="retail",
        intent=IntentCoordinates(
            persona_id=PERSONA.id, domain="retail", task_types=task_types, complexity=1
        ),
        persona=PERSONA,
        scenario=UserScenario(
            reason_for_contact="You want to update the account's address.",
            known_info=KNOWN if known is None else known,
            unknown_info=(),
            instructions=instructions,
        ),
        initial_state=INIT,
        gold_actions=actions,
        expected_outputs=tuple(expected_outputs),
        gold_final_hash=declared_hash or gold_final_hash(DOMAIN.toolbox, STATE, actions) or "",
    )


def rejection(task: Task) -> str:
    with pytest.raises(TaskRejected) as err:
        verify_task(DOMAIN, task)
    assert err.value.task == task
    return err.value.reason


GOOD_KNOWN = {**KNOWN, "new default address": "77 Lantern Ln, Millbrook, NY 40404, USA"}


def test_hand_made_good_task_passes():
    task = make_task([*AUTH, address_action(**NEW_ADDRESS)], known=GOOD_KNOWN)
    verified = verify_task(DOMAIN, task)
    assert verified.verification.checks_run == CHECKS
    assert verified.verification.passed
    assert verified.id == task.id  # verification is not part of the task's identity


def test_gold_that_is_already_solved_is_rejected():
    current = USER.address
    same = dict(
        address1=current.address1,
        address2=current.address2,
        city=current.city,
        state_code=current.state,
        country=current.country,
        zip=current.zip,
    )
    known = {**KNOWN, "address": current.address1}
    assert rejection(make_task([*AUTH, address_action(**same)], known=known)) == "already_solved"


def test_redundant_trailing_write_is_rejected_as_prefix_solves():
    write = address_action(**NEW_ADDRESS)
    task = make_task([*AUTH, write, write], known=GOOD_KNOWN)
    assert rejection(task) == "prefix_solves"


def test_write_undone_later_is_not_a_prefix_problem_but_changes_nothing():
    back = USER.address
    restore = address_action(
        address1=back.address1,
        address2=back.address2,
        city=back.city,
        state_code=back.state,
        country=back.country,
        zip=back.zip,
    )
    task = make_task([*AUTH, address_action(**NEW_ADDRESS), restore], known=GOOD_KNOWN)
    assert rejection(task) == "already_solved"  # ends where it started


def test_failing_gold_action_is_rejected():
    task = make_task(
        [*AUTH, address_action(user_id="nobody_0000", **NEW_ADDRESS)],
        known=GOOD_KNOWN,
        declared_hash="f" * 64,
    )
    assert rejection(task) == "gold_action_failed"


def test_declared_hash_not_reproduced_is_rejected():
    task = make_task(
        [*AUTH, address_action(**NEW_ADDRESS)], known=GOOD_KNOWN, declared_hash="0" * 64
    )
    assert rejection(task) == "gold_action_failed"


def test_write_that_changes_nothing_with_other_declared_hash_is_rejected():
    current = USER.address
    same = dict(
        address1=current.address1,
        address2=current.address2,
        city=current.city,
        state_code=current.state,
        country=current.country,
        zip=current.zip,
    )
    task = make_task([*AUTH, address_action(**same)], known=KNOWN, declared_hash="0" * 64)
    assert rejection(task) == "gold_no_state_change"


def test_read_only_task_without_outputs_is_rejected():
    task = make_task(AUTH, task_types=("order_status",))
    assert rejection(task) == "gold_no_state_change"


def test_exposed_lookup_constant_is_rejected():
    write = address_action(**NEW_ADDRESS)
    leak = f"Your user id is {USER.user_id}. Update your address. End with ###STOP###."
    assert rejection(make_task([*AUTH, write], known=GOOD_KNOWN, instructions=leak)) == (
        "exposed_constant"
    )


def test_constant_in_known_info_is_not_exposed():
    write = address_action(**NEW_ADDRESS)
    text = "Move to 77 Lantern Ln, Millbrook, NY 40404. End with ###STOP###."
    assert verify_task(DOMAIN, make_task([*AUTH, write], known=GOOD_KNOWN, instructions=text))
    # ...but the same text is a leak when the user is not supposed to know the zip:
    no_zip = {**KNOWN, "new street": "77 Lantern Ln"}
    assert rejection(make_task([*AUTH, write], known=no_zip, instructions=text)) == (
        "exposed_constant"
    )


def _status_task(**over) -> Task:
    order = STATE.orders[USER.orders[0]]
    actions = [*AUTH, GoldAction(name="get_order_details", arguments={"order_id": order.order_id})]
    return make_task(
        actions,
        task_types=("order_status",),
        expected_outputs=(order.status,),
        instructions=f"Ask about order {order.order_id}. End with ###STOP###.",
        **over,
    )


def test_read_only_task_with_unknown_output_passes():
    order = STATE.orders[USER.orders[0]]
    task = _status_task(known={**KNOWN, "order": order.order_id})
    assert verify_task(DOMAIN, task).verification.passed


def test_expected_output_in_instructions_is_exposed():
    order = STATE.orders[USER.orders[0]]
    task = _status_task(known={**KNOWN, "order": order.order_id})
    leaky = task.scenario.model_copy(
        update={"instructions": f"Your order is {order.status}. End with ###STOP###."}
    )
    assert rejection(task.model_copy(update={"scenario": leaky})) == "exposed_constant"


def test_read_only_answer_the_user_already_knows_is_rejected():
    order = STATE.orders[USER.orders[0]]
    task = _status_task(known={**KNOWN, "order": order.order_id, "status": order.status})
    assert rejection(task) == "no_tool_answer_succeeds"


def test_lookup_constants_are_ids_amounts_and_outputs():
    task = _status_task(known=KNOWN)
    constants = lookup_constants(task)
    assert USER.user_id in constants and task.expected_outputs[0] in constants
    assert USER.name.first_name not in constants  # no digit: a name, not a looked-up id


def test_synthesized_task_passes():
    task = DOMAIN.synthesize_task(PERSONA, 5)
    verified = verify_task(DOMAIN, task)
    assert verified.verification.passed and verified.verification.checks_passed == CHECKS


@pytest.mark.slow  # a whole build or long run: the tier CI also runs
def test_most_synthesized_tasks_pass(capsys):
    reasons: Counter[str] = Counter()
    for seed in range(200):
        task = DOMAIN.synthesize_task(sample_persona(seed), 1000 + seed)
        try:
            verify_task(DOMAIN, task)
            reasons["passed"] += 1
        except TaskRejected as err:
            reasons[err.reason] += 1
    rate = reasons["passed"] / 200
    with capsys.disabled():
        print(f"\nretail task verification pass rate: {rate:.1%} {dict(reasons)}")
    assert rate >= 0.9, reasons


def test_mentions_agrees_with_its_regex_definition():
    """The str.find scan for ASCII text against the regex it replaced, on random texts made of
    the characters that decide a match (word characters, '.', digits, case, spaces)."""
    import random

    from trajforge.generators.task_verification import _mentions, _mentions_regex

    rng = random.Random(7)
    alphabet = "aAbB01._ -#@"
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        constant = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4)))
        if rng.random() < 0.5 and text:  # often a constant that does occur in the text
            i = rng.randrange(len(text))
            constant = text[i : i + rng.randint(1, 4)].swapcase()
        assert _mentions(text, constant) == _mentions_regex(text, constant), (text, constant)
    assert _mentions("total 54.20 now", "54.20") and not _mentions("154.20", "54.20")
    assert not _mentions("54.205", "54.20") and not _mentions("54.20.5", "54.20")
    assert _mentions("order #W1 é", "#w1")  # non-ASCII text: the regex path
