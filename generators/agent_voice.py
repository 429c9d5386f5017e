"""The agent's words in grounded drafts: questions, confirmations and reports built from tool
results.

Blueprint drafts and the oracle agent speak for the agent wherever a model's text is missing or
failed its checks, so their sentences are what a trainer sees most. They must read like a
support agent, not a log line: a question per piece of info ("Which order would you like to
cancel?"), a confirmation that states the action and its details in words, and a closing that
reports what each write did and answers each question in a sentence about the object the tool
showed ("The status of order #W1 is processed."), never bare values or JSON. Several phrasings
per intent are chosen by a seed (task id, utterance position), so rows differ while a build stays
deterministic. Values are copied verbatim from the arguments and tool results, so every entity
in the text is grounded.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Sequence
from typing import Any

from trajforge.generators.phrasing import (
    NO_PHRASING,
    Phrasing,
    address_words,
    fill,
    named_fields,
    parsed_outputs,
    sources,
    spoken,
)
from trajforge.generators.voice import label_parts, pick
from trajforge.schemas import Task

_ADDRESS_KEYS = ("address1", "address2", "city", "state_code", "state", "zip", "country")


def _noun(key: str) -> str:
    """An argument name as a noun: `order_id` -> "order", `item_ids` -> "items"."""
    if key == "user_id":
        return "account"
    words = key.split("_")
    if words[-1] in ("id", "ids"):
        words = words[:-1]
        if key.endswith("_ids") and words:
            words[-1] += "s"
    return " ".join(words) or key


def details(arguments: dict[str, Any]) -> str:
    """A call's arguments in words, the address as one line, empty values left out."""
    parts = []
    if "address1" in arguments:
        parts.append(f"address {address_words(arguments)}")
    for key, value in sorted(arguments.items()):
        if key in _ADDRESS_KEYS and "address1" in arguments:
            continue
        text = spoken(value)
        if not text.strip():
            continue
        joiner = " " if key.endswith(("_id", "_ids")) else ": "
        parts.append(f"{_noun(key)}{joiner}{text}")
    return ", ".join(parts)


def action(name: str, arguments: dict[str, Any]) -> str:
    """A write in words: "cancel the pending order (order #W1, reason: no longer needed)"."""
    verb, *rest = name.split("_")
    what = f"{verb} the {' '.join(rest)}" if rest else verb
    said = details(arguments)
    return f"{what} ({said})" if said else what


def past(verb: str) -> str:
    """Past tense of a tool's verb ("cancel" -> "cancelled", "modify" -> "modified")."""
    if verb.endswith("e"):
        return verb + "d"
    if verb.endswith("y") and verb[-2:-1] not in "aeiou":
        return verb[:-1] + "ied"
    if verb.endswith("el"):
        return verb + "led"
    return verb + "ed"


_ASK_LEADS = ("", "Thanks,", "Got it,", "Sure,", "Alright,", "Okay,", "Thank you,")
_ASK_WHICH = (
    "which {noun} would you like to {verb}?",
    "could you tell me which {noun} you'd like to {verb}?",
    "which {noun} do you want to {verb}?",
    "can you let me know which {noun} you want to {verb}?",
)
_ASK_WHAT = (
    "could you please tell me {the} {label}?",
    "may I have {the} {label}?",
    "what is {the} {label}?",
    "can you give me {the} {label}?",
    "could you share {the} {label}?",
)


def ask_for(label: str, *key: object) -> str:
    """The agent's question for one known-info item."""
    noun, verb = label_parts(label)
    if verb is not None:
        body = pick(_ASK_WHICH, *key, "ask").format(noun=noun, verb=verb)
    else:
        the = "your" if len(noun.split()) <= 2 else "the"
        body = pick(_ASK_WHAT, *key, "ask").format(the=the, label=noun)
    lead = pick(_ASK_LEADS, *key, "lead")
    return f"{lead} {body}" if lead else body[0].upper() + body[1:]


