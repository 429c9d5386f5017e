"""Fault planters for quality gate v3 (issue 27): the subtler classes, and good variants a real
model writes, so false positives are measured as hard as misses.

Every class picks among several wordings with the planter's seeded rng (never one phrasing the
checks could be tuned to). Bad: a claim bound to the wrong object (active voice, or the id
attached to the action), an invented address spelled out without a zip, a user who states the
status the agent must look up or facts in words its scenario lacks, a user who speaks as the
agent in paraphrase or narrates, a turn that is only a name or a value or echoes the last one,
and a closing that summarises instead of telling each write. Good: paraphrased confirmations,
a reordered closing with another sign-off, a shown address restated with its street type
spelled out, a user who asks about a status, a user who gives their name in a sentence.
"""

from __future__ import annotations

import json
import random
import re
from types import MappingProxyType

from corruption_planters import (
    Planter,
    Talk,
    _closing,
    _say,
    _user_and_orders,
    _writes,
    rebuild,
    talk_of,
)

from trajforge.generators.reports import WriteOutcome
from trajforge.generators.tooling import Domain
from trajforge.generators.value_grammar import STREET_TYPES, addresses_in
from trajforge.generators.values import mentions_value
from trajforge.schemas import StepRecord, Trajectory
from trajforge.verifiers.claims import SENTENCE
from trajforge.verifiers.outcome import output_objects

_PAST = {"cancel": "cancelled", "return": "returned", "exchange": "exchanged", "modify": "changed"}


def _replace(talk: Talk, index: int, text: str) -> Talk:
    return [*talk[:index], talk[index].model_copy(update={"content": text}), *talk[index + 1 :]]


def _user_turns(talk: Talk) -> list[int]:
    return [i for i, m in enumerate(talk) if m.role == "user" and m.content]


def _written(t: Trajectory) -> list[tuple[str, str]]:
    """(order id, past-tense verb) of each successful write on an order."""
    out = []
    for s in t.steps:
        oid = s.call.arguments.get("order_id")
        verb = _PAST.get(s.call.name.split("_")[0])
        if s.mutating and s.error is None and oid and verb:
            out.append((oid, verb))
    return out


def _other_order(t: Trajectory, d: Domain, rng: random.Random, read: bool) -> str | None:
    """One of the user's orders no write touched (preferably one the agent read)."""
    _, mine, _ = _user_and_orders(t, d)
    written = {oid for oid, _ in _written(t)}
    looked = {c.arguments.get("order_id") for c in t.tool_calls()}
    pool = [o for o in mine if o not in written and (o in looked or not read)]
    pool = pool or [o for o in mine if o not in written]
    return rng.choice(sorted(pool)) if pool else None


def _scenario_text(t: Trajectory) -> str:
    s = t.task.scenario
    return " ".join([s.reason_for_contact, s.instructions, *s.known_info.values()]).lower()


# --- bad: claims bound to the wrong object --------------------------------------------------


def _claim_on_other(
    t: Trajectory, d: Domain, rng: random.Random, read: bool, wordings: tuple[str, ...]
) -> Trajectory | None:
    """The verb of a write really done, said of an order no write touched (`read`: prefer one
    the agent only read), in one of `wordings` at the head of the closing."""
    writes, other = _written(t), _other_order(t, d, rng, read=read)
    if not writes or other is None:
        return None
    said = rng.choice(wordings).format(v=rng.choice(writes)[1], o=other)
    talk = talk_of(t)
    return rebuild(t, d, _say(talk, _closing(talk), said))


