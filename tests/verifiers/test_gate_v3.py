"""Quality gate v3 (issue 27): each new check with a violating and a corrected trajectory."""

from __future__ import annotations

from trajectory_builders import Convo, cancel_convo, make_task

from trajforge.generators.domains.retail.tasks import VOCABULARY
from trajforge.schemas import Trajectory
from trajforge.verifiers.outcome_told import check_outcome_told

VERBS = dict(VOCABULARY.action_verbs)


def as_rollout(convo: Convo) -> Trajectory:
    """The record as a rollout writes it: `StepRecord.turn` counts user turns, not messages."""
    user_turns, steps = 0, []
    by_call = {s.call.id: s for s in convo.steps}
    for message in convo.messages:
        user_turns += message.role == "user"
        for call in message.tool_calls:
            steps.append(by_call[call.id].model_copy(update={"turn": user_turns}))
    convo.steps = steps
    return convo.build(make_task())


def summary_closing(text: str) -> Convo:
    c = cancel_convo()
    c.messages = [m for m in c.messages if not (m.content or "").startswith("I have cancelled")]
    c.messages.insert(-1, c.messages[-1].model_copy(update={"role": "assistant", "content": text}))
    return c


def test_the_confirmation_prompt_before_a_write_does_not_tell_its_result():
    # The prompt "Shall I cancel it?" names the order and the action; only text after the
    # write's result may tell it. With `turn` read as a message index this row passed.
    bad = as_rollout(summary_closing("All done. Is there anything else I can help you with?"))
    result = check_outcome_told(bad, VERBS)
    assert not result.passed and result.reason == "outcome_not_told"
    assert check_outcome_told(as_rollout(cancel_convo()), VERBS).passed


def test_a_paraphrased_report_tells_the_write():
    for said in (
        "Order #W1234567 is now cancelled.",  # the new status
        "The cancellation of #W1234567 went through.",  # object + action in another form
        "You'll get $54.90 back: #W1234567 has been refunded.",  # a verb the domain backs
    ):
        assert told_by(said), said


def told_by(said: str) -> bool:
    return check_outcome_told(as_rollout(summary_closing(said)), VERBS).passed


def test_an_id_without_the_action_does_not_tell():
    assert not told_by("Order #W1234567 is on file. Anything else?")


def test_a_rewritten_closing_must_still_tell_each_write():
    from trajforge.generators.blueprint_plan import Utterance
    from trajforge.generators.reports import WriteOutcome
    from trajforge.generators.verbalise import acceptable

    cancel = WriteOutcome.of("cancel_pending_order", {"order_id": "#W1234567"}, ["cancelled"])
    draft = "I've cancelled order #W1234567. Is there anything else I can help you with?"
    closing = Utterance("assistant", draft, (), (draft,), (cancel,))
    summary = "Order #W1234567 is all set. Is there anything else I can help you with?"
    assert not acceptable(summary, closing)
    assert acceptable(summary, Utterance("assistant", draft, (), (draft,)))  # the old check
    assert acceptable("Order #W1234567 is cancelled now. Anything else I can help with?", closing)
