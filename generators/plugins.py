"""Objects from the user's own package, named in the config by a dotted import path.

A domain, a trajectory filter or a judge rubric can live outside trajforge: the config names it
as `package.module:attribute` (the entry-point syntax) and this module imports it with importlib.
Nothing is discovered implicitly: the built-ins stay in their frozen tables, and a path is
resolved only where the config names one. Resolution happens twice: at config load (so a typo
fails before any worker starts, exit code 2) and in each worker's DoFn `setup()` (so it works on
remote workers, where the user's package must be installed too, e.g. with Beam's
`--extra_package dist/mypkg-0.1.tar.gz` or `--setup_file ./setup.py`).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

#: `package.module:attribute` (attribute may be dotted: `module:Class.inner`).
_PATH = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")

INSTALL_HINT = (
    "install the package that provides it in this environment and on every worker "
    "(e.g. pip install -e ., and Beam's --extra_package or --setup_file for remote runners)"
)


class PluginError(ValueError):
    """A dotted path that cannot be used; the message says what failed and how to fix it."""


def is_plugin_path(value: str) -> bool:
    """True for `module:attribute` names (built-in table names never contain a colon)."""
    return ":" in value


def load_object(path: str) -> Any:
    """Import `package.module:attribute` and return the attribute."""
    if not _PATH.match(path):
        raise PluginError(
            f"{path!r} is not a dotted import path; write it as 'package.module:Attribute'"
        )
    module_name, _, attribute = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as err:
        raise PluginError(f"cannot import module {module_name!r} ({err}); {INSTALL_HINT}") from err
    for part in attribute.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise PluginError(
                f"module {module_name!r} has no attribute {attribute!r}; "
                "check the name after the colon"
            ) from None
    return obj


#: What a domain class must provide (the `Domain` protocol in generators/tooling.py).
DOMAIN_MEMBERS = ("name", "policy", "toolbox", "vocabulary", "initial_state", "synthesize_task")


def load_domain(path: str) -> Any:
    """Import the domain class at `path` and instantiate it (no arguments), checking it has
    every member of the `Domain` protocol."""
    cls = load_object(path)
    if not callable(cls):
        raise PluginError(f"{path!r} is not a domain class; point it at the class itself")
    try:
        domain = cls()
    except Exception as err:  # noqa: BLE001 - any construction failure is a config problem
        raise PluginError(f"{path!r} could not be constructed with no arguments: {err}") from err
    missing = [m for m in DOMAIN_MEMBERS if not hasattr(domain, m)]
    if missing:
        raise PluginError(
            f"{path!r} is not a Domain: it lacks {', '.join(missing)} "
            "(see the Domain protocol in trajforge.generators.tooling)"
        )
    wrong = domain_member_problems(domain)
    if wrong:
        raise PluginError(
            f"{path!r} is not a Domain: {'; '.join(wrong)} "
            "(see the Domain protocol in trajforge.generators.tooling)"
        )
    return domain


def _is_sequence_of_callables(value: Any) -> bool:
    return isinstance(value, (tuple, list)) and all(callable(v) for v in value)


def _member_checks() -> Mapping[str, tuple[Callable[[Any], bool], str]]:
    """Each Domain member (required or optional) -> (a check of its value, what it must be).

    Built on first use: the types live in generators modules that import much more than this
    one needs at config load."""
    # lazy, start-up: ~160 ms (domain_options, phrasing, policy_rules, tooling, vocabulary)
    from trajforge.generators.domain_options import OPTIONAL_DOMAIN_MEMBERS
    from trajforge.generators.phrasing import Phrasing
    from trajforge.generators.policy_rules import ClaimTypes, PolicyRules, TrajectoryCheck
    from trajforge.generators.tooling import Toolbox
    from trajforge.generators.user_tools import UserTools
    from trajforge.generators.vocabulary import DomainVocabulary

    checks: dict[str, tuple[Callable[[Any], bool], str]] = {
        "name": (lambda v: isinstance(v, str) and bool(v), "a non-empty str"),
        "policy": (lambda v: isinstance(v, str), "a str (the policy text)"),
        "toolbox": (lambda v: isinstance(v, Toolbox), "a trajforge Toolbox"),
        "vocabulary": (lambda v: isinstance(v, DomainVocabulary), "a DomainVocabulary"),
        "initial_state": (callable, "a method (InitialState -> state model)"),
        "synthesize_task": (callable, "a method (Persona, seed -> Task)"),
        "policy_rules": (lambda v: v is None or isinstance(v, PolicyRules), "PolicyRules or None"),
        "claim_types": (lambda v: v is None or isinstance(v, ClaimTypes), "ClaimTypes or None"),
        "outcome_checks": (
            _is_sequence_of_callables,
            "a tuple of functions (trajectory -> problem text or None)",
        ),
        "trajectory_checks": (
            lambda v: (
                isinstance(v, (tuple, list)) and all(isinstance(c, TrajectoryCheck) for c in v)
            ),
            "a tuple of TrajectoryCheck (generators/policy_rules.py)",
        ),
        "call_meanings": (
            lambda v: isinstance(v, Mapping) and all(callable(f) for f in v.values()),
            "a mapping of tool name -> function (arguments -> comparable meaning)",
        ),
        "confirm_writes": (lambda v: isinstance(v, bool), "a bool"),
        "phrasing": (lambda v: isinstance(v, Phrasing), "a Phrasing"),
        "user_tools": (
            lambda v: v is None or isinstance(v, UserTools),
            "UserTools or None (generators/user_tools.py)",
        ),
    }
    assert set(OPTIONAL_DOMAIN_MEMBERS) <= set(checks), "an optional member has no check"
    return MappingProxyType(checks)


def domain_member_problems(domain: Any) -> list[str]:
    """What is wrong with the members `domain` declares (absent optional ones get defaults)."""
    # lazy, measured start-up cost: domain_options ~160 ms
    from trajforge.generators.domain_options import OPTIONAL_DOMAIN_MEMBERS

    problems = []
    for member, (check, expected) in _member_checks().items():
        if not hasattr(domain, member):
            continue
        value = getattr(domain, member)
        if not check(value):
            problem = f"{member} must be {expected}, not {type(value).__name__}"
            if member in OPTIONAL_DOMAIN_MEMBERS:
                problem += " (or leave it out for DomainOptions' default)"
            problems.append(problem)
    return problems