def active_claim_other_object(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    """The verb of a real write, said in the active voice about another order."""
    return _claim_on_other(
        t,
        d,
        rng,
        False,
        (
            "I have also {v} order {o}.",
            "I went ahead and {v} {o} as well.",
            "Good news: we've {v} your order {o} too.",
            "On top of that, I {v} order {o} for you.",
            "I've additionally {v} {o}.",
        ),
    )


def id_on_wrong_action(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    """The action done, with the id of an order the agent only read attached to it."""
    return _claim_on_other(
        t,
        d,
        rng,
        True,
        (
            "The order I {v} is {o}.",
            "Just so you know, {o} is the one I {v}.",
            "{o} is the order I just {v}.",
            "To be clear, what I {v} was order {o}.",
        ),
    )


_STREETS = ("Hollow", "Sparrow", "Kestrel", "Briar", "Thistle", "Alder", "Marigold", "Heron")
_FULL_TYPES = tuple(k.title() for k in STREET_TYPES if k not in ("loop", "row", "pike", "close"))


def _street(rng: random.Random) -> str:
    return f"{rng.randint(10, 9999)} {rng.choice(_STREETS)} {rng.choice(_FULL_TYPES)}"


def invented_address_spelled(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    """An address no tool showed, street type spelled out, no zip."""
    said = rng.choice(
        (
            "I'll send the replacement to {a}.",
            "Your order will ship to {a}.",
            "The address on file is {a}.",
            "Everything goes to {a} from now on.",
        )
    ).format(a=_street(rng))
    talk = talk_of(t)
    return rebuild(t, d, _say(talk, _closing(talk), said))


# --- bad: user turns beyond their scenario ---------------------------------------------------


def _status_of_worked(t: Trajectory, d: Domain) -> str | None:
    """The status the agent reads for an order the conversation is about (the answer)."""
    for s in t.steps:
        if s.call.name == "get_order_details" and s.result:
            return json.loads(s.result).get("status")
    return None


def _append_to_opening(t: Trajectory, d: Domain, extra: str) -> Trajectory:
    talk = talk_of(t)
    i = _user_turns(talk)[0]
    return rebuild(t, d, _replace(talk, i, f"{talk[i].content} {extra}"))


def user_states_status(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    """The opening already says the status the agent is about to look up, in words."""
    status = _status_of_worked(t, d)
    if not status or status in _scenario_text(t):
        return None
    said = rng.choice(
        (
            "I can see it's {s} on my end.",
            "It already shows as {s}.",
            "The tracking page says it is {s}.",
            "My order is {s}, I checked this morning.",
            "I know it was {s} already.",
        )
    ).format(s=status)
    return _append_to_opening(t, d, said)


_MONTHS = ("March", "April", "June", "September", "October", "November")


def user_invents_facts_in_words(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    """Facts the scenario does not hold, in forms without a token the digit rule keeps."""
    said = rng.choice(
        (
            f"I moved to {_street(rng)} last month.",
            f"I placed it on {rng.choice(_MONTHS)} {rng.randint(2, 28)}th.",
            f"I paid ${rng.randint(120, 980)} for it.",
            f"It should have gone to {_street(rng)} instead.",
            f"I ordered it on the {rng.randint(4, 20)}th of {rng.choice(_MONTHS)}.",
        )
    )
    return _append_to_opening(t, d, said)


def user_paraphrases_agent(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    """A user turn in the agent's words, with none of the stock agent phrases."""
    talk = talk_of(t)
    users = _user_turns(talk)[1:-1] or _user_turns(talk)[:1]
    said = rng.choice(
        (
            "Let me pull up your account real quick.",
            "One moment while I look into your order.",
            "I can see your order here, give me a second.",
            "Sure, I'm checking your order details now.",
            "Could you please confirm your email address for me?",
            "Allow me to bring up your purchase history.",
        )
    )
    return rebuild(t, d, _replace(talk, rng.choice(users), said))


def user_narrates(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    """A user turn that narrates the customer in the third person."""
    talk = talk_of(t)
    name = t.task.persona.name
    reason = t.task.scenario.reason_for_contact.rstrip(".").lower()
    said = rng.choice(
        (
            f"{name}, the customer, wants to sort out an order.",
            "The customer would like help with an order.",
            f"{name.split()[0]} is asking about an order and wants it handled today.",
            "The user then confirms the details.",
            f"The customer says: {reason}.",
        )
    )
    users = _user_turns(talk)
    return rebuild(t, d, _replace(talk, rng.choice(users[:-1] or users), said))


# --- bad: degenerate turns --------------------------------------------------------------------


def name_only_user(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    """The user's answer collapsed to the persona's name ("Dario Marlowe,")."""
    talk = talk_of(t)
    name = t.task.persona.name
    giving = [i for i in _user_turns(talk) if name.split()[0] in (talk[i].content or "")]
    if not giving:
        return None
    said = rng.choice((f"{name},", name, f"{name}.", name.split()[0], f"{name.split()[0]}!"))
    return rebuild(t, d, _replace(talk, giving[0], said))


_VALUE = re.compile(r"#W\d{7}|[\w.+-]+@[\w-]+(?:\.[\w-]+)+|\b\d{5}\b")


def value_only_user(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    """A user turn reduced to the one value it carried ("#W1234567.")."""
    talk = talk_of(t)
    carrying = [i for i in _user_turns(talk)[1:] if _VALUE.search(talk[i].content or "")]
    if not carrying:
        return None
    i = rng.choice(carrying)
    value = rng.choice(_VALUE.findall(talk[i].content or ""))
    said = rng.choice((value, f"{value}.", f" {value} ", f"{value}!"))
    return rebuild(t, d, _replace(talk, i, said))


def echo_turn(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    """A turn that says the previous turn again (the user echoes the agent's question)."""
    talk = talk_of(t)
    after_agent = [
        i for i in _user_turns(talk)[1:] if talk[i - 1].role == "assistant" and talk[i - 1].content
    ]
    if not after_agent:
        return None
    i = rng.choice(after_agent)
    echoed = talk[i - 1].content or ""
    said = rng.choice((echoed, echoed.lower(), echoed.rstrip("?.!")))
    return rebuild(t, d, _replace(talk, i, said))


# --- bad: a closing that summarises the writes ------------------------------------------------


def _outcome(step: StepRecord) -> WriteOutcome:
    return WriteOutcome.of(step.call.name, step.call.arguments, (e.after for e in step.state_diff))


def summary_closing(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    """The write reports dropped for a summary; the answers to questions stay."""
    talk = talk_of(t)
    told = [_outcome(s) for s in t.steps if s.mutating and s.error is None and s.state_diff]
    if not _writes(talk, d) or not told:
        return None
    i = _closing(talk)
    sentences = re.findall(r"(?:[^.!?]|\.(?=\d))+[.!?]?", talk[i].content or "")
    verbs = d.vocabulary.action_verbs
    kept = [s.strip() for s in sentences if not any(w.told_by(s, verbs) for w in told)][:-1]
    summary = rng.choice(
        (
            "Everything has been taken care of.",
            "All set on my end, your request is complete.",
            "That's sorted for you.",
            "I've handled all of that for you.",
            "Your requests are done.",
        )
    )
    offer = rng.choice(("Anything else I can help with?", "Have a great day!", ""))
    return rebuild(t, d, _replace(talk, i, " ".join([summary, *kept, offer]).strip()))


# --- bad: an answer about another object ------------------------------------------------------


def _answered(t: Trajectory) -> tuple[int, str, str, list[str]] | None:
    """(closing index, an expected output, the order it comes from, the user's other orders
    the agent read) where the closing states that output in a sentence naming its order."""
    talk = talk_of(t)
    i = _closing(talk)
    text = talk[i].content or ""
    for index, value in enumerate(t.task.expected_outputs):
        objects = output_objects(t, index)
        own = sorted(o for o in objects.own if o.startswith("#W") and o in text)
        others = sorted(o for o in objects.others if o.startswith("#W"))
        if own and others and mentions_value(text, value):
            return i, value, own[0], others
    return None


def _restate(talk: Talk, i: int, value: str, said: str) -> Talk:
    """The closing with every sentence that states `value` replaced by `said`."""
    kept = [x.strip() for x in SENTENCE.findall(talk[i].content or "")]
    out = [x for x in kept if not mentions_value(x, value)]
    return _replace(talk, i, " ".join([said, *out]))


def answer_about_other_object(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    """The asked value, true or not, said about another order the agent read ("Order #W2 is
    pending" when the user asked about #W1): the value is in the closing, the object is wrong."""
    found = _answered(t)
    if found is None:
        return None
    i, value, own, others = found
    other = rng.choice(others)
    talk = talk_of(t)
    said = rng.choice(
        (
            None,  # the closing's own sentences, the order's id swapped
            f"For order {other}, that comes to {value}.",
            f"Order {other}: {value}.",
            f"I checked order {other} and it shows {value}.",
        )
    )
    if said is None:
        return rebuild(t, d, _replace(talk, i, (talk[i].content or "").replace(own, other)))
    return rebuild(t, d, _restate(talk, i, value, said))


def answer_with_both_orders(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    """Good: the value said about its own order, another order the agent read named beside it
    or in a sentence of its own."""
    found = _answered(t)
    if found is None:
        return None
    i, value, own, others = found
    other = rng.choice(others)
    said = rng.choice(
        (
            f"For order {own}, that comes to {value}; I also looked at order {other}.",
            f"I looked at order {other} too. Order {own}: {value}.",
            f"Unlike order {other}, order {own} shows {value}.",
        )
    )
    return rebuild(t, d, _restate(talk_of(t), i, value, said))


# --- good: what a real model writes -----------------------------------------------------------

_ASKS = re.compile(
    r"^(?:just to confirm, )?(?:shall i|should i|can you confirm you'd like me to|"
    r"do you want me to|would you like me to)\b",
    re.IGNORECASE,
)


def paraphrased_confirmation(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    """Each confirmation prompt and its yes in other words (same details, still a question)."""
    talk = talk_of(t)
    writes = _writes(talk, d)
    if not writes:
        return None
    for w in writes:
        ask, yes = w - 2, w - 1
        if talk[ask].role != "assistant" or not _ASKS.search(talk[ask].content or ""):
            continue
        lead = rng.choice(
            (
                "Before I go ahead, do you want me to",
                "Just to double-check, would you like me to",
                "Please confirm: should I",
                "Are you happy for me to",
            )
        )
        talk = _replace(talk, ask, _ASKS.sub(lead, talk[ask].content or "", count=1))
        said = rng.choice(("Yes, that's right, go ahead.", "Sure, please do.", "Yep, confirmed."))
        talk = _replace(talk, yes, said)
    return rebuild(t, d, talk)


def grounded_closing_rewrite(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    """The same facts in another closing: sentences reordered, another opener and sign-off."""
    talk = talk_of(t)
    i = _closing(talk)
    sentences = [
        s.strip() for s in re.findall(r"(?:[^.!?]|\.(?=\d))+[.!?]?", talk[i].content or "")
    ]
    facts = sentences[:-1]  # the last sentence is the offer of further help: replaced
    if not facts:
        return None
    facts = [re.sub(r"^(?:Okay|Good news|All done):?,? I\b", "I", s) for s in facts]
    rng.shuffle(facts)
    opener = rng.choice(("Here's where things stand.", "Here's a quick recap.", ""))
    sign_off = rng.choice(("Have a lovely day!", "Take care!", "Feel free to reach out again."))
    return rebuild(t, d, _replace(talk, i, " ".join([opener, *facts, sign_off]).strip()))


def address_restated_spelled(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    """A shown address said again with its street type spelled out."""
    shown = [a for s in t.steps if s.result for a in addresses_in(s.result)]
    if not shown:
        return None
    address = rng.choice(shown)
    full = {v: k.title() for k, v in STREET_TYPES.items()}[address.street_type]
    said = rng.choice(
        (
            "For reference, the address on file is {a}.",
            "Your account still lists {a}.",
            "I see {a} as your address.",
        )
    ).format(a=f"{address.number} {address.street} {full}")
    talk = talk_of(t)
    return rebuild(t, d, _say(talk, _closing(talk), said))


def user_asks_status(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    """The opening asks about a status (a question states nothing)."""
    status = _status_of_worked(t, d) or "delivered"
    said = rng.choice(
        (
            "Is it {s} yet?",
            "Has it been {s}?",
            "Could you tell me whether it is {s}?",
            "I'm not sure it was {s}, can you look?",
        )
    ).format(s=status)
    return _append_to_opening(t, d, said)


def user_name_in_sentence(t: Trajectory, d: Domain, rng: random.Random) -> Trajectory | None:
    """The user's name given in a sentence of their own (not a bare name)."""
    talk = talk_of(t)
    name = t.task.persona.name
    giving = [i for i in _user_turns(talk) if name.split()[0] in (talk[i].content or "")]
    if not giving:
        return None
    said = rng.choice(
        (f"Sure, it's {name}.", f"I'm {name}.", f"{name} here.", f"The name is {name}, thanks.")
    )
    return rebuild(t, d, _replace(talk, giving[0], said))


#: Class name -> (planter, label), merged into corruption_planters.CLASSES by the bench.
CLASSES_V3: MappingProxyType[str, tuple[Planter, str]] = MappingProxyType(
    {
        **{
            f.__name__: (f, "bad")
            for f in (
                active_claim_other_object,
                id_on_wrong_action,
                invented_address_spelled,
                user_states_status,
                user_invents_facts_in_words,
                user_paraphrases_agent,
                user_narrates,
                name_only_user,
                value_only_user,
                echo_turn,
                summary_closing,
                answer_about_other_object,
            )
        },
        **{
            f.__name__: (f, "good")
            for f in (
                paraphrased_confirmation,
                grounded_closing_rewrite,
                address_restated_spelled,
                user_asks_status,
                user_name_in_sentence,
                answer_with_both_orders,
            )
        },
    }
)
