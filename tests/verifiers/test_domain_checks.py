"""A domain's `TrajectoryCheck`s run inside the built-in filter they extend, with that filter's
declared reasons only."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from trajectory_builders import Convo

from trajforge.generators.domains import get_domain
from trajforge.generators.policy_rules import TrajectoryCheck
from trajforge.verifiers.loops import LoopsFilter
from trajforge.verifiers.protocol import FilterContext, UndeclaredReason, run_filter


def _context(*checks: TrajectoryCheck) -> FilterContext:
    retail = get_domain("retail")
    return FilterContext(domain=SimpleNamespace(name="x", trajectory_checks=checks,
                                                vocabulary=retail.vocabulary))  # fmt: skip


def test_a_domain_check_rejects_inside_the_filter_it_extends():
    trajectory = Convo().user("hi").agent("hello").build()
    said_hello = TrajectoryCheck("loops", "loop_or_repeat", lambda t: ["said hello"])
    assert run_filter(LoopsFilter(), trajectory, _context()).passed
    refused = run_filter(LoopsFilter(), trajectory, _context(said_hello))
    assert (refused.reason, refused.detail) == ("loop_or_repeat", "said hello")
    other = TrajectoryCheck("policy", "loop_or_repeat", lambda t: ["not mine"])
    assert run_filter(LoopsFilter(), trajectory, _context(other)).passed


def test_a_domain_check_may_not_use_a_reason_its_filter_does_not_declare():
    trajectory = Convo().user("hi").agent("hello").build()
    wrong = TrajectoryCheck("loops", "user_hallucination", lambda t: ["wrong family"])
    with pytest.raises(UndeclaredReason):
        run_filter(LoopsFilter(), trajectory, _context(wrong))
