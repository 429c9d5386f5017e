"""No user byte is ever lost: `--overwrite` and `--resume` delete exactly what the run recorded.

Every scenario starts from a copy of one finished toy build, puts a user's files beside, inside
and under it (or links, nested runs, a second build), runs the command, then checks the one
invariant that matters: every file and link under the test's folder that the run did not
record is still there, byte for byte (`assert_no_user_byte_lost`). Refusals must be one line
and change nothing. Most scenarios exercise `prepare_run_dir` (where deletion happens) on the
copy; a few run whole builds through the CLI (the slow ones are marked).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trajforge.pipelines import ownership
from trajforge.pipelines.cli import main
from trajforge.pipelines.config import load_config
from trajforge.pipelines.run_dir import RunDirError, prepare_run_dir

TOY = Path(__file__).resolve().parents[2] / "configs" / "toy.yaml"
HASH = load_config(str(TOY)).config_hash()


def build(out, *flags: str) -> int:
    return main(["build", "--config", str(TOY), "--output", str(out), "--no-progress", *flags])


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("finished") / "run"
    assert build(out) == 0
    return out


@pytest.fixture
def run(finished, tmp_path) -> Path:
    """A private copy of the finished run (the ledger's paths are relative: still valid)."""
    out = tmp_path / "area" / "run"
    shutil.copytree(finished, out, symlinks=True)
    return out


def snapshot(root: Path, owned_by: list[Path] = ()) -> dict[str, bytes | str]:
    """Every file (its bytes) and link (its target) under `root`, without following links,
    except what the runs in `owned_by` recorded as theirs."""
    ours = {str(r / p) for r in owned_by for p in ownership.recorded(str(r))}
    ours |= {str(r / ownership.LEDGER) for r in owned_by} | {
        str(r / ownership.LOCK) for r in owned_by
    }
    found: dict[str, bytes | str] = {}
    for dirpath, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = os.path.join(dirpath, name)
            if path in ours:
                continue
            if os.path.islink(path):
                found[path] = "link->" + os.readlink(path)
            elif os.path.isfile(path):
                found[path] = Path(path).read_bytes()
            elif not os.listdir(path):
                found[path] = "empty dir"
    return found


def assert_no_user_byte_lost(before: dict[str, bytes | str]) -> None:
    for path, content in before.items():
        if content == "empty dir":
            assert os.path.isdir(path), f"user folder lost: {path}"
        elif isinstance(content, str):
            assert os.path.islink(path) and "link->" + os.readlink(path) == content, path
        else:
            assert os.path.isfile(path) and not os.path.islink(path), f"user file lost: {path}"
            assert Path(path).read_bytes() == content, f"user file changed: {path}"


def user_file(path: Path, text: str = "precious") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def overwrite(out: Path, clear_cache: bool = False) -> None:
    prepare_run_dir(str(out), HASH, resume=False, overwrite=True, clear_cache=clear_cache)
    ownership.release(str(out))


def resume(out: Path) -> None:
    prepare_run_dir(str(out), HASH, resume=True, overwrite=False)
    ownership.release(str(out))


def refused(fn, out: Path, *fragments: str) -> None:
    area = out.parent
    before = snapshot(area)  # everything, ours included: a refusal changes nothing
    with pytest.raises(RunDirError) as err:
        fn(out)
    message = str(err.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message
    assert snapshot(area) == before


# ---------------------------------------------------------------------------------------------
# User files beside, inside and under the run


@pytest.mark.parametrize("action", [overwrite, resume], ids=["overwrite", "resume"])
@pytest.mark.parametrize(
    "rel",
    [
        "../beside.txt",  # a sibling of the run folder
        "notes.txt",  # inside, at the top
        "checkpoints/step-10/weights.bin",  # a folder of theirs inside
        "rejected/my-review.txt",  # under one of the run's folders
        "dead_letter/keep/me.txt",
        "_progress/mine.json",  # under the progress folder (which the build clears)
        "cache/my-copy.sqlite",  # under the cache
        ".hidden-notes",
    ],
)
def test_user_files_survive(run, rel, action):
    user_file(run / rel)
    before = snapshot(run.parent, [run])
    action(run)
    assert_no_user_byte_lost(before)
    assert not (run / "manifest.json").exists()  # and the run's own outputs did go


def test_clear_cache_deletes_only_the_caches_own_files(run):
    mine = user_file(run / "cache" / "notes.txt")
    before = snapshot(run.parent, [run])
    overwrite(run, clear_cache=True)
    assert_no_user_byte_lost(before)
    assert not (run / "cache" / "responses.sqlite").exists() and mine.exists()


@pytest.mark.parametrize("action", [overwrite, resume], ids=["overwrite", "resume"])
@pytest.mark.parametrize("rel", ["data/thesis.parquet", "views/messages/extra.parquet"])
def test_user_files_where_the_build_writes_its_splits_are_refused(run, rel, action):
    """The build renames its finished `data/` and `views/` into place; a user's file there
    would be mixed into the dataset or lost, so nothing starts."""
    user_file(run / rel)
    refused(action, run, rel, "did not write", "nothing was changed")


@pytest.mark.parametrize("name", ["README.md", "report.html", "_SUCCESS"])
def test_a_users_file_at_an_output_name_is_refused(run, name):
    """The user deleted our README and wrote their own: ours by name, not by record."""
    (run / name).unlink()
    user_file(run / name, "my own text")
    ledger = run / ownership.LEDGER  # forget that we once wrote that name
    lines = [x for x in ledger.read_text().splitlines() if x != f'"{name}"']
    ledger.write_text("\n".join(lines) + "\n")
    refused(overwrite, run, name)


# ---------------------------------------------------------------------------------------------
# Markers: never a run on a marker alone


@pytest.mark.parametrize(
    "marker",
    ["", "garbage{", '{"config_hash": "x", "entries": ["notes.txt", "data"]}'],
    ids=["empty", "damaged", "older-trajforge"],
)
@pytest.mark.parametrize("flag", ["--overwrite", "--resume"])
def test_a_marker_alone_never_makes_a_run(tmp_path, capsys, marker, flag):
    folder = tmp_path / "mine"
    user_file(folder / "data" / "train.parquet")
    user_file(folder / "README.md")
    user_file(folder / "notes.txt")
    (folder / ownership.LEDGER).write_text(marker)
    before = snapshot(tmp_path)
    assert build(folder, flag) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and ("not a trajforge run" in err or "older" in err), err
    assert snapshot(tmp_path) == before


def test_a_tampered_ledger_never_reaches_outside_the_run(run):
    outside = user_file(run.parent / "outside.txt")
    with open(run / ownership.LEDGER, "a") as f:
        f.write('"../outside.txt"\n"/../outside.txt"\n"a/../../outside.txt"\n')
    before = snapshot(run.parent, [run])
    overwrite(run)
    assert_no_user_byte_lost(before)
    assert outside.read_text() == "precious"


# ---------------------------------------------------------------------------------------------
# Symlinks


def test_a_link_inside_the_run_is_neither_followed_nor_deleted(run, tmp_path):
    target = tmp_path / "home" / "important"
    user_file(target / "thesis.tex")
    (run / "my-link").symlink_to(target)
    (run / "rejected" / "link-in-ours").symlink_to(target)
    before = snapshot(tmp_path, [run])
    overwrite(run)
    assert_no_user_byte_lost(before)


def test_a_link_that_replaced_one_of_our_folders_is_refused(run, tmp_path):
    target = tmp_path / "home" / "important"
    user_file(target / "train-00000-of-00001.parquet", "theirs, same name as ours")
    shutil.rmtree(run / "data")
    (run / "data").symlink_to(target)
    before = snapshot(tmp_path, [run])
    with pytest.raises(RunDirError):
        overwrite(run)
    assert_no_user_byte_lost(before)


def test_a_link_that_replaced_one_of_our_files_is_not_deleted_through(run, tmp_path):
    target = user_file(tmp_path / "home" / "summary.json", "theirs")
    (run / "rejected" / "summary.json").unlink()
    (run / "rejected" / "summary.json").symlink_to(target)
    before = snapshot(tmp_path, [run])
    overwrite(run)
    assert_no_user_byte_lost(before)
    assert target.read_text() == "theirs"


@pytest.mark.parametrize("name", ["rejected", "_progress", "cache"])
def test_a_link_where_the_build_writes_is_refused(run, tmp_path, name):
    """The build would write its files into the link's target (someone else's folder)."""
    target = tmp_path / "home" / "elsewhere"
    user_file(target / "summary.json", "theirs")
    if (run / name).exists():
        shutil.rmtree(run / name)
    (run / name).symlink_to(target)
    refused(overwrite, run, name)


def test_the_run_folder_itself_may_be_a_link(run, tmp_path):
    link = tmp_path / "area" / "run-link"
    link.symlink_to(run)
    user_file(run / "notes.txt")
    before = snapshot(tmp_path, [run])
    overwrite(link)
    assert_no_user_byte_lost(before)
    assert not (run / "manifest.json").exists()


# ---------------------------------------------------------------------------------------------
# Nested runs, locks


def test_nested_runs_keep_each_others_files(run, finished):
    inner = run / "inner-run"
    shutil.copytree(finished, inner, symlinks=True)
    user_file(run / "notes.txt")
    before = snapshot(run.parent, [run])
    overwrite(run)
    assert_no_user_byte_lost(before)
    assert (inner / "manifest.json").exists()  # the inner run is not the outer one's
    user_file(inner / "notes.txt")
    before = snapshot(run.parent, [inner])
    overwrite(inner)
    assert_no_user_byte_lost(before)


def test_a_second_build_into_a_folder_being_written_is_refused(run):
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (run / ownership.LOCK).write_text(f"{holder.pid}\n")
        refused(overwrite, run, "another build", str(holder.pid))
        refused(resume, run, "another build")
    finally:
        holder.kill()
        holder.wait()
    overwrite(run)  # its process is gone: a stale lock is taken over
    assert not (run / "manifest.json").exists()


# ---------------------------------------------------------------------------------------------
# Whole builds through the CLI


@pytest.mark.slow  # two builds (~8 s)
def test_output_dot_keeps_the_users_files(tmp_path, monkeypatch):
    """`--output .` in an empty folder, notes added, then `--output . --overwrite`."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert build(".") == 0
    user_file(work / "notes.txt")
    user_file(work / "sub" / "model.bin")
    before = snapshot(tmp_path, [work])
    assert build(".", "--overwrite") == 0
    assert_no_user_byte_lost(before)
    assert (work / "_SUCCESS").exists()


def test_tilde_output_is_expanded_once(tmp_path, monkeypatch, capsys):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    assert build("~/x") == 0
    assert (home / "x" / "_SUCCESS").exists() and not (work / "~").exists()
    user_file(home / "x" / "notes.txt")
    before = snapshot(tmp_path, [home / "x"])
    overwrite(home / "x")
    assert_no_user_byte_lost(before)


@pytest.mark.slow  # three builds (~10 s)
def test_subfolder_run_through_resume_and_overwrite(tmp_path):
    """The issue's report: files a user adds to a run were recorded as the run's when the
    next build finished, then deleted by the following --overwrite."""
    out = tmp_path / "runs" / "a"
    assert build(out) == 0
    user_file(out / "notes.txt")
    user_file(out / "ckpt" / "model.bin")
    user_file(tmp_path / "runs" / "b" / "keep.txt")
    before = snapshot(tmp_path, [out])
    assert build(out, "--resume") == 0
    assert build(out, "--overwrite") == 0
    assert_no_user_byte_lost(before)


@pytest.mark.slow  # a build in a subprocess, and a second one against it
def test_a_second_concurrent_build_is_refused_end_to_end(tmp_path):
    config = tmp_path / "slow.yaml"
    config.write_text(TOY.read_text().replace("num_tasks: 12", "num_tasks: 400"))
    out = tmp_path / "run"
    first = subprocess.Popen(
        [sys.executable, "-m", "trajforge.pipelines.cli", "build", "--config", str(config)]
        + ["--output", str(out), "--no-progress"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not (out / ownership.LEDGER).exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        second = subprocess.run(
            [sys.executable, "-m", "trajforge.pipelines.cli", "build", "--config", str(config)]
            + ["--output", str(out), "--overwrite", "--no-progress"],
            capture_output=True,
            text=True,
        )
        assert second.returncode == 2 and "another build" in second.stderr, second.stderr
        assert first.wait(timeout=300) == 0
    finally:
        first.kill()
    assert (out / "_SUCCESS").exists()


# ---------------------------------------------------------------------------------------------
# An unfinished run is refused by everything that reads it


@pytest.mark.parametrize(
    "argv",
    [
        ["show", "{run}"],
        ["report", "{run}"],
        ["publish", "{run}", "--repo-id", "org/name", "--dry-run"],
        ["finetune", "sft", "--data", "{run}", "--model", "m", "--output", "{run}/../ft"],
        ["eval", "--model", "m", "--tasks", "{run}"],
    ],
    ids=["show", "report", "publish", "finetune", "eval"],
)
def test_a_run_without_success_is_refused_in_one_line(run, capsys, argv):
    (run / "_SUCCESS").unlink()  # killed after its manifest (status "succeeded") was written
    before = snapshot(run.parent)
    assert main([a.replace("{run}", str(run)) for a in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no _SUCCESS" in err and "--resume" in err, err
    assert snapshot(run.parent) == before


def test_resume_clears_a_killed_writers_temporary_file_and_only_that(run):
    ownership.record(str(run), [".manifest.json.tmp-abc123"])
    ours = user_file(run / ".manifest.json.tmp-abc123", '{"half": ')
    theirs = user_file(run / ".notes.tmp-draft")  # looks alike, never recorded
    before = snapshot(run.parent, [run])
    resume(run)
    assert_no_user_byte_lost(before)
    assert not ours.exists() and theirs.exists()
