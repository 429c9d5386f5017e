"""Every row of a build's `messages` view, loaded with `datasets.load_dataset(run_dir)` exactly as
a trainer loads it, renders with the real chat template of every family `finetune` pins, of
Llama 3.2 and of Mistral's tool-calling models, and every tool call parses back out of the
rendered text to the same name and arguments.

The Llama 3.2 and Mistral templates are pinned copies of the models' own (`chat_templates/`:
meta-llama/Llama-3.2-1B-Instruct, 3,827 bytes, and mistralai/Mistral-7B-Instruct-v0.3, 3,959
bytes, from their `tokenizer_config.json`); nothing is downloaded. Messages go to the template
untouched (no canonicalisation): this is what `SFTTrainer` or `apply_chat_template` does with
the view.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from trajforge.finetune.families import TEMPLATES_DIR
from trajforge.pipelines.cli import main

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
PINNED = Path(__file__).parent / "chat_templates"

Call = tuple[str, dict]


def _tagged_calls(text: str) -> list[Call]:
    """`<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (Qwen, Hermes). The system
    prompt's mentions of the tags (empty, or around `<function-name>`) are skipped."""
    out = []
    for body in re.findall(r"<tool_call>\s*(.*?)\s*</tool_call>", text, re.S):
        if not body or "<function-name>" in body:
            continue
        call = json.loads(body)
        out.append((call["name"], call["arguments"]))
    return out


def _llama_calls(text: str) -> list[Call]:
    """An assistant turn holding `{"name": ..., "parameters": {...}}` (Llama 3.1 / 3.2)."""
    pattern = r"<\|start_header_id\|>assistant<\|end_header_id\|>\n\n(\{\"name\": .*?)<\|eot_id\|>"
    return [
        (call["name"], call["parameters"])
        for call in map(json.loads, re.findall(pattern, text, re.S))
    ]


def _mistral_calls(text: str) -> list[Call]:
    """`[TOOL_CALLS] [{"name": ..., "arguments": {...}, "id": ...}, ...]</s>` (Mistral v3)."""
    return [
        (call["name"], call["arguments"])
        for block in re.findall(r"\[TOOL_CALLS\] (\[.*?\])</s>", text, re.S)
        for call in json.loads(block)
    ]


_CHATML = {"bos_token": "", "eos_token": "<|im_end|>"}
_LLAMA = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}
_HERMES = {"bos_token": "<|begin_of_text|>", "eos_token": "<|im_end|>"}
#: name -> (template file, template variables, how its tool calls read back)
TEMPLATES: dict[str, tuple[Path, dict[str, str], Callable[[str], list[Call]]]] = {
    "qwen2.5": (TEMPLATES_DIR / "qwen2_5.jinja", _CHATML, _tagged_calls),
    "qwen3": (TEMPLATES_DIR / "qwen3.jinja", _CHATML, _tagged_calls),
    "qwen3-training": (TEMPLATES_DIR / "qwen3_training.jinja", _CHATML, _tagged_calls),
    "llama3.1": (TEMPLATES_DIR / "llama3_1.jinja", _LLAMA, _llama_calls),
    "llama3.2": (PINNED / "llama3_2.jinja", _LLAMA, _llama_calls),
    "hermes": (TEMPLATES_DIR / "hermes.jinja", _HERMES, _tagged_calls),
    "hermes-training": (TEMPLATES_DIR / "hermes_training.jinja", _HERMES, _tagged_calls),
    "mistral": (
        PINNED / "mistral_v3.jinja",
        {"bos_token": "<s>", "eos_token": "</s>"},
        _mistral_calls,
    ),
}


def test_every_pinned_family_template_is_rendered_here():
    """A family added to `finetune` must join this test."""
    from trajforge.finetune.families import FAMILIES

    files = {f.template(True) for f in FAMILIES.values()} | {
        f.template(False) for f in FAMILIES.values()
    }
    covered = {path.read_text() for path, _, _ in TEMPLATES.values()}
    assert files <= covered


def _build(base: Path, config: str, **overrides) -> Path:
    raw = yaml.safe_load((CONFIGS / config).read_text())
    raw.update(overrides)
    (base / "build.yaml").write_text(yaml.safe_dump(raw))
    out = base / "run"
    args = ["build", "--config", str(base / "build.yaml"), "--output", str(out), "--no-progress"]
    assert main(args) == 0
    return out


BUILDS = {
    "retail": ("finetune_tiny.yaml", {"num_tasks": 12}),
    "toy": ("toy.yaml", {}),
    "search": (
        "search.yaml",
        {
            "num_tasks": 4,
            "roles": {"agent": {"kind": "scripted", "responder": "blueprint"}},
            "quality": {"dedup": {"semantic": {"enabled": False}}},  # no embedder to load
        },
    ),
}


@pytest.fixture(scope="module", params=list(BUILDS))
def view_rows(request, tmp_path_factory):
    """Every row of every split of the build's default config (the `messages` view)."""
    import datasets

    config, overrides = BUILDS[request.param]
    base = tmp_path_factory.mktemp(request.param)
    run = _build(base, config, **overrides)
    loaded = datasets.load_dataset(str(run), cache_dir=str(base / "hf-cache"))
    rows = [row for split in loaded for row in loaded[split]]
    assert rows
    return rows


def _expected_calls(messages: list[dict]) -> list[Call]:
    return [
        (c["function"]["name"], c["function"]["arguments"])
        for m in messages
        for c in m.get("tool_calls", ())
    ]


def test_each_message_carries_only_its_own_keys(view_rows):
    for row in view_rows:
        calls = {}
        for m in row["messages"]:
            assert None not in m.values(), m
            assert m["role"] == "assistant" or "tool_calls" not in m
            for c in m.get("tool_calls", ()):
                assert re.fullmatch(r"[A-Za-z0-9]{9}", c["id"])  # what Mistral requires
                calls[c["id"]] = c["function"]["name"]
            if m["role"] == "tool":
                assert m["name"] == calls[m["tool_call_id"]]  # vLLM's Hermes template needs it
            else:
                assert "tool_call_id" not in m and "name" not in m
        assert calls


@pytest.mark.parametrize("template", list(TEMPLATES))
def test_every_row_renders_and_every_call_parses_back(view_rows, template):
    from transformers.utils.chat_template_utils import render_jinja_template

    path, variables, parse = TEMPLATES[template]
    source = path.read_text()
    for row in view_rows:
        rendered, _ = render_jinja_template(
            conversations=[row["messages"]],
            tools=row["tools"],
            chat_template=source,
            **variables,
        )
        text = rendered[0]
        expected = _expected_calls(row["messages"])
        assert expected and parse(text) == expected, row["id"]
        assert '"arguments": "' not in text  # objects, never JSON-encoded strings
