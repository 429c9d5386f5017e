import asyncio

import pytest

from trajforge.generators.blueprint import run_blueprint
from trajforge.generators.blueprint_plan import (
    execute_skeleton,
    info_slots,
    needs_info,
    plan_blueprint,
)
from trajforge.generators.domains import get_domain
from trajforge.generators.entities import check_entities
from trajforge.generators.llm.responders import RESPONDERS
from trajforge.generators.llm.scripted import ScriptedLLM
from trajforge.generators.personas import sample_persona
from trajforge.generators.prompts import STOP_TOKEN
from trajforge.generators.user import asks_confirmation
from trajforge.generators.values import entity_tokens, mentions_value
from trajforge.generators.verbalise import clean_utterance
from trajforge.schemas import GoldAction, Provenance, Rejected, ToolCall
from trajforge.verifiers.dialogue import is_affirmation
from trajforge.verifiers.hallucination import check_hallucinated_values
from trajforge.verifiers.outcome import verify_outcome
from trajforge.verifiers.signatures import check_answer_before_evidence
from trajforge.verifiers.text import argument_values


def blueprint(task, domain, llm, provenance, **kw):
    return asyncio.run(
        run_blueprint(task, domain, llm, model="m", seed=3, provenance=provenance, **kw)
    )


def assert_valid_tool_use(messages):
    pending = []
    for m in messages:
        if m.role == "tool":
            assert pending and m.tool_call_id == pending.pop(0)
        else:
            assert not pending
            pending = [c.id for c in m.tool_calls]
    assert not pending


def test_entity_check_requires_and_forbids():
    facts = ["order #W123 total 54.20", "ann@example.com"]
    assert check_entities("Your order #W123 costs $54.2.", ["54.20"], facts).ok
    missing = check_entities("Your order costs a lot.", ["54.20"], facts)
    assert missing.missing == ("54.20",) and not missing.ok
    invented = check_entities("Order #W999 for 54.20, mail bo@x.org", ["54.20"], facts)
    assert set(invented.invented) == {"#W999", "bo@x.org"}
    assert check_entities("Refund of 13.99 on 1234567", [], facts).invented == ("13.99", "1234567")


def test_entity_helpers():
    assert mentions_value("It is $1,054.20 now", "1054.2")
    assert mentions_value("status: Pending", "pending")
    assert not mentions_value("It is 54.21", "54.20")
    assert entity_tokens("#W1, a@b.co and 12.50.") == ["#W1", "a@b.co", "12.50"]


def test_clean_utterance():
    assert clean_utterance('Customer: "Hi there."\n\nAgent: hello') == "Hi there."


def test_plan_orders_info_confirmation_calls_and_summary(toy_task, toy_domain):
    _, calls = execute_skeleton(toy_task, toy_domain)
    plan = plan_blueprint(toy_task, calls)
    kinds = [getattr(i, "speaker", None) or i.call.name for i in plan]
    assert kinds == [
        "user",
        "assistant", "user",  # account id
        "assistant", "user",  # email
        "get_account",
        "assistant", "user",  # confirm the deposit
        "deposit",
        "assistant", "user",  # summary, close
    ]  # fmt: skip
    assert plan[-2].required == ("125.50",) and plan[2].required == ("#A1001",)


def test_scripted_blueprint_is_model_written_valid_and_passes_outcome(
    toy_task, toy_domain, provenance
):
    llm = ScriptedLLM(responder=RESPONDERS["blueprint"])
    traj = blueprint(toy_task, toy_domain, llm, provenance)
    assert traj.termination == "blueprint_complete" and traj.mode == "blueprint"
    assert traj.messages[0].role == "system" and traj.messages[1].role == "user"
    assert traj.messages[-1].content.endswith(STOP_TOKEN)
    assert_valid_tool_use(traj.messages)
    assert traj.verbalisation.model_written == 9
    assert traj.verbalisation.templated == 0
    assert traj.cost.llm_calls == 9
    assert verify_outcome(traj, toy_domain).passed
    again = blueprint(
        toy_task, toy_domain, ScriptedLLM(responder=RESPONDERS["blueprint"]), provenance
    )
    assert again.id == traj.id


