"""Shared fixtures: a tool-using conversation, tiny tokenizers per family, a tiny run directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trajforge.finetune.families import FAMILIES, get_family
from trajforge.finetune.render import mask_segments
from trajforge.finetune.tiny import train_tokenizer
from trajforge.schemas import Message, ToolCall, ToolSpec

GOLDEN = Path(__file__).parent / "golden"

TOOL = ToolSpec(
    name="get_order",
    description="Look up an order by id.",
    parameters={
        "type": "object",
        "properties": {"order_id": {"type": "string", "description": "The order id."}},
        "required": ["order_id"],
    },
    kind="read",
    mutates_state=False,
)
TOOLS = [TOOL.openai_schema()]


def conversation(user_text: str = "Where are my orders #W1 and #W2?") -> list[Message]:
    """System, user, an assistant turn with text and two calls, both results, then text turns."""
    calls = (
        ToolCall(id="c1", name="get_order", arguments={"order_id": "#W1"}),
        ToolCall(id="c2", name="get_order", arguments={"order_id": "#W2"}),
    )
    return [
        Message(role="system", content="You are a retail support agent."),
        Message(role="user", content=user_text),
        Message(role="assistant", content="Let me check both.", tool_calls=calls),
        Message(
            role="tool", content='{"status": "in_transit"}', tool_call_id="c1", name="get_order"
        ),
        Message(
            role="tool", content='{"status": "awaiting_stock"}', tool_call_id="c2", name="get_order"
        ),
        Message(role="assistant", content="Order #W1 has shipped; #W2 is pending."),
        Message(role="user", content="Thanks, that is all."),
        Message(role="assistant", content="You're welcome. Goodbye!"),
    ]


def trained_spans(ids, trained) -> list[list[int]]:
    """The runs of consecutive trained tokens, in order (what a mask says is trained)."""
    spans, current = [], []
    for token, flag in zip(ids, trained, strict=True):
        if flag:
            current.append(token)
        elif current:
            spans.append(current)
            current = []
    return [*spans, current] if current else spans


def rendered_corpus(family_name: str) -> list[str]:
    family = get_family(family_name)
    return ["".join(s.text for s in mask_segments(conversation(), TOOLS, family))]


@pytest.fixture(scope="session")
def tokenizers():
    """A BPE trained locally per family on the conversation's own render (cached per session)."""
    return {name: train_tokenizer(rendered_corpus(name), FAMILIES[name], 400) for name in FAMILIES}


def write_run(run_dir: Path, splits: dict[str, int]) -> Path:
    """A run directory in the pipeline's Parquet layout (id, messages_json, tools_json)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (run_dir / "data").mkdir(parents=True)
    for split, rows in splits.items():
        records = []
        for i in range(rows):
            messages = conversation(f"Where are my orders #W{i} and #W2? ({split} {i})")
            records.append(
                {
                    "id": f"{split}-{i}",
                    "messages_json": json.dumps([m.openai_dict() for m in messages]),
                    "tools_json": json.dumps(TOOLS),
                }
            )
        pq.write_table(
            pa.Table.from_pylist(records), run_dir / "data" / f"{split}-00000-of-00001.parquet"
        )
    return run_dir
