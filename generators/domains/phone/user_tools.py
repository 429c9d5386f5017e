"""The customer's own tools: their phone's settings, which no agent tool can change.

The phone in the caller's hand is `state.devices[state.in_hand]`. The words around the tools
are this domain's: how an agent asks for each action (`instruction`, the oracle's words), which
actions an agent's text asks for (`requested`, read by the scripted user), and which ones it
says the customer already took (`claimed`, the shortcut check: an agent must not tell the
customer they did something they never did).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from trajforge.generators.domains.phone.data_model import Device, PhoneState
from trajforge.generators.state_dumps import DumpPath
from trajforge.generators.tooling import ToolError, tool
from trajforge.generators.user_tools import UserTools
from trajforge.schemas import GoldAction


def _in_hand(state: PhoneState, arguments: dict) -> Iterable[DumpPath]:
    """A user tool mutates at most the phone in the caller's hand."""
    return (("devices", state.in_hand),)


def _phone(state: PhoneState) -> Device:
    device = state.devices.get(state.in_hand)
    if device is None:
        raise ToolError("there is no phone in your hand")
    return device


def _status(device: Device) -> str:
    on = {True: "on", False: "off"}
    return (
        f"Airplane mode {on[device.airplane_mode]}, mobile data {on[device.mobile_data]}, "
        f"data roaming {on[device.data_roaming]}."
    )


@tool("read")
def check_phone_settings(state: PhoneState) -> str:
    """Read the settings your phone shows: airplane mode, mobile data, data roaming."""
    return _status(_phone(state))


def _switch(state: PhoneState, setting: str, label: str, on: bool) -> str:
    device = _phone(state)
    if getattr(device, setting) == on:
        raise ToolError(f"{label} is already {'on' if on else 'off'}")
    setattr(device, setting, on)
    return _status(device)


@tool("write", touches=_in_hand)
def set_airplane_mode(state: PhoneState, on: bool) -> str:
    """Turn airplane mode on or off on your phone.

    Args:
        on: True to turn it on, False to turn it off.
    """
    return _switch(state, "airplane_mode", "airplane mode", on)


@tool("write", touches=_in_hand)
def set_mobile_data(state: PhoneState, on: bool) -> str:
    """Turn mobile data on or off on your phone.

    Args:
        on: True to turn it on, False to turn it off.
    """
    return _switch(state, "mobile_data", "mobile data", on)


@tool("write", touches=_in_hand)
def set_data_roaming(state: PhoneState, on: bool) -> str:
    """Turn data roaming on or off on your phone.

    Args:
        on: True to turn it on, False to turn it off.
    """
    return _switch(state, "data_roaming", "data roaming", on)


@tool("write", touches=_in_hand)
def restart_phone(state: PhoneState) -> str:
    """Restart your phone."""
    device = _phone(state)
    device.restarts += 1
    return "The phone restarted. " + _status(device)


#: Switch tool -> the setting's words.
_SWITCHES = {
    "set_airplane_mode": "airplane mode",
    "set_mobile_data": "mobile data",
    "set_data_roaming": "data roaming",
}


def instruction(action: GoldAction) -> str:
    """What the agent says to have the customer take `action` on their phone."""
    if action.name == "restart_phone":
        return "Please restart your phone now, and tell me once it is back on."
    if action.name == "check_phone_settings":
        return "Please open your phone's settings and read me what they show."
    state = "on" if action.arguments["on"] else "off"
    return f"Please turn {state} {_SWITCHES[action.name]} on your phone and tell me what it shows."


_TURN = re.compile(
    r"\bturn(?:ing)? (?P<a>on|off) (?P<s1>airplane mode|mobile data|data roaming)\b"
    r"|\bturn(?:ing)? (?P<s2>airplane mode|mobile data|data roaming) (?P<b>on|off)\b",
    re.IGNORECASE,
)
_RESTART = re.compile(r"\brestart (?:your|the) phone\b", re.IGNORECASE)
_READ = re.compile(r"\bread me what (?:they|it) shows?\b", re.IGNORECASE)


def requested(text: str) -> tuple[GoldAction, ...]:
    """The actions an agent's text asks the customer to take, in the order it names them."""
    by_setting = {label: name for name, label in _SWITCHES.items()}
    found: list[tuple[int, GoldAction]] = []
    for m in _TURN.finditer(text):
        setting = (m.group("s1") or m.group("s2")).lower()
        state = (m.group("a") or m.group("b")).lower()
        found.append(
            (
                m.start(),
                GoldAction(name=by_setting[setting], arguments={"on": state == "on"}, actor="user"),
            )
        )
    found += [
        (m.start(), GoldAction(name="restart_phone", arguments={}, actor="user"))
        for m in _RESTART.finditer(text)
    ]
    found += [
        (m.start(), GoldAction(name="check_phone_settings", arguments={}, actor="user"))
        for m in _READ.finditer(text)
    ]
    return tuple(a for _, a in sorted(found, key=lambda f: f[0]))


_YOU_DID = r"\byou(?:'ve| have)?\s+(?:now\s+|already\s+|just\s+)?"
_CLAIMS: tuple[tuple[re.Pattern[str], str, dict], ...] = (
    *(
        (
            re.compile(
                rf"{_YOU_DID}(?:turned|switched) (?:{state} {label}|{label} {state})\b"
                rf"|\b(?:since|now that|as) {label} is (?:now )?{state}\b",
                re.IGNORECASE,
            ),
            name,
            {"on": state == "on"},
        )
        for name, label in _SWITCHES.items()
        for state in ("on", "off")
    ),
    (
        re.compile(
            rf"{_YOU_DID}restarted (?:your|the) phone\b|\bafter your restart\b", re.IGNORECASE
        ),
        "restart_phone",
        {},
    ),
)


def claimed(text: str) -> tuple[GoldAction, ...]:
    """The actions an agent's text says the customer has already taken."""
    return tuple(
        GoldAction(name=name, arguments=arguments, actor="user")
        for pattern, name, arguments in _CLAIMS
        if pattern.search(text)
    )


USER_TOOLS = UserTools(
    functions=(
        check_phone_settings,
        set_airplane_mode,
        set_mobile_data,
        set_data_roaming,
        restart_phone,
    ),
    instruction=instruction,
    requested=requested,
    claimed=claimed,
)
