"""Values by grammar: street addresses in their full and abbreviated forms, beside the
amounts, dates, emails and ids of `generators.values`, through one extractor.

A regex per form misses the other form: "12 Orchard Lane" and "12 Orchard Ln" are one address,
but a pattern written for tool data ("Ln") never sees the spelled-out one a model writes, and a
claim about an address without a zip passed unchecked. `addresses_in` parses a house number, a
capitalised street name and a street type from the USPS suffix table (full word or its
abbreviation, with or without a period), an optional unit ("Apt 4", "Suite 210"), and gives each
a canonical `key` ("12 orchard ln") so both forms compare equal. `typed_values` returns every
value of a text with its kind, for checks that care which kind a value is.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from trajforge.generators.values import amount_key, extract_values

#: Street type, spelled out -> its USPS abbreviation (the canonical form of a key).
STREET_TYPES: MappingProxyType[str, str] = MappingProxyType(
    {
        "street": "st",
        "avenue": "ave",
        "lane": "ln",
        "road": "rd",
        "drive": "dr",
        "boulevard": "blvd",
        "court": "ct",
        "terrace": "ter",
        "place": "pl",
        "way": "way",
        "circle": "cir",
        "parkway": "pkwy",
        "highway": "hwy",
        "square": "sq",
        "trail": "trl",
        "alley": "aly",
        "crescent": "cres",
        "plaza": "plz",
        "point": "pt",
        "loop": "loop",
        "row": "row",
        "walk": "walk",
        "path": "path",
        "pike": "pike",
        "close": "cl",
    }
)
#: Other spellings models write ("Av", "Str", "Blv") -> the canonical abbreviation.
_VARIANTS = {"av": "ave", "str": "st", "blv": "blvd", "ter": "ter", "terr": "ter", "crt": "ct"}
_CANONICAL = {**{a: a for a in STREET_TYPES.values()}, **STREET_TYPES, **_VARIANTS}

_TYPE = "|".join(sorted(map(re.escape, _CANONICAL), key=len, reverse=True))
_NAME_WORD = r"(?:[A-Z][a-zA-Z'-]+|\d+(?:st|nd|rd|th))"
_ADDRESS = re.compile(
    rf"(?<![\w#$.-])(\d{{1,6}})\s+({_NAME_WORD}(?:\s+{_NAME_WORD}){{0,3}}?)\s+(?i:({_TYPE}))\.?"
    rf"(?![\w-])"
    rf"(?:,?\s+(?i:(apt|apartment|suite|ste|unit|#)\.?)\s*(\w+))?"
)

Kind = Literal["address", "email", "date", "amount", "id"]


@dataclass(frozen=True)
class Address:
    """One street address line found in text, with the key both of its forms share."""

    text: str
    number: str
    street: str
    street_type: str  # canonical abbreviation
    unit: str | None

    @property
    def key(self) -> str:
        return f"{self.number} {self.street.lower()} {self.street_type}"


@dataclass(frozen=True)
class Value:
    kind: Kind
    text: str
    key: str


def street_type(word: str) -> str | None:
    """The canonical abbreviation of a street type ("Lane", "ln", "Ln." -> "ln"), or None."""
    return _CANONICAL.get(word.lower().rstrip("."))


@functools.lru_cache(maxsize=4096)
def addresses_in(text: str) -> tuple[Address, ...]:
    """Street address lines in `text`, full or abbreviated street type, with or without zip."""
    found = []
    for m in _ADDRESS.finditer(text):
        number, street, kind, _, unit = m.groups()
        found.append(
            Address(m.group(0), number, " ".join(street.split()), _CANONICAL[kind.lower()], unit)
        )
    return tuple(found)


def address_keys(text: str) -> frozenset[str]:
    """The canonical keys of every address in `text` (what a claim's address is compared with)."""
    return frozenset(a.key for a in addresses_in(text))


_MONTHS = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
)  # fmt: skip
_MONTH_NAMES = sorted(
    {n.title() for n in _MONTHS} | {n[:3].title() + "." for n in _MONTHS} | {"Sept."}, key=len
)
_MONTH = "(" + "|".join(re.escape(n).replace(r"\.", r"\.?") for n in reversed(_MONTH_NAMES)) + ")"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_WORD_DATE = re.compile(
    rf"\b{_MONTH}\s+{_DAY}(?:,?\s+(\d{{4}}))?\b|\b{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+(\d{{4}}))?\b"
)
_MONEY = re.compile(
    r"(?<![\w.])\$\s?(\d[\d,]*(?:\.\d{1,2})?)(?![\d])|(?<![\w.$])(\d[\d,]*(?:\.\d{1,2})?)\s+"
    r"(?:dollars|usd|bucks)\b",
    re.IGNORECASE,
)


def dates_in(text: str) -> tuple[Value, ...]:
    """Dates written with a month name ("March 3", "3rd of Mar 2025"): key `date:<month>-<day>`
    (with `-<year>` when given), so either order and any month spelling compare equal."""
    found = []
    for m in _WORD_DATE.finditer(text):
        month, day, year = (m.group(1), m.group(2), m.group(3)) if m.group(1) else m.group(5, 4, 6)
        index = next(i for i, name in enumerate(_MONTHS, 1) if name.startswith(month.lower()[:3]))
        if not 1 <= int(day) <= 31:
            continue
        key = f"date:{index:02d}-{int(day):02d}" + (f"-{year}" if year else "")
        found.append(Value("date", m.group(0), key))
    return tuple(found)


def money_in(text: str) -> tuple[Value, ...]:
    """Amounts of money, whole or with cents ("$812", "812 dollars", "$54.90"): key
    `amount:<float>` as `generators.values.amount_key` writes it."""
    return tuple(
        Value("amount", m.group(0), "amount:" + amount_key(m.group(1) or m.group(2)))
        for m in _MONEY.finditer(text)
    )


def typed_values(text: str) -> tuple[Value, ...]:
    """Every value of `text` with its kind: addresses, dates in words and money by this grammar,
    the rest as `generators.values.extract_values` normalises them (amounts as
    `amount:<float>`)."""
    out = [Value("address", a.text, a.key) for a in addresses_in(text)]
    out += [*dates_in(text), *money_in(text)]
    for key in sorted(extract_values(text)):
        if key.startswith("amount:"):
            kind: Kind = "amount"
        elif "@" in key:
            kind = "email"
        elif re.fullmatch(r"\d{4}-\d{2}-\d{2}.*", key):
            kind = "date"
        else:
            kind = "id"
        out.append(Value(kind, key, key))
    return tuple({(v.kind, v.key): v for v in reversed(out)}.values())[::-1]
