"""Ready-made `touches` declarations for write tools (see `tooling.tool`).

A write that declares which entries of the world it may mutate is re-dumped, diffed and hashed
over those entries only (`state_dumps.patched_dump`). Most writes mutate the one entry their
arguments name (an order by `order_id`, an account by `account_id`) or nothing at all (a
transfer to a human); these build those declarations so a domain states them in one word.
A declaration must cover every mutation, failed calls' included (tests hold each domain's).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from trajforge.generators.state_dumps import DumpPath
from trajforge.generators.tooling import Touches


def entry(collection: str, argument: str) -> Touches:
    """The entry of `collection` (a dict field of the state) keyed by the call's `argument`."""

    def touches(state: Any, arguments: dict[str, Any]) -> Iterable[DumpPath]:
        return ((collection, str(arguments[argument])),)

    touches.__doc__ = f"A call mutates at most {collection}[{argument}]."
    return touches


def field(name: str) -> Touches:
    """The top-level field `name` of the state, whole (a scalar such as an answer)."""

    def touches(state: Any, arguments: dict[str, Any]) -> Iterable[DumpPath]:
        return ((name,),)

    touches.__doc__ = f"A call mutates at most the field {name}."
    return touches


def nothing(state: Any, arguments: dict[str, Any]) -> Iterable[DumpPath]:
    """A call mutates nothing (a transfer to a human: a write by kind, not by effect)."""
    return ()
