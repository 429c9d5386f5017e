"""The finished-run tools (`pipelines/finished/`) stand without Beam: importing any of them,
and every module they import, leaves `apache_beam` and the Beam layer out of `sys.modules`."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

FINISHED = Path(__file__).resolve().parents[2] / "pipelines" / "finished"
#: The Beam layer of `pipelines/`: the build and its transforms.
BEAM_LAYER = (
    "apache_beam",
    "trajforge.pipelines.build",
    "trajforge.pipelines.stages",
    "trajforge.pipelines.transforms",
    "trajforge.pipelines.sdk_worker",
)
BEAM_IMPORT = re.compile(r"^\s*(from|import)\s+apache_beam\b", re.MULTILINE)


def _modules() -> list[str]:
    return sorted(f"trajforge.pipelines.finished.{p.stem}" for p in FINISHED.glob("*.py"))


def test_importing_the_finished_run_tools_imports_no_beam():
    code = (
        "import importlib, sys\n"
        f"for name in {_modules()!r}: importlib.import_module(name)\n"
        f"layer = {BEAM_LAYER!r}\n"
        "print([m for m in sys.modules if m in layer or m.startswith(tuple(x + '.' for x in layer))])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_no_finished_run_module_imports_beam_even_inside_a_function():
    offenders = [p.name for p in FINISHED.glob("*.py") if BEAM_IMPORT.search(p.read_text())]
    assert not offenders, f"these import Beam: {offenders}"
    assert len(_modules()) >= 9  # card, publish, report, show, verify, calibrate, browse, ...


def test_a_local_run_is_read_without_beam(tmp_path):
    """Reading a run's files on a local path goes through the standard library."""
    code = (
        "import sys\n"
        "from trajforge.pipelines import files, io, ownership\n"
        f"run = {str(tmp_path)!r}\n"
        "ownership.write_text(run, 'data/a.txt', 'x')\n"
        "assert io.read_text(io.join(run, 'data', 'a.txt')) == 'x'\n"
        "assert files.match(io.join(run, '*', '*.txt')) == [io.join(run, 'data', 'a.txt')]\n"
        "assert files.match(io.join(run, '**')) == sorted(\n"
        "    [io.join(run, 'data', 'a.txt'), io.join(run, '.trajforge-run')])\n"
        "ownership.move(run, 'data', 'moved')\n"
        "assert io.exists(io.join(run, 'moved', 'a.txt'))\n"
        "print('apache_beam' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stdout + out.stderr
