"""A domain's phrasing table: how its agent names actions and objects to a customer.

Generic drafts built from tool and argument names read like a log ("modify the user address",
"payment method gift_card_8413521", "the amount"). A support agent says "update your default
address", "your gift card", "the refund of $54.90 to your Visa card ending in 4421". Those words
are domain language, so each domain declares one frozen `Phrasing` (templates per write tool,
references per id argument, sentences per answered field) and the generic voice
(`agent_voice.py`) fills it from the call's arguments, its result and the tool outputs the agent
has seen. Every value comes from those, so the text stays grounded; a template names each value
the policy and outcome checks read (order ids, addresses, amounts, statuses). A domain without a
table (or a tool, id or field it does not list) keeps the generic phrasing.
"""

from __future__ import annotations

import json
import string
from collections.abc import Iterator, Mapping, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

Template = Annotated[str, StringConstraints(min_length=1, max_length=300)]


class ActionPhrase(BaseModel):
    """One write tool in words: `confirm` is an infinitive phrase ("cancel order {order_id}"),
    `done` a past one ("cancelled order {order_id}"); placeholders are the call's arguments,
    then the result's fields (`done` only), each id named through its `Reference`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    confirm: Template
    done: Template


class Reference(BaseModel):
    """How to name the object an id points at: found in the tool outputs seen (as a key, or as
    the `id_field` of a dict), its phrase picked by its `kind_field` value ("*" otherwise) and
    filled from its fields ("your {brand} card ending in {last_four}")."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id_field: str = "id"
    kind_field: str | None = None
    phrases: dict[str, Template] = Field(min_length=1)

    @model_validator(mode="after")
    def _has_default(self) -> Reference:
        if self.kind_field is None and "*" not in self.phrases:
            raise ValueError("phrases needs a '*' entry when kind_field is not set (add one)")
        return self


class Citation(BaseModel):
    """How an answer found in documents is said: `sentences` over `{value}` and `{sources}`,
    the titles (`title_field`) of the documents read whose `text_field` holds the value."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    title_field: str = "title"
    text_field: str = "text"
    sentences: tuple[Template, ...] = Field(min_length=1)
    one: Template = "the page '{title}'"
    many: Template = "the pages {titles}"

    def name(self, titles: Sequence[str]) -> str:
        """The documents in words: "the page 'A'", "the pages 'A' and 'B'"."""
        if len(titles) == 1:
            return self.one.format(title=titles[0])
        return self.many.format(titles=" and ".join(f"'{t}'" for t in titles))


class Phrasing(BaseModel):
    """The table a domain declares: `actions` per write tool, `references` per id argument or
    result field, `answers` per answered field (sentences over `{value}`, `{subject}` and the
    fields of the object holding the value), `cite` for answers read in documents."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    actions: dict[str, ActionPhrase] = Field(default_factory=dict)
    references: dict[str, Reference] = Field(default_factory=dict)
    answers: dict[str, tuple[Template, ...]] = Field(default_factory=dict)
    cite: Citation | None = None

    @model_validator(mode="after")
    def _answers_nonempty(self) -> Phrasing:
        empty = [k for k, v in self.answers.items() if not v]
        if empty:
            raise ValueError(f"answers {empty} have no sentence (give at least one)")
        return self


#: The table of a domain that declares none: every phrase stays generic.
NO_PHRASING = Phrasing()


def parsed_outputs(observations: Sequence[str]) -> list[Any]:
    """The JSON tool outputs among `observations`, latest first (where references look)."""
    found = []
    for text in reversed(observations):
        try:
            found.append(json.loads(text))
        except ValueError:
            continue
    return found


