import asyncio
import dataclasses
from pathlib import Path

from trajectory_builders import ORDER, Convo, cancel_convo, make_task

from trajforge.generators.domains.retail.tasks import VOCABULARY as RETAIL
from trajforge.generators.llm.scripted import ScriptedLLM
from trajforge.generators.vocabulary import DomainVocabulary
from trajforge.schemas import GoldAction, Signatures
from trajforge.verifiers.no_tool_baseline import check_shortcut_prone, no_tool_baseline
from trajforge.verifiers.signatures import (
    check_answer_before_evidence,
    compute_signatures,
    gold_values,
    prior_shortcut_rate,
)

GOLD = (
    GoldAction(name="cancel_pending_order", arguments={"order_id": "#W1234567", "reason": "x"}),
)


def _task():
    return make_task(expected_outputs=("54.90",), gold_actions=GOLD)


def test_gold_values_include_outputs_and_gold_arguments():
    assert gold_values(_task()) == ("#w1234567", "amount:54.9")


def test_signatures_of_a_grounded_trajectory():
    t = cancel_convo(authenticate=False).build(_task())
    sig = compute_signatures(t)
    # message 4 is the first agent text quoting the total; the order id was passed at message 2
    assert sig.answer_hit_turns == {"#w1234567": 2, "amount:54.9": 4}
    assert sig.evidence_before_answer
    assert sig.solving_tool_calls == 1  # the lookup precedes the answer
    assert sig.solving_tokens > 0
    assert check_answer_before_evidence(t).passed


def test_answer_before_lookup_is_rejected():
    t = cancel_convo(lookup_first=False, authenticate=False).build(_task())
    sig = compute_signatures(t)
    assert not sig.evidence_before_answer
    assert sig.solving_tool_calls == 0
    result = check_answer_before_evidence(t)
    assert not result.passed and result.reason == "answer_before_evidence"
    assert "amount:54.9" in result.detail


def test_value_only_in_system_prompt_is_not_evidence():
    t = (
        Convo(system="Order totals: #W1234567 is 54.90")
        .user("cancel #W1234567")
        .agent("It cost $54.90.")
        .build(_task())
    )
    assert not check_answer_before_evidence(t).passed


def test_prior_shortcut_rate():
    ok = Signatures(solving_tool_calls=1, solving_tokens=3)
    bad = Signatures(solving_tool_calls=0, solving_tokens=3, evidence_before_answer=False)
    assert prior_shortcut_rate([ok, bad, ok, ok]) == 0.25
    assert prior_shortcut_rate([]) == 0.0


def test_read_only_task_answered_without_tools_is_shortcut_prone():
    task = make_task(task_types=("order_status",), expected_outputs=("delivered", "2024-05-01"))
    assert not check_shortcut_prone(task, "It was delivered on 2024-05-01.", RETAIL).passed
    assert check_shortcut_prone(task, "It was delivered, I am not sure when.", RETAIL).passed
    assert check_shortcut_prone(task, "It is pending, expected 2024-05-01", RETAIL).passed


def test_write_task_is_never_shortcut_prone():
    task = make_task(expected_outputs=("54.90",))
    result = check_shortcut_prone(task, "I cancelled it, $54.90 refunded", RETAIL)
    assert result.passed and "write task" in result.detail


def test_no_tool_baseline_asks_without_tools():
    llm = ScriptedLLM(replies=["It was delivered."])
    task = make_task(task_types=("order_status",))
    answer = asyncio.run(no_tool_baseline(task, llm, "m", seed=3))
    assert answer == "It was delivered."
    request = llm.requests[0]
    assert request.tools == () and request.seed == 3
    assert "#W1234567" in request.messages[1].content
    assert request.sampling.max_tokens == 256  # quality.shortcut.baseline_max_tokens's default


def test_the_no_tool_answer_is_as_long_as_configured():
    """The quickstart stops the one baseline answer at 64 tokens (a CPU model decodes it one
    token at a time; 256 cost 17 CPU-seconds of its build)."""
    from trajforge.pipelines.config import load_config

    llm = ScriptedLLM(replies=["It was delivered."])
    task = make_task(task_types=("order_status",))
    asyncio.run(no_tool_baseline(task, llm, "m", seed=3, max_tokens=64))
    assert llm.requests[0].sampling.max_tokens == 64
    quickstart = load_config(Path(__file__).resolve().parents[2] / "configs/quickstart.yaml")
    assert quickstart.quality.shortcut.baseline_max_tokens == 64


def test_read_only_task_types_are_the_domains():
    task = make_task(task_types=("order_status",), expected_outputs=("delivered",))
    assert not check_shortcut_prone(task, "It was delivered.", RETAIL).passed
    # A domain that does not declare order_status read-only never calls it shortcut-prone.
    other = DomainVocabulary(task_types=("order_status",))
    assert check_shortcut_prone(task, "It was delivered.", other).passed


def test_lookup_signature_counts_calls_before_answer():
    c = Convo().user("total of #W1234567?")
    c.call("get_order_details", order_id="#W1234567").result(ORDER)
    c.call("get_user_details", user_id="sara_doe_1234").result({"user_id": "sara_doe_1234"})
    c.agent("The total is 54.90")
    sig = compute_signatures(c.build(_task()))
    assert sig.solving_tool_calls == 2


def test_a_scan_handed_in_is_used_for_its_own_trajectory_only():
    """The pipeline scans once and hands the scan to the filter (no module-level memo): the
    filter trusts a scan of these very messages and rescans anything else."""
    from trajforge.verifiers.protocol import FilterContext
    from trajforge.verifiers.signatures import AnswerBeforeEvidenceFilter, scan_shortcuts

    grounded = cancel_convo(authenticate=False).build(_task())
    scan = scan_shortcuts(grounded)
    assert compute_signatures(grounded, scan=scan) == compute_signatures(grounded)
    # a scan of these messages saying the total was stated before it was shown is believed
    claimed = dataclasses.replace(scan, evidence={})
    context = FilterContext(domain=None, scan=claimed)  # type: ignore[arg-type]
    assert not AnswerBeforeEvidenceFilter().check(grounded, context).passed
    # the same claim about another trajectory's messages is not
    other = cancel_convo(authenticate=False).build(_task())
    assert other.messages is not grounded.messages
    assert AnswerBeforeEvidenceFilter().check(other, context).passed


def test_signatures_keep_no_module_state():
    import trajforge.verifiers.signatures as signatures

    assert not hasattr(signatures, "_RECENT")