_CONFIRMS = (
    "Just to confirm, shall I {action}?",
    "Before I go ahead, do you want me to {action}?",
    "I'm ready to {action}; do you confirm?",
    "Should I {action}?",
    "Would you like me to {action} now?",
    "Here is what I'll do: {action}; may I proceed?",
    "Can you confirm you'd like me to {action}?",
    "Please confirm: I will {action}, is that right?",
)


def confirm_prompt(
    name: str,
    arguments: dict[str, Any],
    *key: object,
    phrasing: Phrasing = NO_PHRASING,
    observations: Sequence[str] = (),
) -> str:
    """The request for a yes before a write: the action and every argument, in words (the
    domain's phrase for it when it has one, naming ids by what the tool outputs show)."""
    said = None
    if name in phrasing.actions:
        fields = named_fields(arguments, phrasing, parsed_outputs(observations))
        said = fill(phrasing.actions[name].confirm, fields, spoken)
    return pick(_CONFIRMS, *key, "confirm").format(action=said or action(name, arguments))


def _parsed(observation: str) -> Any:
    try:
        return json.loads(observation)
    except ValueError:
        return None


def _object(arguments: dict[str, Any], result: Any) -> str:
    """What a call was about, in words: "order #W1", "your account", "the Tea Kettle"."""
    if isinstance(result, dict) and isinstance(result.get("name"), str):
        return f"the {result['name']}"
    for key, value in sorted(arguments.items()):
        if key == "user_id":
            return "your account"
        if key.endswith("_id") and isinstance(value, str):
            return f"{_noun(key)} {value}"
    return "your request"


def _thing(rest: list[str], obj: str) -> str:
    """What a write changed, named with its object: ("pending", "order") + "order #W1" ->
    "the pending order #W1"; ("delivered", "order", "items") -> "the items in delivered order
    #W1"; ("user", "address") + "your account" -> "the user address for your account"."""
    noun, _, ident = obj.partition(" ")
    if noun in rest and ident:
        cut = rest.index(noun) + 1
        head, tail = " ".join(rest[:cut]), " ".join(rest[cut:])
        return f"the {tail} in {head} {ident}" if tail else f"the {head} {ident}"
    return f"the {' '.join(rest)} for {obj}"


_REPORTS = (
    "I've {past} {thing}{outcome}.",
    "All done: I {past} {thing}{outcome}.",
    "Good news, I {past} {thing}{outcome}.",
    "I went ahead and {past} {thing}{outcome}.",
    "Okay, I {past} {thing}{outcome}.",
)


def _outcome(arguments: dict[str, Any], result: Any, changed: Sequence[str] | None) -> str:
    """What the write left behind: the new status, the address it set, or the first changed
    field of the result (`changed`: the state diff's field names, when known)."""
    if not isinstance(result, dict):
        return ""
    status = result.get("status")
    if isinstance(status, str) and (changed is None or "status" in changed):
        return f", and its status is now {status}"
    if "address1" in arguments:
        return f"; the address is now {address_words(arguments)}"
    fields = [k for k in sorted(result) if k in (changed or ()) and not k.endswith("_id")]
    fields = [
        k
        for k in fields
        if isinstance(result[k], str | int | float) and not isinstance(result[k], bool)
    ]
    return "".join(f", and the {_noun(k)} is now {spoken(result[k])}" for k in fields[:1])


_PHRASED_REPORTS = (
    "I've {done}.",
    "All done: I {done}.",
    "Good news, I {done}.",
    "I went ahead and {done}.",
    "Okay, I {done}.",
)


