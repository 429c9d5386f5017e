"""Every built-in filter and gate follows the TrajectoryFilter protocol; the chain and the
filter list behave as documented."""

import pytest
from pydantic import ValidationError
from trajectory_builders import Convo, cancel_convo, make_task

from trajforge.generators.domains import get_domain
from trajforge.schemas import BUILTIN_REASONS, Judgement, Rejection, is_reason_id
from trajforge.verifiers.filters import DEFAULT_FILTERS, FILTERS, FilterSpec, build_filters
from trajforge.verifiers.judge import JudgeGate
from trajforge.verifiers.outcome import OutcomeGate
from trajforge.verifiers.protocol import (
    FilterContext,
    TrajectoryFilter,
    UndeclaredReason,
    apply_filters,
    conformance_problems,
    run_filter,
)
from trajforge.verifiers.result import FilterResult

BUILT_IN = [*FILTERS.values(), OutcomeGate, JudgeGate]


@pytest.fixture(scope="module")
def context():
    return FilterContext(domain=get_domain("retail"))


@pytest.mark.parametrize("cls", BUILT_IN, ids=lambda c: c.name)
def test_builtin_filter_conforms(cls, context):
    assert conformance_problems(cls) == []
    flt = cls()
    assert isinstance(flt, TrajectoryFilter)
    assert set(flt.reasons) <= BUILTIN_REASONS
    verdict = flt.check(cancel_convo().build(make_task(expected_outputs=("54.90",))), context)
    assert isinstance(verdict, FilterResult)
    assert verdict.passed or verdict.reason in flt.reasons


def test_table_names_match_classes_and_default_is_every_builtin():
    assert all(cls.name == name for name, cls in FILTERS.items())
    assert [s.name for s in DEFAULT_FILTERS] == list(FILTERS)
    assert len({cls.name for cls in BUILT_IN}) == len(BUILT_IN)


def test_each_builtin_rejects_with_a_declared_reason(context):
    """One violating trajectory per filter: the chain names the filter and its reason."""
    looping = Convo().user("where is #W1234567")
    for _ in range(3):
        looping.call("get_order_details", order_id="#W1234567").result({"status": "pending"})
    violations = {
        "hallucinated_values": cancel_convo(lookup_first=False).build(),
        "loops": looping.build(),
        "user_fidelity": Convo().user("Hi, my name is John Smith, cancel #W1234567").build(),
        "narrated_actions": Convo().user("cancel #W1234567").agent("I have cancelled it.").build(),
    }
    for name, trajectory in violations.items():
        verdict = run_filter(FILTERS[name](), trajectory, context)
        assert not verdict.passed and verdict.reason in FILTERS[name].reasons, name


def test_chain_stops_at_first_rejection_and_reports_who(context):
    filters = build_filters(DEFAULT_FILTERS)
    good = cancel_convo().build(make_task(expected_outputs=("54.90",)))
    assert apply_filters(filters, good, context).passed == tuple(FILTERS)
    bad = Convo().user("Hi, my name is John Smith, cancel #W1234567").build()
    verdict = apply_filters(filters, bad, context)
    assert verdict.rejected_by == "user_fidelity"
    assert verdict.passed == tuple(FILTERS)[: tuple(FILTERS).index("user_fidelity")]
    assert verdict.rejection.reason == "user_hallucination"


def test_undeclared_reason_is_refused(context):
    class Sloppy(FILTERS["loops"]):
        def check(self, trajectory, context):
            return FilterResult.reject("made_up_reason", "x")

    with pytest.raises(UndeclaredReason, match="made_up_reason"):
        run_filter(Sloppy(), cancel_convo().build(), context)


def test_a_declared_family_covers_its_members(context):
    class PolicyLike(FILTERS["loops"]):
        reasons = ("policy.*",)

        def check(self, trajectory, context):
            rule = "confirm_before_write" if trajectory.steps else "x"
            return FilterResult.reject(f"policy.{rule}", "rule broken")

    assert conformance_problems(PolicyLike) == []
    verdict = run_filter(PolicyLike(), cancel_convo().build(), context)
    assert verdict.reason == "policy.confirm_before_write"
    outside = FilterResult.reject("other.rule", "x")
    PolicyLike.check = lambda self, t, c: outside
    with pytest.raises(UndeclaredReason):
        run_filter(PolicyLike(), cancel_convo().build(), context)


def test_reason_ids_are_validated():
    assert is_reason_id("policy.confirm_before_write") and is_reason_id("too_long_reply")
    for bad in ("Bad", "has space", "x" * 65, "trailing.", ""):
        assert not is_reason_id(bad)
        with pytest.raises(ValueError):
            FilterResult.reject(bad, "detail")
    fields = dict(record_id="r", stage="shortcut", detail="d", payload_json="{}")
    assert Rejection(reason="agent_too_verbose", filter="budget", **fields).reason
    with pytest.raises(ValidationError):
        Rejection(reason="Not A Reason", **fields)


def test_gates_read_attached_records(context):
    gate = JudgeGate()
    verdict = gate.check(cancel_convo().build(), context)
    assert verdict.reason == "judge_ungradeable"
    ungradeable = Judgement(judge="j", status="ungradeable", detail="bad json")
    judged = cancel_convo().build().model_copy(update={"judgements": (ungradeable,)})
    assert gate.check(judged, context).detail == "bad json"


@pytest.mark.parametrize(
    "entry, expected",
    [
        ({"name": "loops", "max_repeats": 1}, "max_repeats"),
        ({"name": "loops", "colour": "blue"}, "colour"),
        ({"name": "nope"}, "unknown filter 'nope'"),
        ({"name": "tests.plugins.filters:AgentWordBudgetFilter"}, "write it as `path:`"),
        ({"name": "loops", "path": "a:b"}, "exactly one of"),
        ({"path": "no_such_pkg.filters:F"}, "cannot import module 'no_such_pkg.filters'"),
        ({"path": "tests.plugins.filters:Missing"}, "has no attribute 'Missing'"),
        ({"path": "tests.plugins.filters:NotAFilter"}, "subclass"),
        ({"path": "tests.plugins.filters"}, "package.module:Attribute"),
        ({"path": "tests.plugins.filters:AgentWordBudgetFilter"}, "max_words"),
    ],
)
def test_bad_filter_entries_say_what_to_fix(entry, expected):
    with pytest.raises(ValidationError, match=expected):
        FilterSpec.model_validate(entry)


def test_plugin_filter_entry_builds_with_its_parameters():
    (flt,) = build_filters(
        [
            FilterSpec.model_validate(
                {"path": "tests.plugins.filters:AgentWordBudgetFilter", "max_words": 5}
            )
        ]
    )
    assert flt.name == "agent_word_budget" and flt.max_words == 5
    assert FilterSpec.model_validate("loops") == FilterSpec(name="loops")


def test_docs_plugin_filter_example_conforms_and_works(context):
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs/guides/filters.md").read_text()
    section = page.split("## A filter", 1)[1]
    namespace: dict = {}
    exec(re.search(r"```python\n(.*?)```", section, re.S).group(1), namespace)
    cls = namespace["AgentWordBudget"]
    assert conformance_problems(cls) == []
    verdict = run_filter(cls(max_words=3), cancel_convo().build(), context)
    assert verdict.reason == "agent_too_verbose"
    assert run_filter(cls(), cancel_convo().build(), context).passed
