"""The phone world: a few mobile lines (the carrier's records) and each line's handset.

Two parts with two owners. `lines` is the carrier's database, which only the agent's tools
change. `devices` are the customers' phones, which only the customer's own tools change
(`user_tools.py`); `in_hand` names the line whose phone the caller holds: the world is drawn
around its caller, an active line. Every line starts with one fault on each side (and no
roaming), so a task always needs the agent and the customer to act.
"""

from __future__ import annotations

import random
from typing import Literal

from pydantic import BaseModel, ConfigDict

LineStatus = Literal["active", "suspended"]
Registration = Literal["ok", "stale"]

_FIRST = ("Ana", "Ben", "Chloe", "Dario", "Esme", "Femi", "Greta", "Hugo")
_LAST = ("Abbott", "Brandt", "Costa", "Duval", "Egan", "Ferris", "Goto", "Haas")
NUM_LINES = 4

#: The three faults a line can have, each a carrier-side and a phone-side setting.
Fault = Literal["no_service", "no_data", "roaming"]
FAULTS: tuple[Fault, ...] = ("no_service", "no_data", "roaming")


class Line(BaseModel):
    """A line on the carrier's side: status, and the settings only the agent can change."""

    model_config = ConfigDict(extra="forbid")

    line_id: str
    owner: str
    email: str  # how the caller is identified
    phone_number: str
    status: LineStatus = "active"
    registration: Registration = "ok"  # "stale": the network lost the phone; reset it
    data_barred: bool = False  # mobile data blocked on the account
    roaming: bool = False  # roaming allowed on the account


class Device(BaseModel):
    """A customer's phone: the settings only its owner can change."""

    model_config = ConfigDict(extra="forbid")

    airplane_mode: bool = False
    mobile_data: bool = True
    data_roaming: bool = False
    restarts: int = 0


class PhoneState(BaseModel):
    """Lines by id (`#L2001`, ...), each line's phone by the same id, and whose phone is in
    the caller's hand."""

    model_config = ConfigDict(extra="forbid")

    lines: dict[str, Line]
    devices: dict[str, Device]
    in_hand: str = ""


def _fault(line: Line, device: Device, fault: Fault) -> None:
    if fault == "no_service":
        line.registration, device.airplane_mode = "stale", True
    elif fault == "no_data":
        line.data_barred, device.mobile_data = True, False


def generate_state(seed: int) -> PhoneState:
    """A deterministic world for `seed`: distinct owners, one fault per line (roaming is off
    everywhere: a traveller's fault), maybe one suspended line."""
    rng = random.Random(seed)
    owners = rng.sample([(f, last) for f in _FIRST for last in _LAST], NUM_LINES)
    suspended = rng.randrange(NUM_LINES * 2)  # half the worlds have one suspended line
    lines, devices = {}, {}
    for i, (first, last) in enumerate(owners):
        line_id = f"#L{2001 + i}"
        line = Line(
            line_id=line_id,
            owner=f"{first} {last}",
            email=f"{first.lower()}.{last.lower()}{rng.randint(1, 99)}@example.com",
            phone_number=f"555-01{rng.randrange(10, 100)}-{i}",
            status="suspended" if i == suspended else "active",
        )
        device = Device()
        _fault(line, device, rng.choice(FAULTS))
        lines[line_id], devices[line_id] = line, device
    active = [line_id for line_id, line in lines.items() if line.status == "active"]
    return PhoneState(lines=lines, devices=devices, in_hand=rng.choice(active))
