"""Fault planters for the labelled corruption benchmark (corruption_bench.py).

Each planter takes a real trajectory (oracle or blueprint, kept by the gate) and returns a
variant, or None when the trajectory has nothing to plant the fault on (a write-only fault on a
read-only task). Planters edit only what the agent and user *say and call*; `rebuild` then
re-executes every call through the domain's toolbox on a fresh state, so tool results, steps and
the final-state hash are real, never hand-written.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from types import MappingProxyType

from trajforge.generators.tooling import Domain, state_hash
from trajforge.schemas import DiffEntry, Message, StepRecord, ToolCall, Trajectory

Talk = list[Message]  # system, user and assistant messages (tool messages are regenerated)
Planter = Callable[[Trajectory, Domain, random.Random], Trajectory | None]


def talk_of(trajectory: Trajectory) -> Talk:
    return [m for m in trajectory.messages if m.role != "tool"]


def rebuild(trajectory: Trajectory, domain: Domain, talk: Talk) -> Trajectory:
    """Re-execute every call of `talk` on a fresh state: real results, steps and final hash
    (`StepRecord.turn` counts user turns, as a rollout records it, not messages)."""
    state = domain.initial_state(trajectory.task.initial_state)
    messages: list[Message] = []
    steps: list[StepRecord] = []
    user_turns = 0
    for message in talk:
        messages.append(message)
        user_turns += message.role == "user"
        for call in message.tool_calls:
            run = domain.toolbox.execute(state, call)
            messages.append(
                Message(role="tool", content=run.observation, tool_call_id=call.id, name=call.name)
            )
            steps.append(
                StepRecord(
                    index=len(steps),
                    turn=user_turns,  # as a rollout records it: user turns so far
                    call=call,
                    result=None if run.error else run.observation,
                    error=run.observation if run.error else None,
                    state_diff=tuple(DiffEntry.model_validate(d.model_dump()) for d in run.diff),
                    mutating=run.mutating,
                )
            )
    return Trajectory.create(
        **{
            **{k: getattr(trajectory, k) for k in ("task", "mode", "termination", "provenance")},
            "messages": tuple(messages),
            "steps": tuple(steps),
            "final_state_hash": state_hash(state),
        }
    )


# --- small helpers over the talk ---------------------------------------------------------------


def _calls(talk: Talk) -> list[int]:
    return [i for i, m in enumerate(talk) if m.tool_calls]


def _writes(talk: Talk, domain: Domain) -> list[int]:
    return [
        i
        for i in _calls(talk)
        if any(domain.toolbox.spec(c.name).mutates_state for c in talk[i].tool_calls)
    ]


def _call_msg(name: str, n: int, **arguments) -> Message:
    return Message(
        role="assistant", tool_calls=(ToolCall(id=f"plant_{n}", name=name, arguments=arguments),)
    )


def _closing(talk: Talk) -> int:
    return max(i for i, m in enumerate(talk) if m.role == "assistant" and m.content)


def _say(talk: Talk, index: int, extra: str) -> Talk:
    """Append a sentence to the agent text at `index`."""
    m = talk[index]
    return [
        *talk[:index],
        m.model_copy(update={"content": f"{extra} {m.content}"}),
        *talk[index + 1 :],
    ]


def _user_and_orders(trajectory: Trajectory, domain: Domain) -> tuple[str, list[str], dict]:
    """The authenticated user, their order ids, and every order in the world by id."""
    state = domain.initial_state(trajectory.task.initial_state)
    user = next(s.result for s in trajectory.steps if s.call.name.startswith("find_user_id"))
    return user, list(state.users[user].orders), state.orders


def _touched(trajectory: Trajectory) -> set[str]:
    return {c.arguments["order_id"] for c in trajectory.tool_calls() if "order_id" in c.arguments}


def _worked_order(trajectory: Trajectory) -> str | None:
    ids = [c.arguments["order_id"] for c in trajectory.tool_calls() if "order_id" in c.arguments]
    return ids[-1] if ids else None


# --- bad: policy -------------------------------------------------------------------------------


def no_confirmation(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    talk = talk_of(t)
    writes = _writes(talk, d)
    if not writes or writes[0] < 2:
        return None
    w = writes[0]  # drop the confirmation prompt and the user's yes before the first write
    return rebuild(t, d, [*talk[: w - 2], *talk[w:]])


def write_after_refusal(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    talk = talk_of(t)
    writes = _writes(talk, d)
    if not writes:
        return None
    reply = writes[0] - 1
    no = Message(role="user", content=rng.choice(["No, please don't do that.", "No, wait."]))
    return rebuild(t, d, [*talk[:reply], no, *talk[reply + 1 :]])


def act_before_auth(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    talk = talk_of(t)
    calls = _calls(talk)
    if len(calls) < 2:
        return None
    a, b = calls[0], calls[1]  # the lookup that authenticates, and the first call after it
    talk[a], talk[b] = talk[b], talk[a]
    return rebuild(t, d, talk)


def other_user_read(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    user, mine, orders = _user_and_orders(t, d)
    theirs = sorted(o for o, order in orders.items() if order.user_id != user)
    talk = talk_of(t)
    at = _calls(talk)[0] + 1
    read = _call_msg("get_order_details", 1, order_id=rng.choice(theirs))
    return rebuild(t, d, [*talk[:at], read, *talk[at:]])


def parallel_calls(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    talk = talk_of(t)
    calls = _calls(talk)
    pairs = [(a, b) for a, b in zip(calls, calls[1:], strict=False) if b == a + 1]
    if not pairs:
        return None
    a, b = rng.choice(pairs)
    merged = talk[a].model_copy(update={"tool_calls": (*talk[a].tool_calls, *talk[b].tool_calls)})
    return rebuild(t, d, [*talk[:a], merged, *talk[b + 1 :]])


def needless_transfer(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    talk = talk_of(t)
    at = _closing(talk)
    transfer = _call_msg("transfer_to_human_agents", 1, summary="customer request")
    return rebuild(t, d, [*talk[:at], transfer, *talk[at:]])


def two_writes_one_confirmation(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    talk = talk_of(t)
    writes = _writes(talk, d)
    if len(writes) < 2:
        return None
    first, second = writes[0], writes[1]  # move the second write right after the first
    moved = [*talk[: first + 1], talk[second], *talk[first + 1 : second - 2], *talk[second + 1 :]]
    return rebuild(t, d, moved)


# --- bad: grounding ----------------------------------------------------------------------------


def wrong_status_claim(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    order = _worked_order(t)
    if order is None:
        return None
    _, _, orders = _user_and_orders(t, d)
    seen = {orders[o].status for o in _touched(t)}  # an unnamed claim may mean any of them
    for s in t.steps:
        if s.result and '"status"' in s.result:
            seen.add(json.loads(s.result).get("status"))
    wrong = sorted({"pending", "processed", "delivered", "cancelled"} - seen)
    if not wrong:
        return None
    talk = talk_of(t)
    return rebuild(t, d, _say(talk, _closing(talk), f"That order is {rng.choice(wrong)}."))


def invented_address(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    street = f"{rng.randint(100, 999)} {rng.choice(['Maple', 'Juniper', 'Orchard'])} {rng.choice(['St', 'Ave', 'Rd'])}"
    talk = talk_of(t)
    return rebuild(t, d, _say(talk, _closing(talk), f"I will ship it to {street}."))


def wrong_object(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    order = _worked_order(t)
    user, mine, orders = _user_and_orders(t, d)
    if order is None:
        return None
    status = orders[order].status
    others = sorted(o for o in mine if o != order and orders[o].status != status)
    if not others:
        return None
    talk = talk_of(t)
    claim = f"Order {rng.choice(others)} is {status}."
    return rebuild(t, d, _say(talk, _closing(talk), claim))


def passive_narration(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    order = _worked_order(t)
    if order is None:
        return None
    done = {c.name for c in t.tool_calls()}
    verb = next(
        (
            v
            for v, tool in (
                ("cancelled", "cancel"),
                ("returned", "return"),
                ("exchanged", "exchange"),
            )
            if not any(tool in n for n in done)
        ),
        None,
    )
    if verb is None:
        return None
    talk = talk_of(t)
    return rebuild(t, d, _say(talk, _closing(talk), f"Your order {order} has been {verb}."))


def narration_other_object(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    user, mine, orders = _user_and_orders(t, d)
    written = {c.arguments.get("order_id") for c in t.tool_calls()}
    others = sorted(o for o in mine if o not in written and orders[o].status != "cancelled")
    if not others:
        return None
    talk = talk_of(t)
    return rebuild(
        t, d, _say(talk, _closing(talk), f"I have cancelled order {rng.choice(others)}.")
    )


# --- bad: user fidelity, loops, outcome -----------------------------------------------------------


def user_speaks_as_agent(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    talk = talk_of(t)
    users = [i for i, m in enumerate(talk) if m.role == "user"][1:-1] or [1]
    i = rng.choice(users)
    text = "Thank you for contacting us! Is there anything else I can help you with?"
    return rebuild(t, d, [*talk[:i], Message(role="user", content=text), *talk[i + 1 :]])


def user_invents_facts(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    talk = talk_of(t)
    i = next(i for i, m in enumerate(talk) if m.role == "user")
    fact = f"My other order is #W{rng.randint(1000000, 9999999)} and I paid $812.40 for it."
    m = talk[i]
    return rebuild(
        t, d, [*talk[:i], m.model_copy(update={"content": f"{m.content} {fact}"}), *talk[i + 1 :]]
    )


def near_identical_retries(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    talk = talk_of(t)
    reads = [i for i in _calls(talk) if talk[i].tool_calls[0].name == "get_order_details"]
    if not reads:
        return None
    i = reads[0]
    oid = talk[i].tool_calls[0].arguments["order_id"]
    variants = [oid.lower(), f" {oid} ", oid.lstrip("#")]
    retries = [_call_msg("get_order_details", n, order_id=v) for n, v in enumerate(variants[:2])]
    return rebuild(t, d, [*talk[:i], *retries, *talk[i:]])


def two_cycle_reads(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    talk = talk_of(t)
    user, mine, _ = _user_and_orders(t, d)
    if len(mine) < 2:
        return None
    a, b = mine[0], mine[1]
    at = _calls(talk)[1] + 1
    cycle = [_call_msg("get_order_details", n, order_id=o) for n, o in enumerate([a, b, a, b])]
    return rebuild(t, d, [*talk[:at], *cycle, *talk[at:]])


def outcome_not_told(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    talk = talk_of(t)
    if not _writes(talk, d) or t.task.expected_outputs:
        return None  # with expected outputs the outcome check already refuses a silent closing
    i = _closing(talk)
    quiet = Message(
        role="assistant", content="All set. Is there anything else I can help you with?"
    )
    return rebuild(t, d, [*talk[:i], quiet, *talk[i + 1 :]])


# --- good variants ---------------------------------------------------------------------------

_PARAPHRASES = (  # stock pieces of the drafts (generators/voice.py, generators/agent_voice.py)
    ("could you please tell me", "may I have"),
    ("Could you", "Would you"),
    ("could you", "would you"),
    ("which order would you like to", "which order do you wish to"),
    ("is there anything else I can help you with?", "can I help with anything else today?"),
    ("please go ahead", "please do it"),
    ("Thank you", "Many thanks"),
    ("I've ", "I have "),
    ("Thanks", "Thank you"),
)


def paraphrase(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    talk = []
    for m in talk_of(t):
        text = m.content
        for old, new in _PARAPHRASES:
            text = text.replace(old, new) if text else text
        talk.append(m.model_copy(update={"content": text}))
    return rebuild(t, d, talk)


def extra_read(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    talk = talk_of(t)
    at = _calls(talk)[0] + 1
    return rebuild(t, d, [*talk[:at], _call_msg("list_all_product_types", 1), *talk[at:]])


def reordered_reads(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    """Read two of the user's orders (after the user's details) in the other order."""
    talk = talk_of(t)
    _, mine, _ = _user_and_orders(t, d)
    if len(mine) < 2:
        return None
    at = _calls(talk)[1] + 1
    reads = [_call_msg("get_order_details", n, order_id=o) for n, o in enumerate(mine[:2])]
    return rebuild(t, d, [*talk[:at], reads[1], reads[0], *talk[at:]])


def original(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    return t


#: Class name -> (planter, label). Bad classes must be rejected, good ones kept.
CLASSES: MappingProxyType[str, tuple[Planter, str]] = MappingProxyType(
    {
        **{
            f.__name__: (f, "bad")
            for f in (
                no_confirmation,
                write_after_refusal,
                act_before_auth,
                other_user_read,
                parallel_calls,
                needless_transfer,
                two_writes_one_confirmation,
                wrong_status_claim,
                invented_address,
                wrong_object,
                passive_narration,
                narration_other_object,
                user_speaks_as_agent,
                user_invents_facts,
                near_identical_retries,
                two_cycle_reads,
                outcome_not_told,
            )
        },
        **{f.__name__: (f, "good") for f in (original, paraphrase, extra_read, reordered_reads)},
    }
)
