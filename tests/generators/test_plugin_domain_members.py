"""The member check of plugin domains: every built-in domain passes it, wrong types are named."""

from __future__ import annotations

import pytest

from trajforge.generators.domains import DOMAINS
from trajforge.generators.plugins import domain_member_problems


@pytest.mark.parametrize("name", sorted(DOMAINS))
def test_every_builtin_domain_has_well_typed_members(name):
    assert domain_member_problems(DOMAINS[name]()) == []


def test_wrong_member_types_are_each_named():
    class Odd:
        name = ""
        policy = 3
        confirm_writes = 1
        phrasing = {}
        outcome_checks = [len, "x"]

    problems = domain_member_problems(Odd())
    assert [p.split(" ")[0] for p in problems] == [
        "name",
        "policy",
        "outcome_checks",
        "confirm_writes",
        "phrasing",
    ]
    assert (
        "confirm_writes must be a bool, not int (or leave it out for DomainOptions' default)"
        in problems
    )


def test_options_are_typed_members_with_defaults():
    """`options_of` gives each optional member typed: the domain's own value, else the
    documented default; every option has a load-time check."""
    from trajforge.generators.domain_options import (
        OPTIONAL_DOMAIN_MEMBERS,
        DomainOptions,
        options_of,
    )
    from trajforge.generators.domains.retail.phrasing import RETAIL_PHRASING
    from trajforge.generators.phrasing import NO_PHRASING
    from trajforge.generators.plugins import _member_checks

    retail = options_of(DOMAINS["retail"]())
    assert retail.phrasing is RETAIL_PHRASING and retail.confirm_writes is True
    assert options_of(DOMAINS["search"]()).confirm_writes is False
    bare = options_of(object())
    assert bare == DomainOptions() and bare.phrasing is NO_PHRASING and bare.policy_rules is None
    assert set(OPTIONAL_DOMAIN_MEMBERS) <= set(_member_checks())
