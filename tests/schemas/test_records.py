import pytest
from pydantic import ValidationError

from tests.factories import TRAITS
from trajforge.schemas import (
    ChatRequest,
    Message,
    Persona,
    Rejection,
    SamplingParams,
    ToolCall,
    TraitVector,
    canonical_json,
    derive_seed,
)


def make_persona(**over):
    return Persona.create(
        name="Ann Lee",
        traits=TraitVector(**TRAITS),
        background="teacher",
        communication_style="short",
        **over,
    )


def test_persona_round_trip_and_content_id():
    p = make_persona()
    again = Persona.from_json(p.to_json())
    assert again == p
    assert make_persona().id == p.id
    assert (
        Persona.create(
            name="Bo", traits=p.traits, background="teacher", communication_style="short"
        ).id
        != p.id
    )


def test_records_are_frozen_and_strict():
    p = make_persona()
    with pytest.raises(ValidationError):
        p.name = "x"
    with pytest.raises(ValidationError, match="nickname"):
        Persona.model_validate({**p.model_dump(), "nickname": "x"})
    with pytest.raises(ValidationError, match="patience"):
        TraitVector(**{**TRAITS, "patience": "infinite"})


def test_canonical_json_is_key_order_independent():
    assert canonical_json({"b": 1, "a": [1, {"d": 2, "c": 3}]}) == '{"a":[1,{"c":3,"d":2}],"b":1}'


def test_cache_key_covers_sampling_and_seed():
    base = ChatRequest(model="m", messages=(Message(role="user", content="hi"),))
    assert base.cache_key() == ChatRequest.from_json(base.to_json()).cache_key()
    assert base.cache_key() != base.model_copy(update={"seed": 1}).cache_key()
    hot = base.model_copy(update={"sampling": SamplingParams(temperature=0.7)})
    assert base.cache_key() != hot.cache_key()


def test_message_openai_dict_serialises_arguments_as_json_string():
    msg = Message(role="assistant", tool_calls=(ToolCall(id="c1", name="f", arguments={"x": 1}),))
    d = msg.openai_dict()
    assert d["tool_calls"][0]["function"]["arguments"] == '{"x": 1}'
    assert "tool_call_id" not in d


def test_rejection_requires_typed_reason():
    with pytest.raises(ValidationError, match="reason"):
        Rejection(record_id="r", stage="outcome", reason="looked bad", detail="", payload_json="{}")


def test_derive_seed_is_deterministic_and_distinct():
    assert derive_seed("t1", "rollout", 0) == derive_seed("t1", "rollout", 0)
    assert derive_seed("t1", "rollout", 0) != derive_seed("t1", "rollout", 1)
