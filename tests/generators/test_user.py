import asyncio

import pytest

from trajforge.generators.domains.retail.tasks import VOCABULARY as RETAIL
from trajforge.generators.domains.toy.tasks import VOCABULARY as TOY_VOCABULARY
from trajforge.generators.llm.scripted import ScriptedLLM
from trajforge.generators.prompts import AGENT_GREETING, STOP_TOKEN, role_reminder
from trajforge.generators.user import (
    LLMUser,
    ScriptedUser,
    flip_roles,
    looks_like_agent,
    needed_info,
    stop_reason,
)
from trajforge.schemas import Message, ToolCall
from trajforge.verifiers.dialogue import is_affirmation, is_refusal


def run(coro):
    return asyncio.run(coro)


@pytest.mark.parametrize(
    "text",
    [
        "Hello! How can I help you today?",
        "How may I assist you?",
        "I have cancelled your order #W123.",
        "I've updated the address on your order.",
        'Sure: <tool_call>{"name": "cancel_order", "arguments": {}}</tool_call>',
        '{"name": "get_order", "arguments": {"order_id": "#W1"}}',
        "Is there anything else I can help you with?",
    ],
)
def test_agent_like_text_is_role_confusion(text):
    assert looks_like_agent(text, RETAIL.action_verbs)


@pytest.mark.parametrize(
    "text",
    [
        "Hi, I want to cancel my order #W123.",
        "My email is ann@example.com.",
        "Can you help me with a refund?",
        "Yes, please go ahead.",
        "Thanks, that's all. ###STOP###",
    ],
)
def test_customer_text_is_not_role_confusion(text):
    assert not looks_like_agent(text, RETAIL.action_verbs)


def test_narrated_verbs_are_the_domains():
    assert not looks_like_agent("I have cancelled your order #W123.")  # not a generic verb
    assert not looks_like_agent("I've deposited the money.")
    assert looks_like_agent("I've deposited the money.", TOY_VOCABULARY.action_verbs)


def test_stop_reason_tokens():
    assert stop_reason("done ###STOP###") == "user_stop"
    assert stop_reason("###TRANSFER###") == "transfer"
    assert stop_reason("###OUT-OF-SCOPE###") == "out_of_scope"
    assert stop_reason("thanks") is None


def test_flip_roles_puts_agent_text_as_user_and_skips_tool_traffic():
    conversation = [
        Message(role="user", content="hi"),
        Message(role="assistant", content=None, tool_calls=(ToolCall(id="c", name="x"),)),
        Message(role="assistant", content="Your email?"),
    ]
    flipped = flip_roles(conversation)
    assert [(m.role, m.content) for m in flipped] == [
        ("user", AGENT_GREETING),
        ("assistant", "hi"),
        ("user", "Your email?"),
    ]


def test_llm_user_prompt_carries_persona_and_scenario(toy_task):
    llm = ScriptedLLM(replies=["I want to deposit money."])
    turn = run(LLMUser(llm, "m", toy_task).reply([], seed=3))
    assert turn.message.role == "user" and turn.stop is None and not turn.role_confused
    system = llm.requests[0].messages[0].content
    assert toy_task.persona.name in system and "Short and direct." in system
    assert "#A1001" in system and "the current balance" in system and STOP_TOKEN in system
    assert llm.requests[0].seed == 3 and llm.requests[0].tools == ()
    assert turn.cost.llm_calls == 1


def test_llm_user_retries_once_with_reminder_then_recovers(toy_task):
    llm = ScriptedLLM(replies=["How can I help you today?", "I need to deposit money."])
    turn = run(LLMUser(llm, "m", toy_task).reply([], seed=1))
    assert turn.message.content == "I need to deposit money." and not turn.role_confused
    assert llm.requests[1].messages[-1].content == role_reminder()
    assert llm.requests[0].seed != llm.requests[1].seed
    assert turn.cost.llm_calls == 2


