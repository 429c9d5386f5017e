"""Training precision: why `auto` is bf16-mixed on a GPU, and that the mixed path is the one run.

bf16 autocast works on CPU too, so these run the same code the GPU runs, on a tiny model.
"""

from __future__ import annotations

import json

import pytest
import torch

from tests.finetune.conftest import TOOLS, conversation, rendered_corpus, write_run
from trajforge.finetune.batching import packed_batch
from trajforge.finetune.config import SFTConfig
from trajforge.finetune.families import get_family
from trajforge.finetune.loss import accumulate_step, token_loss_sum
from trajforge.finetune.modeling import (
    declared_dtype,
    enable_checkpointing,
    resolve_precision,
    with_lora,
)
from trajforge.finetune.render import render_and_mask
from trajforge.finetune.sft import run_sft
from trajforge.finetune.tiny import save_tiny, tiny_model


@pytest.fixture(scope="module")
def batch(tokenizers):
    tokenizer, family = tokenizers["qwen2.5"], get_family("qwen2.5")
    texts = ["Where is #W1?", "Hi, where are my orders #W1 and #W2 please?"]
    samples = [
        render_and_mask(str(i), conversation(t), TOOLS, family, tokenizer)
        for i, t in enumerate(texts)
    ]
    return packed_batch(samples)


def test_auto_is_fp32_without_a_gpu_and_names_resolve():
    auto = resolve_precision("auto", "cpu")
    assert (auto.name, auto.load_dtype, auto.autocast_dtype) == ("fp32", torch.float32, None)
    mixed = resolve_precision("bf16-mixed", "cpu", "full")
    assert (mixed.load_dtype, mixed.autocast_dtype) == (torch.float32, torch.bfloat16)
    lora_bf16 = resolve_precision("bf16-mixed", "cpu", "lora", declared=torch.bfloat16)
    assert lora_bf16.load_dtype == torch.bfloat16  # a frozen bf16 base stays bf16
    for declared in (torch.float32, torch.float16, None):  # never rounded to bf16
        lora = resolve_precision("bf16-mixed", "cpu", "lora", declared=declared)
        assert lora.load_dtype == torch.float32
    pure = resolve_precision("bf16", "cpu")
    assert (pure.load_dtype, pure.autocast_dtype) == (torch.bfloat16, None)


def test_precision_names_the_choices_when_wrong():
    with pytest.raises(ValueError, match="precision"):
        SFTConfig(data="d", model="m", output="o", precision="fp16")


def _changed_fraction(precision_name: str, tokenizers, batch) -> float:
    """One AdamW step at lr 1e-5: the fraction of weight elements that moved."""
    precision = resolve_precision(precision_name, "cpu", "full")
    model = tiny_model(len(tokenizers["qwen2.5"]), seed=1).to(precision.load_dtype)
    before = [p.detach().clone() for p in model.parameters()]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    accumulate_step(model, [batch], "cpu", precision)
    optimizer.step()
    moved = sum(
        int((p.detach() != b).sum()) for p, b in zip(model.parameters(), before, strict=True)
    )
    return moved / sum(b.numel() for b in before)


def test_mixed_precision_keeps_the_updates_pure_bf16_rounds_away(tokenizers, batch):
    """The reason `auto` is bf16-mixed: at a fine-tuning learning rate a pure-bf16 weight
    mostly cannot move (the update is below its resolution); an fp32 master weight does."""
    mixed = _changed_fraction("bf16-mixed", tokenizers, batch)
    pure = _changed_fraction("bf16", tokenizers, batch)
    print(f"weights moved by one AdamW step at 1e-5: bf16-mixed {mixed:.0%}, pure bf16 {pure:.0%}")
    assert mixed > 0.95
    assert pure < 0.5 * mixed


def test_mixed_forward_runs_in_bf16_and_stays_close_to_fp32(tokenizers, batch):
    model = tiny_model(len(tokenizers["qwen2.5"]), seed=1)
    seen = []
    hook = model.model.layers[0].mlp.down_proj.register_forward_hook(
        lambda _m, _i, out: seen.append(out.dtype)
    )
    with torch.no_grad():
        exact = float(token_loss_sum(model, batch, resolve_precision("fp32", "cpu")))
        mixed = float(token_loss_sum(model, batch, resolve_precision("bf16-mixed", "cpu")))
    hook.remove()
    assert seen == [torch.float32, torch.bfloat16]
    assert mixed == pytest.approx(exact, rel=2e-2)


def test_lora_adapters_stay_fp32_over_a_bf16_base(tokenizers):
    model = tiny_model(len(tokenizers["qwen2.5"]), seed=1).to(torch.bfloat16)
    lora = with_lora(model, SFTConfig(data="d", model="m", output="o"), checkpointing=False)
    dtypes = {p.dtype for p in lora.parameters() if p.requires_grad}
    frozen = {p.dtype for p in lora.parameters() if not p.requires_grad}
    assert dtypes == {torch.float32} and frozen == {torch.bfloat16}