def write_report(
    name: str,
    arguments: dict[str, Any],
    observation: str,
    *key: object,
    changed: Sequence[str] | None = None,
    phrasing: Phrasing = NO_PHRASING,
    observations: Sequence[str] = (),
) -> str:
    """One sentence telling the user what a write did, from its arguments and its result (in
    the domain's words when it has a phrase for the tool); "" when the result names no object
    (a recorded answer: the answer sentence tells it)."""
    verb, *rest = name.split("_")
    result = _parsed(observation)
    if name in phrasing.actions and isinstance(result, dict):
        outputs = parsed_outputs([*observations, observation])
        done = fill(
            phrasing.actions[name].done,
            named_fields({**result, **arguments}, phrasing, outputs),
            spoken,
        )
        if done:
            return pick(_PHRASED_REPORTS, *key, "report").format(done=done)
    obj = _object(arguments, result)
    if obj == "your request" and not isinstance(result, dict):
        return ""
    if rest:
        thing = _thing(rest, obj)
    else:
        said = [f"{_noun(k)} {spoken(v)}" for k, v in sorted(arguments.items()) if "_id" not in k]
        thing = f"the {', '.join(said) or 'request'} for {obj}"
    return pick(_REPORTS, *key, "report").format(
        past=past(verb), thing=thing, outcome=_outcome(arguments, result, changed)
    )


def _same(leaf: Any, value: str) -> bool:
    if isinstance(leaf, bool) or leaf is None:
        return False
    if isinstance(leaf, int | float):
        try:  # an unsigned amount ("2.52" to pay or refund) matches either sign
            number = float(value)
        except ValueError:
            return False
        leaf = abs(leaf) if not value.strip().startswith("-") else leaf
        return abs(number - float(leaf)) < 0.005
    return isinstance(leaf, str) and leaf.strip().lower() == value.strip().lower()