def test_bad_writer_falls_back_to_templates(toy_task, toy_domain, provenance):
    llm = ScriptedLLM(responder=lambda req: "Sure! Order #W999 costs 12.34. How can I help you?")
    traj = blueprint(toy_task, toy_domain, llm, provenance, max_retries=2)
    assert traj.verbalisation.templated == 9
    assert traj.cost.llm_calls == 27
    assert len({r.seed for r in llm.requests}) == 27
    assert not any("#W999" in (m.content or "") for m in traj.messages)
    assert verify_outcome(traj, toy_domain).passed


def test_failing_gold_action_is_rejected(toy_task, toy_domain, provenance):
    broken = toy_task.model_copy(
        update={
            "gold_actions": (
                GoldAction(name="deposit", arguments={"account_id": "#nope", "amount": 1.0}),
            )
        }
    )
    with pytest.raises(Rejected) as err:
        blueprint(broken, toy_domain, ScriptedLLM(responder=RESPONDERS["blueprint"]), provenance)
    assert err.value.reason == "generation_failed"


def test_acceptable_rejects_garbage_rewrites():
    from trajforge.generators.blueprint_plan import Utterance
    from trajforge.generators.verbalise import acceptable

    close = Utterance("user", "No, that's all. Thank you!", (), ())
    ask = Utterance("assistant", "Could you please tell me the email?", (), ())
    give = Utterance("user", "My email is a@b.co.", ("a@b.co",), ("a@b.co",))
    assert acceptable("That's all, thank you so much!", close)
    assert not acceptable("Rhea is a small-bakery owner who buys gifts.", close)  # meaning lost
    assert acceptable("What email address is on the account?", ask)
    assert not acceptable("Draft: [DRAFT] what is your email", ask)  # prompt leak
    assert acceptable("Sure, my email is a@b.co", give)
    assert not acceptable("I'd be happy to help! Your email is a@b.co", give)  # role confusion
    assert not acceptable("My email is c@d.co.", give)  # missing and invented


def retail_blueprints(seeds):
    """Scripted blueprint trajectories for the retail tasks synthesized from `seeds`."""
    domain = get_domain("retail")
    llm = ScriptedLLM(responder=RESPONDERS["blueprint"])
    for seed in seeds:
        task = domain.synthesize_task(sample_persona(seed), seed)
        provenance = Provenance(models={"blueprint": "scripted"}, seeds={"blueprint": 0})
        yield blueprint(task, domain, llm, provenance), domain


def _call_positions(messages):
    return [i for i, m in enumerate(messages) if m.tool_calls]


def test_needs_info_matches_argument_values_as_whole_tokens():
    by_name = ToolCall(
        id="c", name="find_user_id_by_name_zip", arguments={"first_name": "Ann", "zip": "12345"}
    )
    assert needs_info(by_name, "Ann Lee") and needs_info(by_name, "12345")
    assert not needs_info(by_name, "Annabel Lee")
    order = ToolCall(id="c", name="get_order_details", arguments={"order_id": "#W1001"})
    assert needs_info(order, "#W1001") and not needs_info(order, "#W100")


def test_toy_info_slots_ask_account_before_lookup(toy_task, toy_domain):
    _, calls = execute_skeleton(toy_task, toy_domain)
    # account id is needed by get_account; the email no call needs follows the item before it
    assert info_slots(dict(toy_task.scenario.known_info), calls) == [0, 0]


