"""The opt-in GPU smoke test (`-m gpu`); it skips itself without a GPU, vLLM or models."""

import pytest

from trajforge.finetune.opd import gpu_smoke


@pytest.mark.gpu
def test_opd_gpu_smoke():
    reason = gpu_smoke.skip_reason()
    if reason is not None:
        pytest.skip(reason)
    assert gpu_smoke.main() == 0


def test_smoke_script_skips_cleanly_without_a_gpu(capsys):
    if gpu_smoke.skip_reason() is None:
        pytest.skip("a GPU with models is present: the gpu test runs instead")
    assert gpu_smoke.main() == 0
    assert "skipped" in capsys.readouterr().out


def test_vllm_sampler_names_the_extra_when_vllm_is_missing():
    pytest.importorskip("torch")
    try:
        import vllm  # noqa: F401
    except ImportError:
        from trajforge.finetune.opd.vllm_sampler import VLLMSampler

        with pytest.raises(ImportError, match="trajforge\\[gpu\\]"):
            VLLMSampler("/nonexistent", [0], 8, 1.0)
    else:
        pytest.skip("vLLM is installed")
