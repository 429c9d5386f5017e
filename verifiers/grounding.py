"""Grounded claims by object: what the agent says about an object must be what the tools said
about that object.

The value-evidence check (hallucination.py) only sees tokens with digits, anywhere in the
conversation. It misses a status without digits ("delivered"), a street address without its zip,
a seen value attached to the wrong order, and an action narrated in the passive voice ("your order
has been cancelled") with no write behind it. Using the domain's declared `ClaimTypes`, each
sentence of agent text is tied to the objects it names (or, when it names none, to any object the
conversation has touched) and checked against the tool results about those objects.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import ClassVar

from trajforge.generators.domain_options import options_of
from trajforge.generators.policy_rules import ClaimTypes
from trajforge.generators.value_grammar import address_keys, addresses_in
from trajforge.generators.values import normalise, whole_token_in
from trajforge.schemas import Message, RejectionReason, Trajectory
from trajforge.verifiers.claims import ActionClaim, action_claims
from trajforge.verifiers.dialogue import result_object, steps_by_call
from trajforge.verifiers.protocol import FilterContext, FilterModel
from trajforge.verifiers.result import FilterResult

_SENTENCE = re.compile(r"(?:[^.!?\n]|\.(?=\d))+")


@dataclass
class _Seen:
    """Tool evidence so far: statuses per object, successful writes per object, raw texts."""

    statuses: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    writes: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    texts: list[str] = field(default_factory=list)
    touched: set[str] = field(default_factory=set)
    addresses: set[str] = field(default_factory=set)  # canonical keys (value_grammar)
    all_writes: list[str] = field(default_factory=list)  # every successful write's tool
    descriptions: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))


def _learn(seen: _Seen, message: Message, types: ClaimTypes, steps: dict) -> None:
    if message.role in ("user", "tool") and message.content:
        seen.texts.append(message.content.lower())
        seen.addresses |= address_keys(message.content)
    for call in message.tool_calls:
        obj = call.arguments.get(types.object_key)
        if isinstance(obj, str):
            seen.touched.add(obj)
        step = steps.get(call.id)
        if step is None:
            continue
        if step.mutating and step.error is None:
            seen.all_writes.append(call.name.lower())
        result = result_object(step)
        if isinstance(result, dict) and isinstance(result.get(types.object_key), str):
            key = result[types.object_key]
            seen.descriptions[key] |= set(_described(result, types.description_fields))
            if types.status_field in result:
                seen.statuses[key].add(str(result[types.status_field]).lower())
            if step.mutating and step.error is None:
                seen.writes[key].append(call.name.lower())


def _described(node: object, fields: tuple[str, ...]) -> Iterator[str]:
    """Lower-cased texts under `fields` anywhere in a result (an order's item names)."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k in fields and isinstance(v, str) and len(v) >= 3:
                yield normalise(v)
            else:
                yield from _described(v, fields)
    elif isinstance(node, list):
        for v in node:
            yield from _described(v, fields)


def _bound(claim: ActionClaim, seen: _Seen) -> tuple[str, ...]:
    """The ids a claim names, or else the objects its clause describes ("the Coffee Maker")."""
    if claim.objects:
        return claim.objects
    clause = normalise(claim.clause)
    return tuple(
        sorted(
            o
            for o, names in seen.descriptions.items()
            if any(whole_token_in(n, clause) for n in names)
        )
    )


def _sentence_problems(
    sentence: str, objects: list[str], seen: _Seen, types: ClaimTypes
) -> list[str]:
    """Problems of one sentence about `objects` (the ones it names, or else every object the
    context could mean: a claim must hold for at least one of them)."""
    problems = []
    lowered = sentence.lower()
    for status in types.statuses:
        if re.search(rf"\b{re.escape(status)}\b", lowered) and not any(
            status in seen.statuses[obj] for obj in objects
        ):
            problems.append(f"{' / '.join(objects) or 'no object'} is not '{status}'")
    if types.address_pattern:
        for address in re.findall(types.address_pattern, sentence):
            if not any(address.lower() in t for t in seen.texts):
                problems.append(f"address '{address}' never shown")
    if types.addresses:
        for address in addresses_in(sentence):
            if address.key not in seen.addresses:
                problems.append(f"address '{address.text}' never shown")
    return list(dict.fromkeys(problems))


def _claim_problems(text: str, types: ClaimTypes, seen: _Seen, verbs: dict) -> list[str]:
    """Each action the text claims (claims.py) must be backed by a successful write of that
    kind on the object it names: "I have also returned order #W2" needs a return on #W2, not
    on #W1. An unbound claim (no id named) needs such a write on any object."""
    problems = []
    for claim in action_claims(text, verbs, types.object_pattern):
        stems = verbs.get(claim.verb, ())
        if claim.passive and not stems:
            continue  # "was placed on May 3", "was processed": a generic verb describes a state
        objects = _bound(claim, seen)
        done = (
            [name for obj in objects for name in seen.writes[obj]] if objects else seen.all_writes
        )
        if not any(stem in name for name in done for stem in stems or ("",)):
            on = " / ".join(objects) or "any object"
            problems.append(f"'{claim.clause}' claims {claim.verb} on {on} without that write")
    return problems


def _message_problems(text: str, types: ClaimTypes, seen: _Seen, verbs: dict) -> list[str]:
    """Sentence by sentence; one that names no object may mean any object of the conversation
    so far (a closing answering several questions names none), so its claim must hold for one."""
    problems: list[str] = []
    for sentence in _SENTENCE.findall(text):
        named = re.findall(types.object_pattern, sentence)
        objects = named or sorted(seen.touched)
        problems += _sentence_problems(sentence, objects, seen, types)
    return problems + _claim_problems(text, types, seen, verbs)


def ungrounded_claims(
    trajectory: Trajectory, types: ClaimTypes | None, verbs: dict[str, tuple[str, ...]]
) -> list[tuple[int, str]]:
    """(message index, problem) for each agent claim its object's tool evidence does not back."""
    if types is None:
        return []
    seen, steps, found = _Seen(), steps_by_call(trajectory), []
    for index, message in enumerate(trajectory.messages):
        if message.role == "assistant" and message.content:
            found += [(index, p) for p in _message_problems(message.content, types, seen, verbs)]
        _learn(seen, message, types, steps)
    return found


def check_grounded_claims(
    trajectory: Trajectory, types: ClaimTypes | None, verbs: dict[str, tuple[str, ...]]
) -> FilterResult:
    """Reject (`ungrounded_claim`) on a claim about an object its tool results do not back."""
    found = ungrounded_claims(trajectory, types, verbs)
    if not found:
        return FilterResult.ok()
    return FilterResult.reject("ungrounded_claim", "; ".join(f"message {i}: {p}" for i, p in found))


class GroundedClaimsFilter(FilterModel):
    """Statuses, addresses and narrated actions checked per object (`domain.claim_types`)."""

    name: ClassVar[str] = "grounded_claims"
    reasons: ClassVar[tuple[RejectionReason, ...]] = ("ungrounded_claim",)

    def check(self, trajectory: Trajectory, context: FilterContext) -> FilterResult:
        domain = context.domain
        return check_grounded_claims(
            trajectory, options_of(domain).claim_types, dict(domain.vocabulary.action_verbs)
        )
