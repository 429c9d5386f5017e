"""Checkable policy rules a domain declares next to its `policy.md` (policy as code).

A domain's `policy.md` is prose for the agent; `PolicyRules` is the same policy as data the
generic checker (verifiers/policy.py) evaluates over a finished trajectory's messages and steps.
Each field switches on one generic rule and gives it the domain's words (which tools
authenticate, which argument names the owner, which statuses allow which write). A domain
without rules declares none (`policy_rules = None`) and the checker passes everything.

Rule ids are the typed rejection reasons (`policy.<rule>`), counted per rule in the manifest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType

from pydantic import BaseModel, ConfigDict, Field

from trajforge.schemas import Trajectory

#: Rule id -> what it forbids (the reason ids the policy filter declares, in check order).
RULE_IDS: MappingProxyType[str, str] = MappingProxyType(
    {
        "policy.one_call_at_a_time": "several tool calls, or text and a call, in one agent turn",
        "policy.authenticate_first": "a user-data tool called before the user was authenticated",
        "policy.own_records_only": "reading or acting on another user's records",
        "policy.write_after_refusal": "a write after the user declined it",
        "policy.confirm_before_write": "a write without a detailed agent prompt and a user 'yes'",
        "policy.one_write_per_confirmation": "two writes on one confirmation",
        "policy.status_not_allowed": "a write on an object in a status the policy forbids",
        "policy.needless_transfer": "a transfer to a human for a request the tools can handle",
        "policy.cite_read_documents": "citing a document not read, or one not stating the fact",
        "policy.claimed_user_action": "telling the user they did something they never did",
    }
)


class StatusRule(BaseModel):
    """A write tool is allowed only while the object named by `object_arg` has one of
    `allowed` as its `status` field in the latest tool result about that object."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    object_arg: str
    allowed: tuple[str, ...] = Field(min_length=1)


class PolicyRules(BaseModel):
    """One domain's checkable rules; every rule is on when its field is set."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Tools whose successful result is the authenticated user's id (e.g. lookup by email).
    auth_tools: tuple[str, ...] = ()
    #: Tools that touch no user data and may run before authentication (catalogue, calculator).
    public_tools: tuple[str, ...] = ()
    #: Argument and result field naming a record's owner (`user_id`): must be the authenticated id.
    owner_field: str | None = None
    #: Arguments whose values the confirmation prompt must state (order id, new address line).
    confirm_details: tuple[str, ...] = ()
    confirm_writes: bool = True
    one_write_per_confirmation: bool = True
    one_call_at_a_time: bool = True
    #: Write tool name -> the statuses that allow it.
    status_rules: dict[str, StatusRule] = Field(default_factory=dict)
    status_field: str = "status"
    #: The tool that hands over to a human: allowed only when the gold plan uses it too.
    transfer_tool: str | None = None


class ClaimTypes(BaseModel):
    """The entity types a domain's agent makes claims about, for the grounding-by-object check
    (verifiers/grounding.py): which tokens name an object, which argument/result field holds its
    id, which words are its statuses, and what a street address looks like."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    object_pattern: str  # regex of an object id in text, e.g. an order id `#W\d+`
    object_key: str  # the argument / result field holding that id
    statuses: tuple[str, ...] = ()
    status_field: str = "status"
    address_pattern: str | None = None  # regex of a street address line in text
    #: Check street addresses found by the value grammar (`generators.value_grammar`: full and
    #: abbreviated street types, with or without a zip) against the addresses shown so far.
    addresses: bool = False
    #: Result fields (at any depth) whose text describes an object ("name": an order's item
    #: names): a claim that names no id but such a description is bound to the objects it fits.
    description_fields: tuple[str, ...] = ()


@dataclass(frozen=True)
class TrajectoryCheck:
    """A domain's own check, run as part of the built-in filter named `extends` and rejecting
    with `reason`, which that filter must declare (verifiers/protocol.py `run_filter`).

    For checks the generic rules cannot express in data: the search domain's citations must
    name documents that were read, and a user turn must not state the answer. Extending an
    existing filter keeps the reason's meaning and counter (`filter.user_fidelity.rejected.
    user_hallucination` counts a search leak too), and a config that drops the filter drops
    its domain checks with it. `problems` returns one line per violation (empty: passed).
    """

    extends: str
    reason: str
    problems: Callable[[Trajectory], list[str]]
