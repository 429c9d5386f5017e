"""Dataset card (Hub YAML matches the files, empty build too) and `publish` operations."""

import shutil

import datasets
import pytest
from huggingface_hub import DatasetCard, DatasetCardData

from trajforge.pipelines.cli import main
from trajforge.pipelines.finished.card import dataset_card, size_category
from trajforge.pipelines.finished.publish import (
    PublishError,
    commit_operations,
    files_to_upload,
    publish,
)
from trajforge.pipelines.manifest import Manifest

REQUIRED = ("license", "language", "task_categories", "size_categories", "pretty_name", "configs")


def card_data(run) -> DatasetCardData:
    card = DatasetCard.load(run / "README.md")
    return card.data


def check_card(run, expect_rows):
    data = card_data(run).to_dict()
    assert all(data.get(k) for k in REQUIRED), data
    assert data["size_categories"] == [size_category(expect_rows)]
    for cfg in data["configs"]:
        # datasets refuses a split of zero rows unless streaming: an empty build streams.
        ds = datasets.load_dataset(str(run), cfg["config_name"], streaming=expect_rows == 0)
        listed = {f["split"] for f in cfg["data_files"]}
        assert set(ds) == listed
        for f in cfg["data_files"]:
            assert list(run.glob(f["path"])), f"{f['path']} matches no file"
    return data


def test_card_yaml_validates_and_matches_the_files(built_run):
    data = check_card(built_run, 12)
    names = {c["config_name"] for c in data["configs"]}
    assert names == {"default", "data", "step_prefix", "steps", "sharegpt"}
    default = next(c for c in data["configs"] if c["config_name"] == "default")
    assert default["default"] and default["data_files"][0]["path"].startswith("views/messages/")
    text = (built_run / "README.md").read_text()
    for section in ("## Usage", "## Schema", "## Recipe", "## Filters", "## Known limitations"):
        assert section in text
    assert "exceed 1024 tokens" in text  # the rows are long: the card warns
    assert "scripted:blueprint" in text  # the judge that ran is named


def test_empty_build_card_loads(empty_run):
    data = check_card(empty_run, 0)
    ds = datasets.load_dataset(str(empty_run), streaming=True)
    assert list(ds["train"]) == [] and "messages" in ds["train"].features
    text = (empty_run / "README.md").read_text()
    assert "no LLM judge" in text and "This build kept no rows" in text
    assert {c["config_name"] for c in data["configs"]} >= {"default", "data"}


def test_publish_dry_run_lists_exactly_what_load_dataset_needs(built_run, tmp_path, capsys):
    files = files_to_upload(str(built_run))
    assert files[:2] == ["README.md", "manifest.json"]
    referenced = {
        str(p.relative_to(built_run))
        for cfg in card_data(built_run).to_dict()["configs"]
        for f in cfg["data_files"]
        for p in built_run.glob(f["path"])
    }
    assert set(files[2:]) == referenced
    ops = commit_operations(str(built_run))
    assert [op.path_in_repo for op in ops] == files
    assert all(op.path_or_fileobj == str(built_run / op.path_in_repo) for op in ops)

    # A copy holding only the listed files loads every config.
    copy = tmp_path / "hub"
    for f in files:
        (copy / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(built_run / f, copy / f)
    for cfg in card_data(copy).to_dict()["configs"]:
        assert datasets.load_dataset(str(copy), cfg["config_name"])

    assert main(["publish", str(built_run), "--repo-id", "org/name", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"Would upload {len(files)} files to datasets/org/name" in out
    assert all(f in out for f in files)


def test_publish_needs_a_token_from_the_environment(built_run, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with pytest.raises(PublishError, match="HF_TOKEN"):
        publish(str(built_run), "org/name", private=True)
    assert main(["publish", str(built_run.parent), "--repo-id", "org/name"]) == 2


@pytest.mark.parametrize(
    "body",
    [
        "",
        "plain",
        "# Title\n\n| a | b |\n|---|---|\n| {{ x }} | `y` |\n\n",
        "ends\n\n\n",
        "é ✓ 日本",
    ],
)
def test_card_text_is_what_the_template_of_huggingface_hub_gives(built_run, empty_run, body):
    """`card_text` (no Jinja, no `huggingface_hub.repocard` import) == the template render."""
    import json

    from trajforge.pipelines.finished.card import card_text

    template = "---\n{{ card_data }}\n---\n\n{{ body }}\n"
    for run in (built_run, empty_run):
        cfg = json.loads((run / "manifest.json").read_text())["config"]
        data = DatasetCardData(
            license="apache-2.0",
            language=["en"],
            pretty_name=cfg["name"],
            size_categories=["n<1K"],
            tags=["trajforge"],
            configs=card_data(run).to_dict()["configs"],
        )
        expected = str(DatasetCard.from_template(data, template_str=template, body=body))
        assert card_text(data, body) == expected
        written = (run / "README.md").read_text()
        assert written == str(DatasetCard(written))  # the build's card is the parsed card's text


def test_card_usage_loads_a_placeholder_repo_id_and_publish_names_the_target(built_run):
    text = (built_run / "README.md").read_text()
    assert 'load_dataset("ORG/DATASET")' in text
    assert 'load_dataset("products")' not in text  # the display name is not a repo id
    readme = commit_operations(str(built_run), "acme/retail-agents")[0]
    assert readme.path_in_repo == "README.md"
    uploaded = readme.path_or_fileobj.decode("utf-8")
    assert 'load_dataset("acme/retail-agents")' in uploaded and "ORG/DATASET" not in uploaded


def test_card_coverage_is_a_table_not_json(built_run):
    text = (built_run / "README.md").read_text()
    section = text.split("## Diversity and coverage", 1)[1].split("\n## ", 1)[0]
    assert '{"counts"' not in section and '"dimension"' not in section
    assert "| `trait.patience` | " in section and "| `task_type` | " in section
    row = next(line for line in section.splitlines() if line.startswith("| `task_type`"))
    assert row.count("|") == 4 and row.rstrip().endswith("|")  # whole, not cut mid-word


def test_a_far_split_is_noted_in_the_card_and_the_summary(built_run):
    import json

    from trajforge.pipelines.cli import summary_table

    manifest = json.loads((built_run / "manifest.json").read_text())
    assert "balance" in manifest["splits"]
    note = "realised split 5 train / 7 golden is far from the configured 0.75/0.25"
    manifest["splits"]["balance"].update(far=True, note=note)
    typed = Manifest.model_validate(manifest)
    assert f"**Note:** {note}" in dataset_card(str(built_run), typed)
    assert f"note: {note}" in summary_table(typed)


def test_a_capped_golden_is_noted_even_near_the_ratio(built_run):
    """The cap's note (which clusters went to train) is shown though the split is not far."""
    import json

    from trajforge.pipelines.cli import summary_table

    manifest = json.loads((built_run / "manifest.json").read_text())
    note = "Golden capped at 0.25 of the rows plus one cluster: 1 cluster drawn for golden"
    manifest["splits"]["balance"].update(far=False, note=note, capped_clusters=[4])
    typed = Manifest.model_validate(manifest)
    assert f"**Note:** {note}" in dataset_card(str(built_run), typed)
    assert f"note: {note}" in summary_table(typed)