def test_llm_user_marks_persistent_role_confusion(toy_task):
    call = Message(role="assistant", tool_calls=(ToolCall(id="a", name="deposit"),))
    llm = ScriptedLLM(replies=[call, "I have updated your account."])
    turn = run(LLMUser(llm, "m", toy_task).reply([], seed=1))
    assert turn.role_confused


def test_llm_user_stop_token_ends(toy_task):
    llm = ScriptedLLM(replies=["Great, thanks! ###STOP###"])
    conversation = [Message(role="user", content="hi"), Message(role="assistant", content="done")]
    assert run(LLMUser(llm, "m", toy_task).reply(conversation, seed=1)).stop == "user_stop"


def _said(user, *agent_texts):
    conversation = [Message(role="user", content="hello")]
    for text in agent_texts:
        conversation.append(Message(role="assistant", content=text))
    return user.next_text(conversation)


def test_scripted_user_opens_with_reason_and_answers_by_keyword(toy_task):
    user = ScriptedUser(toy_task)
    opening = user.next_text([])
    body = toy_task.scenario.reason_for_contact.split(" want to ", 1)[1].rstrip(".")
    assert body.replace("your", "my") in opening  # the reason, in the persona's own words
    assert "ann@example.com" in _said(user, "What is your email address?")
    assert "#A1001" in _said(user, "Could you give me the account id?")
    unknown = _said(user, "What is the current balance you expect?")
    assert "know" in unknown.lower() and not any(ch.isdigit() for ch in unknown)


def test_scripted_user_confirms_and_stops(toy_task):
    user = ScriptedUser(toy_task)
    assert is_affirmation(_said(user, "I will deposit 25.50. Do you confirm (yes/no)?"))
    told = [Message(role="user", content="It is #A1001.")]
    done = Message(role="assistant", content="All done. Anything else?")
    assert run(user.reply([*told, done], 0)).stop == "user_stop"


def _asking(toy_task, requests: str):
    scenario = toy_task.scenario.model_copy(update={"instructions": requests})
    return toy_task.model_copy(update={"scenario": scenario})


def test_scripted_user_restates_a_request_the_agent_never_asked_the_details_of(toy_task):
    """An agent that says it is done while what the user's request names and the gold plan's
    calls take (here the account id) was never said by either side has not served the
    request: the user says so, gives the first missing piece, and stops the next time (each
    piece restated once)."""
    user = ScriptedUser(_asking(toy_task, "1. Deposit 25.50 dollars into account #A1001."))
    done = Message(role="assistant", content="Your balance is 100.00. Anything else?")
    reply = run(user.reply([done], 0))
    assert reply.stop is None
    text = reply.message.content
    assert "deposit 25.50 dollars into my account" in text and "#A1001" in text
    assert not is_affirmation(text) and not is_refusal(text)  # no answer to a confirmation
    again = [done, reply.message, done]
    assert run(user.reply(again, 0)).stop == "user_stop"
    # an agent that says it (here: what it did with it) needed no restating
    acted = Message(role="assistant", content="Deposited 25.50 into #A1001. Anything else?")
    assert run(user.reply([acted], 0)).stop == "user_stop"


def test_needed_info_is_the_known_info_a_request_names_and_a_gold_call_takes(toy_task):
    """Named by a request and taken by a call: the amount ("25.50" is the call's 25.5) and
    the account. Not the email (no request names it: the agent may have looked it up), not
    the name (no call takes it)."""
    known = {"name": "Ann", "amount": "25.50", "account id": "#a1001", "email": "a@x.org"}
    task = _asking(toy_task, "You are Ann. 1. Deposit 25.50 dollars into account #A1001.")
    scenario = task.scenario.model_copy(update={"known_info": known})
    task = task.model_copy(update={"scenario": scenario})
    assert needed_info(task) == (("amount", "25.50"), ("account id", "#a1001"))
    assert needed_info(toy_task) == ()  # its instructions name no value


def test_first_person_reason():
    from trajforge.generators.prompts import first_person

    reason = "You want to return items you received, then update the account's address."
    assert first_person(reason) == (
        "Hi, I want to return items I received, then update my account's address."
    )
