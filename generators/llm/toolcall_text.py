"""Tool calls as text, for models without a native tool-calling API (the embedded model, vLLM).

The model is told to answer with `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
blocks; this module renders that instruction and the chat history (past calls and tool results
as text), and parses generated text back into `ToolCall`s. Small models get the format wrong
often, so parsing is tolerant (bare JSON objects, ```json fences, unclosed tags) and never
raises: a call that cannot be understood is still returned, with `parse_error` set, so the tool
boundary can answer it with an error observation the model can learn from.

Pure functions only; no model, no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from trajforge.schemas import Message, ToolCall, ToolSpec, content_hash

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"

_TAGGED_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
_JSON_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
_NAME_FIELD = re.compile(r'"name"\s*:\s*"([^"]+)"')

_JSON_TYPES: Mapping[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
    "null": (type(None),),
}


# ---------------------------------------------------------------------------------------------
# Rendering: tools and history as plain chat text
# ---------------------------------------------------------------------------------------------


def render_tools_prompt(tools: Sequence[ToolSpec]) -> str:
    """The system-prompt section that lists the tools and the exact answer format."""
    listing = "\n".join(
        json.dumps(
            {"name": t.name, "description": t.description, "parameters": t.parameters},
            sort_keys=True,
        )
        for t in tools
    )
    return (
        "You can call tools. The available tools, as JSON schemas:\n"
        f"<tools>\n{listing}\n</tools>\n"
        "To call a tool, answer with one block per call, exactly like this:\n"
        f'{TOOL_CALL_OPEN}{{"name": "<tool name>", "arguments": {{<arguments as a JSON object>}}}}'
        f"{TOOL_CALL_CLOSE}\n"
        "Tool results come back inside <tool_response></tool_response>. "
        "When you do not need a tool, answer in plain text."
    )


def render_tool_call(call: ToolCall) -> str:
    """One past call as the model should have written it (raw text kept for unparsable calls)."""
    if call.parse_error is not None and call.raw_arguments is not None:
        return f"{TOOL_CALL_OPEN}{call.raw_arguments}{TOOL_CALL_CLOSE}"
    body = json.dumps({"name": call.name, "arguments": call.arguments}, sort_keys=True)
    return f"{TOOL_CALL_OPEN}{body}{TOOL_CALL_CLOSE}"


def render_history(
    messages: Sequence[Message], tools: Sequence[ToolSpec] = ()
) -> list[dict[str, str]]:
    """Messages as plain `{"role", "content"}` dicts any chat template can render.

    Assistant tool calls become `<tool_call>` blocks after the assistant's text; tool results
    become user turns wrapped in `<tool_response>`. With tools, the tool prompt is appended to
    the first system message (or becomes the system message).
    """
    rendered: list[dict[str, str]] = []
    for message in messages:
        rendered.append(_render_message(message))
    if tools:
        prompt = render_tools_prompt(tools)
        if rendered and rendered[0]["role"] == "system":
            rendered[0] = {"role": "system", "content": f"{rendered[0]['content']}\n\n{prompt}"}
        else:
            rendered.insert(0, {"role": "system", "content": prompt})
    return rendered


def _render_message(message: Message) -> dict[str, str]:
    if message.role == "tool":
        return {
            "role": "user",
            "content": f"<tool_response>\n{message.content or ''}\n</tool_response>",
        }
    parts = [message.content] if message.content else []
    parts.extend(render_tool_call(call) for call in message.tool_calls)
    return {"role": message.role, "content": "\n".join(parts)}


# ---------------------------------------------------------------------------------------------
# Parsing: generated text -> content + tool calls
# ---------------------------------------------------------------------------------------------


def parse_arguments(raw: str) -> tuple[dict[str, Any], str | None]:
    """Arguments JSON text -> (dict, None), or ({}, error) when it is not a JSON object."""
    try:
        value = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        return {}, f"arguments are not valid JSON: {exc.msg} at position {exc.pos}"
    if not isinstance(value, dict):
        return {}, f"arguments must be a JSON object, got {type(value).__name__}"
    return value, None


def make_call_id(index: int, name: str, raw: str) -> str:
    """Deterministic call id: the same generated text always yields the same ids."""
    return f"call_{index}_{content_hash([name, raw], 12)}"


def parse_tool_calls(
    text: str, tools: Sequence[ToolSpec] = ()
) -> tuple[str | None, tuple[ToolCall, ...]]:
    """Split generated text into (content outside tool blocks, tool calls).

    Looks for `<tool_call>` blocks first, then ```json fences, then bare JSON objects carrying
    `name` and `arguments`. Arguments are validated against the tool's schema when the tool is
    known; unknown tool names are kept (the tool boundary answers them).
    """
    specs = {t.name: t for t in tools}
    blocks, rest = _find_blocks(text)
    calls = tuple(_call_from_block(index, block, specs) for index, block in enumerate(blocks))
    content = rest.strip() or None
    return content, calls


def _find_blocks(text: str) -> tuple[list[str], str]:
    """Candidate call texts and the text left outside them."""
    if TOOL_CALL_OPEN in text:
        blocks = [_strip_fence(m.group(1)) for m in _TAGGED_BLOCK.finditer(text)]
        return blocks, _TAGGED_BLOCK.sub("", text)
    fenced = [m for m in _JSON_FENCE.finditer(text) if _looks_like_call(m.group(1))]
    if fenced:
        rest = text
        for match in fenced:
            rest = rest.replace(match.group(0), "", 1)
        return [m.group(1).strip() for m in fenced], rest
    return _find_bare_objects(text)


def _strip_fence(block: str) -> str:
    block = block.strip()
    fence = _JSON_FENCE.search(block)
    return fence.group(1).strip() if fence else block


def _looks_like_call(candidate: str) -> bool:
    try:
        value = json.loads(candidate)
    except json.JSONDecodeError:
        return False
    return isinstance(value, dict) and isinstance(value.get("name"), str) and "arguments" in value


def _find_bare_objects(text: str) -> tuple[list[str], str]:
    decoder = json.JSONDecoder()
    blocks: list[str] = []
    kept: list[str] = []
    position = 0
    while (start := text.find("{", position)) != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            kept.append(text[position : start + 1])
            position = start + 1
            continue
        is_call = (
            isinstance(value, dict) and isinstance(value.get("name"), str) and "arguments" in value
        )
        kept.append(text[position:start] if is_call else text[position:end])
        if is_call:
            blocks.append(text[start:end])
        position = end
    kept.append(text[position:])
    return blocks, "".join(kept)


def _guess_name(block: str) -> str | None:
    match = _NAME_FIELD.search(block)
    return match.group(1) if match else None


def _call_from_block(index: int, block: str, specs: Mapping[str, ToolSpec]) -> ToolCall:
    name = _guess_name(block) or ""
    call_id = make_call_id(index, name, block)
    try:
        value = json.loads(block)
    except json.JSONDecodeError as exc:
        error = f"tool call is not valid JSON: {exc.msg} at position {exc.pos}"
        return ToolCall(id=call_id, name=name, parse_error=error, raw_arguments=block)
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        error = 'tool call must be a JSON object with a string "name"'
        return ToolCall(id=call_id, name=name, parse_error=error, raw_arguments=block)
    arguments, error = _arguments_of(value)
    spec = specs.get(value["name"])
    if error is None and spec is not None:
        error = validate_arguments(arguments, spec.parameters)
    if error is not None:
        return ToolCall(
            id=call_id, name=value["name"], arguments=arguments, parse_error=error,
            raw_arguments=block,
        )  # fmt: skip
    return ToolCall(id=call_id, name=value["name"], arguments=arguments)


def _arguments_of(value: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The call's arguments; accepts a JSON-encoded string and the `parameters` alias."""
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):
        return parse_arguments(arguments)
    if not isinstance(arguments, dict):
        return {}, f"arguments must be a JSON object, got {type(arguments).__name__}"
    return arguments, None


# ---------------------------------------------------------------------------------------------
# Validation: a small JSON-schema subset (what tool schemas use)
# ---------------------------------------------------------------------------------------------


def validate_arguments(arguments: Mapping[str, Any], schema: Mapping[str, Any]) -> str | None:
    """First problem with `arguments` under an object schema, or None when they fit.

    Checks required keys, unknown keys (unless `additionalProperties` allows them), basic types
    and enums; enough to turn a small model's slips into precise error observations.
    """
    properties: Mapping[str, Any] = schema.get("properties", {})
    for key in schema.get("required", ()):
        if key not in arguments:
            return f"missing required argument '{key}'"
    allows_extra = schema.get("additionalProperties", not properties) is not False
    for key, value in arguments.items():
        if key not in properties:
            if allows_extra:
                continue
            return f"unknown argument '{key}' (expected one of: {', '.join(sorted(properties))})"
        problem = _value_problem(value, properties[key])
        if problem is not None:
            return f"argument '{key}' {problem}"
    return None


def _value_problem(value: Any, schema: Mapping[str, Any]) -> str | None:
    expected = schema.get("type")
    if expected is not None:
        names = [expected] if isinstance(expected, str) else list(expected)
        if not any(_is_type(value, name) for name in names):
            return f"must be {' or '.join(names)}, got {_json_type_name(value)}"
    if "enum" in schema and value not in schema["enum"]:
        return f"must be one of {schema['enum']!r}, got {value!r}"
    return None


def _is_type(value: Any, name: str) -> bool:
    python_types = _JSON_TYPES.get(name)
    if python_types is None:
        return True  # a type this subset does not know: do not reject
    if isinstance(value, bool) and name in ("integer", "number"):
        return False
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, python_types)


def _json_type_name(value: Any) -> str:
    for name, python_types in _JSON_TYPES.items():
        if isinstance(value, python_types) and not (isinstance(value, bool) and name != "boolean"):
            return name
    return type(value).__name__
