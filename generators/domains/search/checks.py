"""The search domain's own trajectory checks, each run inside the built-in filter it extends
(`TrajectoryCheck`, generators/policy_rules.py): citations under the policy filter, names the
agent was never shown under the hallucinated-values filter, a user turn that names what the
agent is to find under user fidelity, the answer stated before a read document stated it under
answer-before-evidence."""

from __future__ import annotations

from trajforge.generators.domains.search.claims import (
    citation_problems,
    unread_answer_problems,
    unshown_name_problems,
)
from trajforge.generators.domains.search.user_leaks import user_leak_problems
from trajforge.generators.policy_rules import TrajectoryCheck

TRAJECTORY_CHECKS = (
    TrajectoryCheck("policy", "policy.cite_read_documents", citation_problems),
    TrajectoryCheck("hallucinated_values", "hallucinated_value", unshown_name_problems),
    TrajectoryCheck("user_fidelity", "user_hallucination", user_leak_problems),
    TrajectoryCheck("answer_before_evidence", "answer_before_evidence", unread_answer_problems),
)