def _find(node: Any, value: str, path: tuple = ()) -> Iterator[tuple[tuple, dict]]:
    """(key path, parent dict) of every leaf of `node` equal to `value`."""
    if isinstance(node, dict):
        for k, v in node.items():
            if _same(v, value):
                yield (*path, k), node
            yield from _find(v, value, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _find(v, value, (*path, i))


def _key_words(key: str) -> str:
    words = key.replace("_id", "_number").split("_")
    return " ".join(w for w in words if w not in ("exchange",))


_ANSWERS = (
    "The {what} of {subject} is {value}.",
    "For {subject}, the {what} is {value}.",
    "I can see that the {what} for {subject} is {value}.",
    "Looking at {subject}, its {what} is {value}.",
    "According to our records, the {what} of {subject} is {value}.",
)
_IN_STOCK = (
    "{subject} is in stock, and its {what} is {value}.",
    "Good news: {subject} is available, at a {what} of {value}.",
    "We have {subject} in stock; the {what} is {value}.",
)
_FALLBACK = (
    "The answer is {value}.",
    "What you're looking for is {value}.",
    "Based on what I found, it is {value}.",
    "I found it: the answer is {value}.",
)


def answer(
    value: str,
    results: Sequence[tuple[dict[str, Any], str]],
    *key: object,
    phrasing: Phrasing = NO_PHRASING,
    prefer: Collection[int] = (),
) -> str:
    """A sentence stating one expected output as what a tool showed about an object: the
    latest result holding it gives the field's name and the object it belongs to (and the
    domain's sentence for that field, when it has one). `prefer`: positions in `results` of
    the calls made for the sub-goal that asked for the value; the latest of them holding it
    wins over any other result, so a status shared by two orders is told about the order the
    user asked about. Without them (or when none holds it), the latest result holding it."""
    outputs = parsed_outputs([o for _, o in results])
    found_in = sources(outputs, value, phrasing.cite) if phrasing.cite else []
    if phrasing.cite and found_in:  # read in documents: say where, not which field held it
        said = pick(phrasing.cite.sentences, *key, "cite")
        said = said.format(value=value, sources=phrasing.cite.name(found_in))
        return said[0].upper() + said[1:]
    latest_first = list(reversed(range(len(results))))
    order = [i for i in latest_first if i in prefer] + [i for i in latest_first if i not in prefer]
    for i in order:
        arguments, observation = results[i]
        said = _stated(value, arguments, _parsed(observation), phrasing, outputs, key)
        if said:
            return said
    return pick(_FALLBACK, *key, "answer").format(value=value)


def _stated(
    value: str,
    arguments: dict[str, Any],
    result: Any,
    phrasing: Phrasing,
    outputs: Sequence[Any],
    key: tuple,
) -> str | None:
    """The answer sentence from one call's result, or None when it does not hold `value` (a
    list of hits describes no one object, so it holds none)."""
    if not isinstance(result, dict):
        return None
    for path, parent in sorted(_find(result, value), key=lambda found: len(found[0]))[:1]:
        subject = _object(arguments, result)
        if isinstance(parent.get("options"), dict):
            subject = f"{subject} ({spoken(parent['options'])})"
        said = _phrased_answer(value, str(path[-1]), parent, subject, phrasing, outputs, key)
        if said:
            return said
        what = _key_words(str(path[-1]))
        pool = _IN_STOCK if parent.get("available") is True else _ANSWERS
        said = pick(pool, *key, "answer").format(what=what, subject=subject, value=value)
        return said[0].upper() + said[1:]
    return None


def task_answers(
    task: Task,
    calls: Sequence[tuple[str, dict[str, Any], str]],
    phrasing: Phrasing = NO_PHRASING,
) -> list[str]:
    """Each of the task's expected outputs in a sentence (`answer`), from the calls made
    (tool name, arguments, observation), each preferring the results of its own sub-goal's
    gold actions (`Task.expected_sources`, matched to the calls by name and arguments)."""
    results = [(arguments, observation) for _, arguments, observation in calls]
    return [
        answer(v, results, task.id, i, phrasing=phrasing, prefer=_sourced(task, i, calls))
        for i, v in enumerate(task.expected_outputs)
    ]


def _sourced(
    task: Task, index: int, calls: Sequence[tuple[str, dict[str, Any], str]]
) -> frozenset[int]:
    """Positions in `calls` of the gold actions that expected output `index` comes from;
    empty when the task does not record them."""
    if not task.expected_sources:
        return frozenset()
    gold = [task.gold_actions[i] for i in task.expected_sources[index]]
    wanted = [(a.name, a.arguments) for a in gold]
    return frozenset(i for i, (name, args, _) in enumerate(calls) if (name, args) in wanted)


def _phrased_answer(
    value: str,
    field: str,
    parent: dict,
    subject: str,
    phrasing: Phrasing,
    outputs: Sequence[Any],
    key: tuple,
) -> str | None:
    """The domain's sentence for the field that holds the value, or None."""
    if field not in phrasing.answers:
        return None
    fields = {**named_fields(parent, phrasing, outputs), "value": value, "subject": subject}
    filled = [fill(t, fields, spoken) for t in phrasing.answers[field]]
    pool = [said for said in filled if said]  # the sentences whose every value is known
    if not pool:
        return None
    said = pick(pool, *key, "answer")
    return said[0].upper() + said[1:]


_THANKS = (
    "Thanks for your patience,",
    "Thank you for waiting,",
    "That's everything on my side,",
    "I hope that helps,",
    "Glad I could sort that out,",
    "Happy to help,",
    "All right,",
)


def user_name(known_info: dict[str, str]) -> str | None:
    """The name the user gives (a known-info item labelled "name"), if any."""
    return next((v for k, v in known_info.items() if k.strip().lower() == "name"), None)


_ANYTHING = (
    "is there anything else I can help you with?",
    "anything else I can do for you today?",
    "is there anything else you need?",
    "can I help with anything else?",
    "is there anything else on your list?",
    "let me know if there's anything else.",
)


def closing(sentences: Sequence[str], *key: object, name: str | None = None) -> str:
    """The final agent message: the reports and answers, then the offer of further help
    (addressing the user by first name when they gave one)."""
    thanks = pick(_THANKS, *key, "thanks")
    if name:
        thanks = f"{thanks[:-1]}, {name.split()[0]},"
    offer = pick(_ANYTHING, *key, "offer")
    offer = f"{thanks} {offer}" if thanks else offer[0].upper() + offer[1:]
    return " ".join([*(s for s in sentences if s), offer])
