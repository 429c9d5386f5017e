"""The generic policy checker: a domain's declared rules over a finished trajectory.

The final-state check cannot see how the agent got there: a cancel without a confirmation turn,
after the user said no, on another user's order or before authentication ends in the same state
as the gold plan. These rules read the messages and steps in order, with the domain's words
from its `PolicyRules` (generators/policy_rules.py), and report every violation with its rule id
(a typed rejection reason, counted per rule). A domain without rules passes everything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from trajforge.generators.domain_options import options_of
from trajforge.generators.policy_rules import RULE_IDS, PolicyRules
from trajforge.generators.values import leaf_strings, mentions_value
from trajforge.schemas import Message, RejectionReason, StepRecord, ToolCall, Trajectory
from trajforge.verifiers.dialogue import is_affirmation, is_refusal, result_object, steps_by_call
from trajforge.verifiers.protocol import FilterContext, FilterModel
from trajforge.verifiers.result import FilterResult


@dataclass(frozen=True)
class Violation:
    """One broken rule: its id (`policy.<rule>`), where, and what the evidence was."""

    rule: str
    message_index: int
    detail: str


@dataclass
class _Walk:
    """What the checker knows so far while reading the conversation in order."""

    rules: PolicyRules
    trajectory: Trajectory
    authenticated: str | None = None
    statuses: dict[str, str] = field(default_factory=dict)
    used_confirmations: set[int] = field(default_factory=set)
    found: list[Violation] = field(default_factory=list)

    def flag(self, rule: str, index: int, detail: str) -> None:
        self.found.append(Violation(rule, index, detail))


def policy_violations(trajectory: Trajectory, rules: PolicyRules | None) -> list[Violation]:
    """Every violation of `rules` in `trajectory`, in conversation order."""
    if rules is None:
        return []
    walk = _Walk(rules, trajectory)
    steps = steps_by_call(trajectory)
    for index, message in enumerate(trajectory.messages):
        if message.role != "assistant" or not message.tool_calls:
            continue
        _check_turn_shape(walk, index, message)
        for call in message.tool_calls:
            step = steps.get(call.id)
            if step is not None:
                _check_call(walk, index, call, step)
    return walk.found


def _check_turn_shape(walk: _Walk, index: int, message: Message) -> None:
    if not walk.rules.one_call_at_a_time:
        return
    if len(message.tool_calls) > 1:
        names = ", ".join(c.name for c in message.tool_calls)
        walk.flag("policy.one_call_at_a_time", index, f"{len(message.tool_calls)} calls: {names}")
    elif message.content and message.content.strip():
        walk.flag("policy.one_call_at_a_time", index, "text to the user alongside a tool call")


def _check_call(walk: _Walk, index: int, call: ToolCall, step: StepRecord) -> None:
    rules = walk.rules
    if call.name in rules.auth_tools:
        result = result_object(step)
        if isinstance(result, str) and result.strip():
            walk.authenticated = result.strip()
        return
    free = {*rules.public_tools, *([rules.transfer_tool] if rules.transfer_tool else [])}
    if rules.auth_tools and walk.authenticated is None and call.name not in free:
        walk.flag("policy.authenticate_first", index, f"{call.name} before authentication")
    _check_owner(walk, index, call, step)
    if call.name == rules.transfer_tool:  # a hand-over, not a write the user confirms
        _check_transfer(walk, index)
    elif step.mutating:
        _check_write(walk, index, call)
    _remember_statuses(walk, step)


def _check_owner(walk: _Walk, index: int, call: ToolCall, step: StepRecord) -> None:
    key, me = walk.rules.owner_field, walk.authenticated
    if key is None or me is None:
        return
    owners = {str(call.arguments[key])} if key in call.arguments else set()
    result = result_object(step)
    if isinstance(result, dict) and key in result:
        owners.add(str(result[key]))
    others = sorted(o for o in owners if o != me)
    if others:
        walk.flag("policy.own_records_only", index, f"{call.name} on {others[0]}'s record")


def _check_write(walk: _Walk, index: int, call: ToolCall) -> None:
    rules = walk.rules
    if rules.confirm_writes:
        _check_confirmation(walk, index, call)
    rule = rules.status_rules.get(call.name)
    if rule is None:
        return
    obj = str(call.arguments.get(rule.object_arg, ""))
    status = walk.statuses.get(obj)
    if status not in rule.allowed:
        seen = f"'{status}'" if status else "never looked up"
        walk.flag(
            "policy.status_not_allowed",
            index,
            f"{call.name} on {obj} ({seen}; allowed: {', '.join(rule.allowed)})",
        )


def _last_index(messages: tuple[Message, ...], before: int, role: str, text: bool) -> int | None:
    for i in range(before - 1, -1, -1):
        m = messages[i]
        if m.role == role and (not text or (m.content and m.content.strip())):
            return i
    return None


def _check_confirmation(walk: _Walk, index: int, call: ToolCall) -> None:
    """The last user turn affirms; the agent turn before it states the details and asks."""
    messages = walk.trajectory.messages
    reply = _last_index(messages, index, "user", text=True)
    prompt = None if reply is None else _last_index(messages, reply, "assistant", text=True)
    if reply is None or prompt is None:
        walk.flag("policy.confirm_before_write", index, f"{call.name} with no confirmation turn")
        return
    replies = [m.content for m in messages[prompt + 1 : index] if m.role == "user" and m.content]
    if any(is_refusal(r) for r in replies):
        walk.flag("policy.write_after_refusal", index, f"{call.name} after: {replies[-1]!r}")
        return
    if not is_affirmation(messages[reply].content):
        walk.flag(
            "policy.confirm_before_write",
            index,
            f"{call.name}: user reply {messages[reply].content!r} is not a yes",
        )
        return
    missing = _missing_details(messages[prompt].content or "", call, walk.rules)
    if missing or not _asks(messages[prompt].content or ""):
        what = f"does not state {', '.join(missing)}" if missing else "does not ask"
        walk.flag("policy.confirm_before_write", index, f"{call.name}: the prompt {what}")
        return
    if reply in walk.used_confirmations and walk.rules.one_write_per_confirmation:
        walk.flag("policy.one_write_per_confirmation", index, f"{call.name} reuses a 'yes'")
    walk.used_confirmations.add(reply)


def _asks(text: str) -> bool:
    return "?" in text or "confirm" in text.lower()


def _missing_details(prompt: str, call: ToolCall, rules: PolicyRules) -> list[str]:
    missing = []
    for arg in rules.confirm_details:
        if arg not in call.arguments:
            continue
        values = [v for v in leaf_strings(call.arguments[arg]) if v.strip()]
        if any(
            not mentions_value(prompt, v) and not mentions_value(prompt, v.lstrip("#"))
            for v in values
        ):
            missing.append(arg)
    return missing


def _check_transfer(walk: _Walk, index: int) -> None:
    gold = {a.name for a in walk.trajectory.task.gold_actions}
    if walk.rules.transfer_tool not in gold:
        walk.flag("policy.needless_transfer", index, "transferred a request the tools handle")


def _remember_statuses(walk: _Walk, step: StepRecord) -> None:
    """Statuses shown by this step's result, keyed by every object id argument it names."""
    result = result_object(step)
    if not isinstance(result, dict) or walk.rules.status_field not in result:
        return
    status = str(result[walk.rules.status_field])
    for rule in walk.rules.status_rules.values():
        for source in (result, step.call.arguments):
            if rule.object_arg in source:
                walk.statuses[str(source[rule.object_arg])] = status


def check_policy(trajectory: Trajectory, rules: PolicyRules | None) -> FilterResult:
    """Reject with the first violated rule's id; the detail lists every violation."""
    found = policy_violations(trajectory, rules)
    if not found:
        return FilterResult.ok()
    listed = "; ".join(f"{v.rule} at message {v.message_index}: {v.detail}" for v in found)
    return FilterResult.reject(found[0].rule, listed)


class PolicyFilter(FilterModel):
    """The domain's declared policy rules (`domain.policy_rules`), one typed reason per rule."""

    name: ClassVar[str] = "policy"
    reasons: ClassVar[tuple[RejectionReason, ...]] = tuple(RULE_IDS)

    def check(self, trajectory: Trajectory, context: FilterContext) -> FilterResult:
        return check_policy(trajectory, domain_rules(context.domain))


def domain_rules(domain: object) -> PolicyRules | None:
    """A domain's declared rules; a domain that declares none (no attribute) has none."""
    return options_of(domain).policy_rules
