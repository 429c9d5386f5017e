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
    assert "confirm_writes must be a bool, not int" in problems
