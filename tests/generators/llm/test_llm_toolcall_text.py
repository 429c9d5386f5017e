"""Text tool calls: rendering the prompt and history, parsing and validating generated calls."""

from __future__ import annotations

from trajforge.generators.llm.toolcall_text import (
    parse_tool_calls,
    render_history,
    render_tools_prompt,
    validate_arguments,
)
from trajforge.schemas import Message, ToolCall, ToolSpec

ORDER_TOOL = ToolSpec(
    name="get_order",
    description="Look up an order by id.",
    parameters={
        "type": "object",
        "properties": {
            "order_id": {"type": "string"},
            "verbose": {"type": "boolean"},
            "count": {"type": "integer"},
        },
        "required": ["order_id"],
        "additionalProperties": False,
    },
    kind="read",
    mutates_state=False,
)
TOOLS = (ORDER_TOOL,)


def test_good_call_and_surrounding_text():
    text = 'Let me check.\n<tool_call>{"name": "get_order", "arguments": {"order_id": "A1"}}</tool_call>'
    content, calls = parse_tool_calls(text, TOOLS)
    assert content == "Let me check."
    (call,) = calls
    assert call.name == "get_order" and call.arguments == {"order_id": "A1"}
    assert call.parse_error is None and call.id.startswith("call_0_")
    assert parse_tool_calls(text, TOOLS)[1][0].id == call.id  # deterministic ids


def test_bad_json_keeps_call_with_parse_error():
    text = '<tool_call>{"name": "get_order", "arguments": {"order_id": }}</tool_call>'
    content, (call,) = parse_tool_calls(text, TOOLS)
    assert content is None
    assert call.name == "get_order"
    assert call.parse_error is not None and "not valid JSON" in call.parse_error
    assert call.raw_arguments is not None and "order_id" in call.raw_arguments


def test_unknown_tool_is_kept_without_validation():
    text = '<tool_call>{"name": "launch_rocket", "arguments": {"when": "now"}}</tool_call>'
    _, (call,) = parse_tool_calls(text, TOOLS)
    assert call.name == "launch_rocket" and call.arguments == {"when": "now"}
    assert call.parse_error is None


def test_wrong_argument_type_names_the_field():
    text = '<tool_call>{"name": "get_order", "arguments": {"order_id": 42}}</tool_call>'
    _, (call,) = parse_tool_calls(text, TOOLS)
    assert call.parse_error == "argument 'order_id' must be string, got integer"
    assert call.arguments == {"order_id": 42}


def test_missing_required_and_unknown_argument():
    assert validate_arguments({}, ORDER_TOOL.parameters) == "missing required argument 'order_id'"
    problem = validate_arguments({"order_id": "A", "colour": 1}, ORDER_TOOL.parameters)
    assert problem is not None and "unknown argument 'colour'" in problem
    assert validate_arguments({"order_id": "A", "count": True}, ORDER_TOOL.parameters) == (
        "argument 'count' must be integer, got boolean"
    )
    assert (
        validate_arguments({"order_id": "A", "count": 3, "verbose": False}, ORDER_TOOL.parameters)
        is None
    )


def test_tolerated_formats_fence_bare_json_and_unclosed_tag():
    fenced = 'Sure:\n```json\n{"name": "get_order", "arguments": {"order_id": "B2"}}\n```'
    content, (call,) = parse_tool_calls(fenced, TOOLS)
    assert content == "Sure:" and call.arguments == {"order_id": "B2"}
    bare = 'I will call {"name": "get_order", "arguments": "{\\"order_id\\": \\"C3\\"}"} now'
    content, (call,) = parse_tool_calls(bare, TOOLS)
    assert call.arguments == {"order_id": "C3"} and content == "I will call  now"
    unclosed = '<tool_call>{"name": "get_order", "arguments": {"order_id": "D4"}}'
    assert parse_tool_calls(unclosed, TOOLS)[1][0].arguments == {"order_id": "D4"}
    assert parse_tool_calls("Plain {not json} text", TOOLS) == ("Plain {not json} text", ())


def test_history_renders_tools_calls_and_results():
    call = ToolCall(id="c1", name="get_order", arguments={"order_id": "A1"})
    messages = (
        Message(role="system", content="Be brief."),
        Message(role="user", content="Where is A1?"),
        Message(role="assistant", content=None, tool_calls=(call,)),
        Message(role="tool", content='{"status": "shipped"}', tool_call_id="c1"),
    )
    rendered = render_history(messages, TOOLS)
    assert rendered[0]["content"].startswith("Be brief.\n\n")
    assert render_tools_prompt(TOOLS) in rendered[0]["content"]
    assert rendered[2] == {
        "role": "assistant",
        "content": '<tool_call>{"arguments": {"order_id": "A1"}, "name": "get_order"}</tool_call>',
    }
    assert rendered[3]["role"] == "user" and "<tool_response>" in rendered[3]["content"]
    # what we render, we parse back
    assert parse_tool_calls(rendered[2]["content"], TOOLS)[1][0].arguments == {"order_id": "A1"}
