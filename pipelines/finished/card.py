"""The dataset card (README.md) from huggingface_hub's card metadata, from what the build wrote.

The YAML lists one Hub config per output actually on disk (the `messages` view is the default
when it was written: `load_dataset(repo)` then gives trainer-ready rows), each with its splits'
files, so the card always matches the files, for an empty build too (which has one empty train
shard per output). The body is rebuilt from the manifest, never from the config alone: it names
only judges that ran and filters that counted something.
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow.parquet as pq
from huggingface_hub.repocard_data import DatasetCardData

from trajforge.pipelines import io, shards, views
from trajforge.pipelines.manifest import Manifest
from trajforge.pipelines.split_figures import token_summary

SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"))
COLUMN_DOCS = {
    "messages": "chat turns, each only with its own keys (role, content, tool_calls with "
    "`arguments` as objects and 9-character ids, a tool result's tool_call_id and name); "
    "simulator control tokens removed",
    "tools": "OpenAI-style tool list; `parameters` is the JSON schema object",
    "num_tokens": f"estimated tokens of messages+tools (characters / {views.CHARS_PER_TOKEN:g})",
    "prompt": "context the model saw before this assistant turn",
    "completion": "the assistant turn (text and/or tool calls)",
    "arguments": "tool-call arguments object",
    "state_diff": "changed world-state leaves (path, before, after)",
    "conversations": "ShareGPT turns: human, gpt, function_call, observation",
    "trajectory_json": "the full trajforge Trajectory record (lossless)",
    "messages_json": "OpenAI wire format (arguments as JSON strings)",
    "split_keys": "leakage-cluster keys (task, template, entities)",
    "attempts": "rollouts of this row's task (`rollout.attempts`; 0: not measured)",
    "successes": "of those, how many passed every gate",
    "pass_rate": "the task's difficulty: successes / attempts (null: not measured)",
    "pass_hat_k": "tau2-bench pass^k for k = 1..attempts, estimated from successes",
}


def outputs_on_disk(run_dir: str) -> dict[str, dict[str, list[str]]]:
    """output -> split -> shard paths relative to the run directory."""
    found = {}
    for output in (shards.CANONICAL, *views.VIEW_NAMES):
        files = shards.output_files(run_dir, output)
        if files:
            prefix = run_dir.rstrip("/") + "/"
            found[output] = {s: [p.removeprefix(prefix) for p in f] for s, f in files.items()}
    return found


def hub_configs(on_disk: dict[str, dict[str, list[str]]]) -> list[dict[str, Any]]:
    default = "messages" if "messages" in on_disk else shards.CANONICAL
    configs = []
    for output, by_split in on_disk.items():
        cfg: dict[str, Any] = {
            "config_name": "default" if output == default else output,
            "data_files": [
                {"split": s, "path": f"{shards.output_dir(output)}/{s}-*.parquet"} for s in by_split
            ],
        }
        if output == default:
            cfg["default"] = True
        configs.append(cfg)
    return configs


def size_category(rows: int) -> str:
    for bound, name in SIZE_CATEGORIES:
        if rows < bound:
            return name
    return "100K<n<1M" if rows < 1_000_000 else "1M<n<10M"


def token_stats(run_dir: str, on_disk: dict[str, dict[str, list[str]]]) -> dict[str, Any] | None:
    """The messages view's token summary, read from its shards (a build passes the one its
    pipeline gathered instead: `dataset_card(..., tokens=...)`)."""
    files = [f for fs in on_disk.get("messages", {}).values() for f in fs]
    # io.iter_parquet, not pq.read_table: read_table imports pyarrow.dataset, and with it pandas
    tokens = [
        r["num_tokens"] for f in files for r in io.iter_parquet(io.join(run_dir, f), ["num_tokens"])
    ]
    return token_summary(tokens)


def _table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join("" if v is None else str(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _schema_section(run_dir: str, on_disk: dict[str, dict[str, list[str]]]) -> str:
    parts = []
    for output, by_split in on_disk.items():
        first = next(iter(by_split.values()))[0]
        schema = pq.read_schema(io.join(run_dir, first))
        rows = [[f"`{f.name}`", f"`{f.type}`"[:60], COLUMN_DOCS.get(f.name, "")] for f in schema]
        parts.append(
            f"### `{output}` ({shards.output_dir(output)}/)\n\n"
            + _table(["column", "type", "meaning"], rows)
        )
    return "\n\n".join(parts)


#: The repo id the card's usage snippet loads until `trajforge publish --repo-id` names the real
#: one (the build's display name is not a repo id).
PLACEHOLDER_REPO_ID = "ORG/DATASET"


#: Said next to the placeholder in the built card; gone from the card `publish` uploads.
_PLACEHOLDER_NOTE = "  # or the run directory; `trajforge publish --repo-id` fills this in"


def _usage(name: str) -> str:
    where = _PLACEHOLDER_NOTE if name == PLACEHOLDER_REPO_ID else ""
    return f"""```python
from datasets import load_dataset
from trl import SFTConfig, SFTTrainer

ds = load_dataset("{name}"){where}
# the default config is the `messages` view: messages + tools, arguments as objects
text = tokenizer.apply_chat_template(ds["train"][0]["messages"], tools=ds["train"][0]["tools"], tokenize=False)
trainer = SFTTrainer(model=model, train_dataset=ds["train"], args=SFTConfig(max_length=8192))
steps = load_dataset("{name}", "steps")  # also: "step_prefix", "sharegpt", "data" (canonical)
```"""


EMPTY_NOTE = (
    "**This build kept no rows.** Every output has one empty `train` shard carrying its "
    "schema: `load_dataset(path, streaming=True)` and pyarrow read zero rows; non-streaming "
    "`load_dataset` refuses a split without rows (datasets raises 'corresponds to no data'). "
    "See Filters for why every input was rejected."
)


def with_repo_id(card: str, repo_id: str) -> str:
    """The card with its usage snippet loading `repo_id` (what `publish` uploads)."""
    card = card.replace(_PLACEHOLDER_NOTE, "")
    return card.replace(f'load_dataset("{PLACEHOLDER_REPO_ID}"', f'load_dataset("{repo_id}"')


def _body(manifest: Manifest, run_dir: str, on_disk: dict, tokens: dict | None) -> str:
    sections = [
        *_intro(manifest),
        _splits_section(manifest),
        "## Usage\n\n" + _usage(PLACEHOLDER_REPO_ID),
        "## Schema\n\n" + _schema_section(run_dir, on_disk),
        _recipe(manifest),
        _filters_section(manifest),
        _diversity(manifest),
        _difficulty(manifest),
        _gap(manifest),
        _limitations(tokens),
    ]
    return "\n\n".join(s for s in sections if s)


def _intro(manifest: Manifest) -> list[str]:
    """The title, what every kept row passed, and the empty-dataset note."""
    cfg = manifest.config
    judges = (
        "an LLM judge (" + manifest.models["judge"].model + ")"
        if cfg["quality"]["judge"]["enabled"]
        else "no LLM judge (disabled)"
    )
    return [
        f"# {cfg['name']}",
        f"Tool-use agent trajectories built by trajforge: {_domains_text(cfg)}, mode "
        f"`{cfg['mode']}`. Every kept row passed the programmatic outcome verifier (its tool "
        f"calls replay to the gold final-state hash and it communicated the expected outputs), "
        f"the shortcut filters and dedup; it was scored by {judges}.",
        EMPTY_NOTE if manifest.outputs.kept == 0 else "",
    ]


def _splits_section(manifest: Manifest) -> str:
    cfg = manifest.config
    wanted = cfg["output"]["splits"]
    written = manifest.outputs.splits
    names = [
        *written,
        *(s for s in ("train", "validation", "golden") if wanted[s] and s not in written),
    ]
    split_rows = [  # a configured split that drew no rows is listed with 0
        [
            s,
            written[s].rows if s in written else 0,
            len(written[s].shards) if s in written else 0,
            f"{wanted[s]:g}",
        ]
        for s in names
    ]
    balance = manifest.splits.get("balance") or {}
    return (
        "## Splits\n\n"
        + _table(["split", "rows", "shards", "configured fraction"], split_rows)
        + (f"\n\n**Note:** {balance['note']}" if balance.get("note") else "")
        + "\n\nSplits are assigned by leakage cluster (task, template, configured shared "
        "entities, near-duplicates); `golden` is frozen by the split seed "
        f"({cfg['output']['splits']['seed']}). Leakage report (must be all zero): "
        f"`{json.dumps(manifest.splits.get('leakage', {}), sort_keys=True)}`."
    )


def _recipe(manifest: Manifest) -> str:
    models = {role: m.model_dump(mode="json") for role, m in manifest.models.items()}
    return "## Recipe\n\n" + _table(
        ["item", "value"],
        [
            ["config hash", f"`{manifest.config_hash}`"],
            ["models", f"`{json.dumps(models, sort_keys=True)}`"],
            ["seed", manifest.config["seed"]],
            ["tasks", manifest.inputs],
            ["versions", f"`{json.dumps(manifest.versions, sort_keys=True)}`"],
        ],
    )


def _filters_section(manifest: Manifest) -> str:
    out = manifest.outputs
    filters = [
        [stage, reason, n]
        for stage, reasons in sorted(out.rejected_by_stage.items())
        for reason, n in sorted(reasons.items())
    ]
    return (
        "## Filters\n\n" + f"Inputs {manifest.inputs}: kept {out.kept}, rejected "
        f"{out.rejected}, dead-lettered {out.dead_lettered}.\n\n"
        + (_table(["stage", "reason", "rejected"], filters) if filters else "Nothing was rejected.")
    )


def _diversity(manifest: Manifest) -> str:
    div = manifest.diversity
    if not div:
        return "## Diversity and coverage\n\nNo kept rows, nothing to measure."
    scalars = [[k, _cell(v)] for k, v in sorted(div.items()) if not isinstance(v, list | dict)]
    text = "## Diversity and coverage\n\n" + _table(["measure", "value"], scalars)
    coverage = div.get("coverage") or []
    if coverage:
        text += (
            "\n\nCoverage: of each dimension's values, how many the kept rows reach "
            "(rows per value).\n\n"
            + _table(
                ["dimension", "covered", "rows per value"], [_coverage_row(c) for c in coverage]
            )
        )
    return text


def _cell(value: Any) -> str:
    """A scalar for a table cell: floats to 4 places, None as a dash."""
    if value is None:
        return "-"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _coverage_row(entry: dict[str, Any]) -> list[Any]:
    """One coverage dimension as a table row: `dimension | 5/5 (100%) | high 1, low 3, ...`."""
    counts = entry.get("counts", {})
    per_value = ", ".join(f"{k} {v}" for k, v in counts.items())
    covered = f"{entry['covered']}/{entry['total']} ({entry['fraction']:.0%})"
    return [f"`{entry['dimension']}`", covered, per_value]


def _difficulty(manifest: Manifest) -> str:
    """Baseline difficulty (rollout.attempts > 1): what the build's agent scored per task."""
    d = manifest.difficulty
    if not d:
        return ""
    k = d["attempts_per_task"]
    rows = [
        ["tasks rolled out", d["tasks"]],
        ["tasks without a passing attempt", d["tasks_without_passing_attempt"]],
        ["mean pass rate", d["mean_pass_rate"]],
        *([f"pass^{j}", v] for j, v in sorted(d["pass_hat_k"].items(), key=lambda x: int(x[0]))),
        *([f"mean pass rate, {s} rows", v["mean_pass_rate"]] for s, v in d["by_split"].items()),
    ]
    return (
        f"## Difficulty\n\nEach task was rolled out {k} times by the build's agent; rows carry "
        "their task's `pass_rate` and `pass_hat_k` (weight or filter by them). Tasks without "
        "a passing attempt are in `rejected/` (`no_passing_attempt`).\n\n"
        + _table(["measure", "value"], rows)
    )


