"""DomainVocabulary: a domain's closed task-type set, read-only subset, roles and verbs."""

import pytest
from pydantic import ValidationError

from trajforge.generators.domains import DOMAINS
from trajforge.generators.vocabulary import GENERIC_ACTION_VERBS, DomainVocabulary
from trajforge.schemas import IntentCoordinates


def test_read_only_types_must_be_declared():
    with pytest.raises(ValidationError, match="not in task_types"):
        DomainVocabulary(task_types=("deposit",), read_only_task_types=frozenset({"balance"}))


def test_task_types_are_identifiers_listed_once():
    with pytest.raises(ValidationError, match="duplicates"):
        DomainVocabulary(task_types=("a", "a"))
    with pytest.raises(ValidationError):
        DomainVocabulary(task_types=("Not An Identifier",))
    with pytest.raises(ValidationError):
        IntentCoordinates(persona_id="p", domain="d", task_types=("has space",), complexity=1)


def test_is_read_only_needs_every_type_read_only():
    v = DomainVocabulary(task_types=("a", "b"), read_only_task_types=frozenset({"a"}))
    assert v.is_read_only(("a",)) and not v.is_read_only(("a", "b")) and not v.is_read_only(())


def test_undeclared_task_type_names_the_domain_and_fix():
    v = DomainVocabulary(task_types=("a",))
    v.check_task_types(("a",), "d")
    with pytest.raises(ValueError, match="not declared by domain 'd'.*add them"):
        v.check_task_types(("a", "zz"), "d")


def test_defaults_are_generic():
    v = DomainVocabulary(task_types=("a",))
    assert (v.user_role, v.agent_role) == ("user", "assistant")
    assert v.action_verbs == dict(GENERIC_ACTION_VERBS)
    assert "cancelled" not in v.action_verbs  # a retail verb is retail's


@pytest.mark.parametrize("name", sorted(DOMAINS))
def test_every_domain_declares_a_vocabulary(name):
    domain = DOMAINS[name]()
    assert domain.vocabulary.task_types
    assert domain.vocabulary.read_only_task_types <= set(domain.vocabulary.task_types)
