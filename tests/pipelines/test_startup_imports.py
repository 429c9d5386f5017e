"""The build command's start-up does not import what the default build does not use: each
import here cost a build 0.1-0.7 s of CPU (issue 14, fixed cost of every build)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("module", ["openai", "matplotlib"])
def test_cli_import_leaves_out(module: str):
    code = f"import sys, trajforge.pipelines.cli; print({module!r} in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", f"importing the CLI imported {module}"
