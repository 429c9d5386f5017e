"""The container's view of the repository: exactly the files the Dockerfile copies, built into a
wheel offline and installed into a venv that holds nothing else of ours.

Shared by the COPY-set test and the remote-worker tests (whose workers run from that venv). Offline
by construction: the build runs without isolation on this environment's setuptools, and the venv
takes the package's dependencies from the main environment's site-packages through a `.pth` line
placed after its own site-packages, so the wheel's `trajforge` is the one imported.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "configs" / "dataflow" / "Dockerfile"


def copy_set(dockerfile: Path = DOCKERFILE) -> list[str]:
    """The repository paths the Dockerfile's `COPY` lines name (sources only, not `--from`)."""
    paths: list[str] = []
    for line in dockerfile.read_text().splitlines():
        words = line.split()
        if not words or words[0].upper() != "COPY":
            continue
        args = [w for w in words[1:] if not w.startswith("--")]
        assert not any(w.startswith("--from") for w in words), f"multi-stage COPY: {line}"
        paths += args[:-1]  # the last word is the destination
    return paths


def stage_copy_set(dest: Path) -> Path:
    """Copy exactly the Dockerfile's COPY set into `dest` (a clean folder), as `docker build` does."""
    dest.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for rel in copy_set():
        src = ROOT / rel
        if src.is_dir():
            shutil.copytree(src, dest / rel, ignore=ignore)
        else:
            shutil.copy2(src, dest / rel)
    return dest


def run(cmd: list[str], cwd: Path, env: dict | None = None, timeout: int = 600) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (
        f"{' '.join(map(str, cmd))} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


def build_dists(source: Path, outdir: Path) -> tuple[Path, Path]:
    """Wheel and sdist from `source`, offline: no isolated build env (`--no-isolation`) and no
    check for the `wheel` requirement (`-x`; setuptools >= 70.1 builds wheels itself)."""
    run(
        [sys.executable, "-m", "build", "--no-isolation", "-x", "--outdir", str(outdir), "."],
        source,
    )
    return next(outdir.glob("trajforge-*.whl")), next(outdir.glob("trajforge-*.tar.gz"))


def dependency_dirs() -> list[str]:
    """This interpreter's site-packages folders (its own and those its `.pth` files add): where
    the wheel's dependencies come from. `.pth` files in them are not run, so an editable install
    of the repository found there stays inert."""
    own = sysconfig.get_path("purelib")
    return [own, *(p for p in sys.path if p.endswith("site-packages") and p != own)]


def wheel_venv(wheel: Path, venv: Path) -> Path:
    """A venv with only `wheel` installed (`--no-deps`); dependencies resolve from this
    environment's site-packages, listed after the venv's own. Returns the venv's python."""
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], venv.parent)
    py = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps"]
    run([*pip, "--no-index", str(wheel)], venv.parent)
    site = Path(
        run(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], venv.parent
        ).strip()
    )
    (site / "zz_main_deps.pth").write_text("".join(f"{d}\n" for d in dependency_dirs()))
    return py