def _gap(manifest: Manifest) -> str:
    gap = manifest.splits.get("gap", [])
    if not gap:
        return ""
    rows = [[g["criterion"], g["train_mean"], g["golden_mean"], g["gap"]] for g in gap]
    return "## Train vs golden\n\n" + _table(
        ["criterion", "train mean", "golden mean", "gap"], rows
    )


def _limitations(tokens: dict | None) -> str:
    items = [
        "Users are simulated by an LLM from a persona and a scenario; agents follow a gold plan "
        "(blueprint) or a teacher model (rollout). Worlds, people and products are fictional.",
        "Programmatic checks verify the final state and communicated values, not style.",
    ]
    if tokens:
        for length, n in tokens["over"].items():
            if n:
                items.append(
                    f"**Warning:** {n} of {tokens['rows']} rows exceed {length} tokens "
                    f"(estimated; max {tokens['max']}): with a trainer's `max_length={length}` "
                    "they are truncated, possibly before any assistant token. Raise `max_length`."
                )
    return "## Known limitations\n\n" + "\n".join(f"- {i}" for i in items)


def card_text(data: DatasetCardData, body: str) -> str:
    """YAML front matter and body: the text `str(DatasetCard.from_template(data, template_str=
    "---\\n{{ card_data }}\\n---\\n\\n{{ body }}\\n", body=body))` gave (Jinja drops the final
    newline; tested against it), without `huggingface_hub.repocard`, whose import (Hub client,
    requests, Jinja) cost every build ~0.2 s of CPU (issue 14, fixed cost)."""
    return f"---\n{data.to_yaml()}\n---\n\n{body}"