def test_mixed_full_finetune_saves_the_base_checkpoints_dtype(tmp_path):
    """fp32 master weights are a training detail: the tuned model is saved in the dtype the
    base checkpoint declares (bf16 here), so it serves like the base."""
    run = write_run(tmp_path / "run", {"train": 2})
    base = save_tiny(tmp_path / "base", rendered_corpus("qwen2.5"), get_family("qwen2.5"))
    from transformers import AutoModelForCausalLM

    AutoModelForCausalLM.from_pretrained(base).to(torch.bfloat16).save_pretrained(base)
    assert declared_dtype(base) == torch.bfloat16
    cfg = SFTConfig(data=str(run), model=str(base), output=str(tmp_path / "out"), method="full",
                    precision="bf16-mixed", max_steps=2, max_seq_len=1024, row_tokens=1024,
                    learning_rate=1e-5, progress=False)  # fmt: skip
    result = run_sft(cfg)
    assert result.last_loss == result.last_loss
    saved = json.loads((result.model_dir / "config.json").read_text())
    assert (saved.get("dtype") or saved.get("torch_dtype")) == "bfloat16"
    assert _saved_dtypes(result.model_dir) == {"BF16"}
    tuned = AutoModelForCausalLM.from_pretrained(result.model_dir, dtype=torch.float32)
    original = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    # every matrix moved; the norms' 1.0 sits where bf16's step is 2**-7, so two steps at 1e-5
    # round back to it when saved: the saved model is what bf16 can hold, as for the base
    pairs = zip(tuned.parameters(), original.parameters(), strict=True)
    assert all(not torch.equal(a, b) for a, b in pairs if a.ndim == 2)


def test_declared_dtype_reads_either_key(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"torch_dtype": "float16"}))
    assert declared_dtype(tmp_path) == torch.float16
    (tmp_path / "config.json").write_text(json.dumps({"dtype": "bfloat16"}))
    assert declared_dtype(tmp_path) == torch.bfloat16
    (tmp_path / "config.json").write_text(json.dumps({}))
    assert declared_dtype(tmp_path) is None
    (tmp_path / "config.json").write_text("not json")
    assert declared_dtype(tmp_path) is None
    assert declared_dtype(tmp_path / "missing") is None  # from_pretrained then says why


def test_evaluated_model_runs_in_fp32_on_cpu_whatever_its_checkpoint_holds(tmp_path):
    """`trajforge eval DIR` on CPU: transformers 5 would load a bf16 checkpoint as bf16."""
    from transformers import AutoModelForCausalLM

    from trajforge.finetune.hf_client import TransformersChat

    base = save_tiny(tmp_path / "base", rendered_corpus("qwen2.5"), get_family("qwen2.5"))
    AutoModelForCausalLM.from_pretrained(base).to(torch.bfloat16).save_pretrained(base)
    model, _ = TransformersChat(base, get_family("qwen2.5"), device="cpu")._load()
    assert {p.dtype for p in model.parameters()} == {torch.float32}


def test_lora_mixed_keeps_an_fp32_base_exact_in_the_merged_model(tmp_path):
    """Under LoRA the saved model is the base plus the merged adapters: weights LoRA does not
    touch (embeddings, norms, the output layer) come back bit for bit, not rounded to bf16."""
    from transformers import AutoModelForCausalLM

    run = write_run(tmp_path / "run", {"train": 2})
    base = save_tiny(tmp_path / "base", rendered_corpus("qwen2.5"), get_family("qwen2.5"))
    cfg = SFTConfig(data=str(run), model=str(base), output=str(tmp_path / "out"), method="lora",
                    precision="bf16-mixed", max_steps=2, max_seq_len=1024, row_tokens=1024,
                    progress=False)  # fmt: skip
    result = run_sft(cfg)
    tuned = dict(AutoModelForCausalLM.from_pretrained(result.model_dir).named_parameters())
    original = dict(AutoModelForCausalLM.from_pretrained(base).named_parameters())
    untouched = [n for n in original if "proj" not in n]
    assert untouched and all(torch.equal(tuned[n], original[n]) for n in untouched)
    assert any(not torch.equal(tuned[n], original[n]) for n in original if "proj" in n)


def _saved_dtypes(model_dir) -> set[str]:
    """The dtypes of the tensors in a saved model's safetensors files (from their headers)."""
    import struct

    dtypes = set()
    for path in model_dir.glob("*.safetensors"):
        with path.open("rb") as f:
            (size,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(size))
        dtypes |= {v["dtype"] for k, v in header.items() if k != "__metadata__"}
    return dtypes


def test_saving_in_another_dtype_leaves_the_training_weights_alone(tmp_path, tokenizers):
    """OPD saves the student for every evaluation and trains on: the save must not cast the
    fp32 master weights it holds."""
    from trajforge.finetune.modeling import save_final

    model = tiny_model(len(tokenizers["qwen2.5"]), seed=1)
    before = [p.detach().clone() for p in model.parameters()]
    target = save_final(model, tokenizers["qwen2.5"], tmp_path, "qwen2.5", torch.bfloat16)
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert all(torch.equal(p, b) for p, b in zip(model.parameters(), before, strict=True))
    assert _saved_dtypes(target) == {"BF16"}
    saved = json.loads((target / "config.json").read_text())
    assert (saved.get("dtype") or saved.get("torch_dtype")) == "bfloat16"


@pytest.mark.parametrize("command", ["sft", "opd"])
def test_every_finetune_flag_names_a_config_field(command):
    """A flag that names no field would be dropped or rejected at run time (`--precision`
    included, for both commands)."""
    from trajforge.finetune import cli
    from trajforge.finetune.config import SFTConfig
    from trajforge.finetune.opd.config import OPDConfig

    flags, config = (cli._SFT_FLAGS, SFTConfig) if command == "sft" else (cli._OPD_FLAGS, OPDConfig)
    names = {flag.removeprefix("--").replace("-", "_") for flag, _, _ in flags}
    assert "precision" in names
    assert names <= set(config.model_fields)


def test_checkpointing_is_enabled_without_a_deprecated_call(tokenizers):
    """The non-deprecated name where transformers has it: no FutureWarning, checkpointing on."""
    import warnings

    model = tiny_model(len(tokenizers["qwen2.5"]), seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        enable_checkpointing(model)
        on = getattr(model, "is_activation_checkpointing", None)  # transformers >= 5.25
        assert on if on is not None else model.is_gradient_checkpointing