def sources(outputs: Sequence[Any], value: str, cite: Citation) -> list[str]:
    """Titles of the documents read whose text holds `value` (first read first, each once)."""
    titles: list[str] = []
    for output in reversed(outputs):  # outputs are latest first
        if not isinstance(output, dict):
            continue
        title, text = output.get(cite.title_field), output.get(cite.text_field)
        if not isinstance(title, str) or not isinstance(text, str) or title in titles:
            continue
        if value.strip().lower() in f"{title} {text}".lower():
            titles.append(title)
    return titles


def _walk(node: Any) -> Iterator[dict]:
    if isinstance(node, dict):
        yield node
        for v in node.values():
            yield from _walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v)


def find_objects(outputs: Sequence[Any], ident: str, id_field: str) -> Iterator[dict]:
    """The objects `ident` names in the outputs, latest output first: dicts keyed by it, or
    whose `id_field` is it (an ordered item and its product's variant share an id, so the
    caller takes the first that has the fields its phrase needs)."""
    for output in outputs:
        for node in _walk(output):
            if isinstance(node.get(ident), dict):
                yield node[ident]
            elif node.get(id_field) == ident:
                yield node


def spoken(value: object) -> str:
    """A JSON-like value in words: dicts as `key value`, lists joined with "and"."""
    if isinstance(value, dict):
        if "address1" in value:
            return address_words(value)
        return ", ".join(f"{k.replace('_', ' ')} {spoken(v)}" for k, v in sorted(value.items()))
    if isinstance(value, list | tuple):
        return " and ".join(spoken(v) for v in value)
    return str(value)


def address_words(fields: dict[str, Any]) -> str:
    """Address fields as one line ("12 Elm St, Apt 4, Riverton, CA 12345, USA")."""
    street = ", ".join(str(fields[k]) for k in ("address1", "address2") if fields.get(k))
    region = " ".join(
        str(fields[k]) for k in ("state_code", "state", "zip") if isinstance(fields.get(k), str)
    )
    parts = [street, str(fields.get("city") or ""), region, str(fields.get("country") or "")]
    return ", ".join(p for p in parts if p.strip())


def _name_one(ident: Any, key: str, phrasing: Phrasing, outputs: Sequence[Any]) -> str | None:
    """The words for one id: the first object it names whose fields fill its phrase."""
    ref = phrasing.references[key]
    if not isinstance(ident, str):
        return None
    for found in find_objects(outputs, ident, ref.id_field):
        kind = str(found.get(ref.kind_field)) if ref.kind_field else "*"
        template = ref.phrases.get(kind) or ref.phrases.get("*")
        said = fill(template, found, spoken) if template else None
        if said:
            return said
    return None


def named_fields(
    fields: dict[str, Any], phrasing: Phrasing, outputs: Sequence[Any]
) -> dict[str, Any]:
    """`fields` with each id the domain names replaced by its words ("your gift card"), ids
    not found in the outputs kept as they are, and `address` as one line when present."""
    named = dict(fields)
    for key, value in fields.items():
        if key not in phrasing.references:
            continue
        idents = value if isinstance(value, list) else [value]
        words = [_name_one(i, key, phrasing, outputs) for i in idents]
        if words and all(words):
            named[key] = " and ".join(words)  # type: ignore[arg-type]
    if "address1" in fields:
        named["address"] = address_words(fields)
    return named


class _Words(string.Formatter):
    """`str.format` that speaks values: numbers with a spec as given, others through `say`."""

    def __init__(self, say):
        self.say = say

    def format_field(self, value: Any, format_spec: str) -> str:
        if format_spec and isinstance(value, int | float) and not isinstance(value, bool):
            return format(abs(value), format_spec)
        return self.say(value)


def fill(template: str, fields: Mapping[str, Any], say) -> str | None:
    """The template with `fields` spoken by `say`; None when a placeholder has no value (the
    caller then keeps its generic phrase rather than print a hole)."""
    names = [n for _, n, _, _ in string.Formatter().parse(template) if n]
    if any(fields.get(n) in (None, "", [], {}) for n in names):
        return None
    return _Words(say).format(template, **fields)