#: `dataset_card`'s default: read the token counts from the messages view's shards.
READ_FROM_SHARDS = "read from shards"


def dataset_card(
    run_dir: str, manifest: Manifest, tokens: dict[str, Any] | None | str = READ_FROM_SHARDS
) -> str:
    """The card's text, from the typed manifest (`manifest.read_manifest` for a finished run);
    `tokens`: the messages view's token summary when the caller has it
    (`split_figures.token_summary`; None: no such rows)."""
    on_disk = outputs_on_disk(run_dir)
    cfg = manifest.config
    card_cfg = cfg["output"]["card"]
    data = DatasetCardData(
        license=card_cfg["license"],
        language=list(card_cfg["language"]),
        pretty_name=card_cfg["pretty_name"] or cfg["name"],
        size_categories=[size_category(manifest.outputs.kept)],
        task_categories=["text-generation"],
        tags=["trajforge", "tool-use", "agents", "synthetic"],
        configs=hub_configs(on_disk),
    )
    if tokens == READ_FROM_SHARDS:
        tokens = token_stats(run_dir, on_disk)
    body = _body(manifest, run_dir, on_disk, tokens)
    return card_text(data, body)


def _domains_text(cfg: dict) -> str:
    r"""`domain \`retail\``, or the mix of a multi-domain build with its weights."""
    if cfg.get("domain"):
        return f"domain `{cfg['domain']}`"
    mix = ", ".join(f"`{name}` ({weight:g})" for name, weight in sorted(cfg["domains"].items()))
    return f"domains {mix}"