@pytest.mark.parametrize("seed", range(6))
def test_retail_blueprint_authenticates_right_after_the_user_identifies(seed):
    ((traj, _),) = retail_blueprints([seed])
    messages = traj.messages
    first = _call_positions(messages)[0]
    call = messages[first].tool_calls[0]
    assert call.name in ("find_user_id_by_email", "find_user_id_by_name_zip")
    given = messages[first - 1]
    assert given.role == "user"
    if call.name == "find_user_id_by_email":
        assert call.arguments["email"] in given.content
    else:
        assert call.arguments["zip"] in given.content
        assert call.arguments["first_name"] in messages[first - 3].content
    # the profile read follows the lookup at once, with no question in between
    assert messages[first + 2].tool_calls[0].name == "get_user_details"


@pytest.mark.parametrize("seed", range(6))
def test_retail_blueprint_confirms_each_write_right_before_it(seed):
    ((traj, domain),) = retail_blueprints([seed])
    messages = traj.messages
    writes = [s for s in traj.steps if s.mutating]
    assert writes
    for step in writes:
        at = next(i for i, m in enumerate(messages) if step.call in m.tool_calls)
        ask, yes = messages[at - 2], messages[at - 1]
        assert ask.role == "assistant" and asks_confirmation(ask.content)
        assert step.call.arguments.get("order_id", "") in ask.content
        assert yes.role == "user" and is_affirmation(yes.content)


@pytest.mark.parametrize("seed", range(12))
def test_retail_blueprint_values_come_before_their_use(seed):
    ((traj, domain),) = retail_blueprints([seed])
    messages = traj.messages
    assert_valid_tool_use(messages)
    assert [s.call.name for s in traj.steps] == [a.name for a in traj.task.gold_actions]
    assert traj.final_state_hash == traj.task.gold_final_hash
    for at in _call_positions(messages):
        seen = " ".join(
            m.content or "" for m in messages[:at] if m.role in ("user", "tool")
        ).lower()
        for call in messages[at].tool_calls:
            for value in argument_values(call.arguments):
                assert value.removeprefix("amount:").lower() in seen, (call.name, value)
    assert check_hallucinated_values(traj).passed
    assert check_answer_before_evidence(traj).passed
    assert verify_outcome(traj, domain).passed


def test_retail_blueprint_looks_an_order_up_right_after_the_user_names_it():
    looked_up = 0
    for traj, _ in retail_blueprints(range(12)):
        messages = traj.messages
        for at in _call_positions(messages):
            call = messages[at].tool_calls[0]
            order = call.arguments.get("order_id")
            if (
                call.name != "get_order_details"
                or order not in traj.task.scenario.known_info.values()
            ):
                continue
            first_said = next(
                i for i, m in enumerate(messages) if m.role == "user" and order in (m.content or "")
            )
            if first_said < at:  # named for this lookup, not for an earlier one of the same order
                looked_up += messages[at - 1].role == "user" and order in messages[at - 1].content
    assert looked_up >= 6


class FailingEndpoint:
    """Every call fails after a short wait, two in flight at a time (like a client's limit)."""

    def __init__(self):
        self.calls = 0
        self.gate = None

    async def complete(self, request):
        from trajforge.schemas import LLMError

        self.gate = self.gate or asyncio.Semaphore(2)
        async with self.gate:
            self.calls += 1
            await asyncio.sleep(0.01)
            raise LLMError("HTTP 500 from the endpoint")


def test_a_failed_element_stops_paying(toy_task, toy_domain, provenance):
    """One failed utterance fails the element: the others are cancelled, not sent. The loop
    lives on after the element failed, as a worker's does (asyncio.run would cancel orphans)."""
    from trajforge.schemas import LLMError

    _, calls = execute_skeleton(toy_task, toy_domain)
    utterances = sum(1 for i in plan_blueprint(toy_task, calls) if hasattr(i, "speaker"))
    llm = FailingEndpoint()

    async def element_then_more_work():
        with pytest.raises(LLMError):
            await run_blueprint(toy_task, toy_domain, llm, model="m", seed=3, provenance=provenance)
        await asyncio.sleep(0.2)  # the worker's loop goes on with other elements

    asyncio.run(element_then_more_work())
    # the two in flight, and at most the two let in as they failed; before: every utterance
    assert utterances >= 6 and llm.calls <= 4
