"""The Dataflow container can install the package: built from exactly the files the Dockerfile
copies, in a clean folder, the wheel and sdist build and the wheel imports from a clean venv.

Guards the failure this replaced: without `setup.py` in the COPY set, setuptools sees five
top-level folders and stops with "Multiple top-level packages discovered in a flat-layout".
No Docker needed. Slow (a build and a venv, ~15 s): in the tier `.ci/run` runs.
"""

from __future__ import annotations

import json
import tarfile
import zipfile

import pytest

from tests.remote.wheel_env import build_dists, copy_set, run, stage_copy_set, wheel_venv

pytestmark = pytest.mark.slow

IMPORTS = (
    "import json, trajforge.pipelines.cli as c, trajforge.verifiers, trajforge.finetune;"
    "print(json.dumps({'cli': c.__file__}))"
)


def test_copy_set_names_the_build_files():
    paths = copy_set()
    for needed in ("pyproject.toml", "setup.py", "pipelines", "schemas", "finetune"):
        assert needed in paths, f"configs/dataflow/Dockerfile does not COPY {needed}"


def test_copy_set_builds_wheel_and_sdist_and_installs(tmp_path):
    source = stage_copy_set(tmp_path / "src")
    wheel, sdist = build_dists(source, tmp_path / "dist")

    with zipfile.ZipFile(wheel) as whl:
        names = whl.namelist()
    assert "trajforge/pipelines/cli.py" in names
    assert not any(n.startswith(("pipelines/", "schemas/")) for n in names)
    with tarfile.open(sdist) as tar:
        members = tar.getnames()
    assert any(m.endswith("/setup.py") for m in members), (
        "the sdist cannot rebuild without setup.py"
    )

    py = wheel_venv(wheel, tmp_path / "venv")
    clean = tmp_path / "elsewhere"
    clean.mkdir()
    found = json.loads(run([str(py), "-c", IMPORTS], clean).strip().splitlines()[-1])
    assert found["cli"].startswith(str(tmp_path / "venv")), found
