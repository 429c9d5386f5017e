"""The chat-template family is detected or refused, never guessed (families.resolve_family)."""

from __future__ import annotations

import pytest

from tests.finetune.conftest import rendered_corpus, write_run
from trajforge.finetune.families import (
    FAMILIES,
    FAMILY_FILE,
    FamilyError,
    get_family,
    resolve_family,
)
from trajforge.finetune.tiny import save_tiny, train_tokenizer
from trajforge.pipelines.cli import main

KNOWN = ", ".join(sorted(FAMILIES))


def fresh_tokenizer(name: str):
    """A family's tiny tokenizer that the test may change (the session fixture is shared)."""
    return train_tokenizer(rendered_corpus(name), get_family(name), 300)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_each_family_is_detected_from_its_tokenizer_template(tokenizers, name):
    assert resolve_family(tokenizers[name]) is FAMILIES[name]


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_an_edited_template_is_still_told_by_its_markers(name):
    tokenizer = fresh_tokenizer(name)
    tokenizer.chat_template = "{#- a hub revision's comment -#}\n" + tokenizer.chat_template
    assert resolve_family(tokenizer) is FAMILIES[name]


def test_a_fitting_family_flag_overrides_detection(tokenizers):
    assert resolve_family(tokenizers["qwen2.5"], "qwen3").name == "qwen3"


def test_a_llama_tokenizer_given_the_qwen_family_is_refused(tokenizers):
    with pytest.raises(FamilyError, match=r"--family qwen2.5 does not fit") as err:
        resolve_family(tokenizers["llama3.1"], "qwen2.5")
    message = str(err.value)
    assert "'<|im_end|>'" in message and KNOWN in message and "\n" not in message


def test_hermes_needs_its_bos_token_whole(tokenizers):
    """Qwen's tokenizer has `<|im_end|>` but not Llama's `<|begin_of_text|>`."""
    with pytest.raises(FamilyError, match="begin_of_text"):
        resolve_family(tokenizers["qwen2.5"], "hermes")


def test_no_template_at_all_is_refused_with_the_list():
    tokenizer = fresh_tokenizer("qwen2.5")
    tokenizer.chat_template = None
    with pytest.raises(FamilyError, match="no chat template") as err:
        resolve_family(tokenizer)
    assert KNOWN in str(err.value)


def test_an_unknown_template_is_refused():
    tokenizer = fresh_tokenizer("qwen2.5")
    tokenizer.chat_template = "{% for m in messages %}[{{ m.role }}] {{ m.content }}{% endfor %}"
    with pytest.raises(FamilyError, match="matches no pinned family"):
        resolve_family(tokenizer)


def test_the_saved_family_file_decides_and_is_checked(tmp_path):
    tokenizer = fresh_tokenizer("qwen3")
    tokenizer.chat_template = None
    tokenizer.save_pretrained(tmp_path)
    (tmp_path / FAMILY_FILE).write_text('{"family": "qwen3"}')
    assert resolve_family(tokenizer, model_dir=tmp_path).name == "qwen3"
    (tmp_path / FAMILY_FILE).write_text('{"family": "llama3.1"}')
    with pytest.raises(FamilyError, match="does not fit"):
        resolve_family(tokenizer, model_dir=tmp_path)


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory):
    """A tiny Llama-3.1-style model with no trajforge family file: only its template says."""
    root = tmp_path_factory.mktemp("llama")
    path = save_tiny(root / "llama", rendered_corpus("llama3.1"), get_family("llama3.1"))
    (path / FAMILY_FILE).unlink()
    return root, path


def test_sft_with_a_misfit_family_exits_2_before_training(llama_dir, capsys):
    root, model = llama_dir
    run = write_run(root / "run", {"train": 2})
    out = root / "out"
    argv = ["finetune", "sft", "--data", str(run), "--model", str(model), "--output", str(out),
            "--family", "qwen2.5", "--no-progress"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --family qwen2.5 does not fit") and KNOWN in err
    assert not (out / "metrics.jsonl").exists()


def test_sft_detects_the_family_of_a_plain_model_directory(llama_dir):
    from trajforge.finetune.config import SFTConfig
    from trajforge.finetune.sft import resolve_family as sft_family

    root, model = llama_dir
    cfg = SFTConfig(data=str(root), model=str(model), output=str(root / "x"))
    assert sft_family(cfg) == "llama3.1"


def test_eval_of_a_model_directory_without_a_template_exits_2(tmp_path, capsys):
    path = save_tiny(tmp_path / "m", rendered_corpus("qwen2.5"), get_family("qwen2.5"))
    (path / FAMILY_FILE).unlink()
    tokenizer = fresh_tokenizer("qwen2.5")
    tokenizer.chat_template = None
    tokenizer.save_pretrained(path)
    (path / "chat_template.jinja").unlink(missing_ok=True)
    argv = ["eval", "--model", str(path), "--domain", "retail", "--num-tasks", "1"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "no chat template" in err and KNOWN in err


def test_an_unknown_saved_family_is_a_family_error(tmp_path, tokenizers):
    (tmp_path / FAMILY_FILE).write_text('{"family": "mistral-v9"}')
    with pytest.raises(FamilyError, match="unknown family 'mistral-v9'"):
        resolve_family(tokenizers["qwen2.5"], model_dir=tmp_path)
