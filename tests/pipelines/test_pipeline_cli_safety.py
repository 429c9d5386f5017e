"""What the CLI refuses before anything runs (exit 2, one line, nothing touched), and how a
failed build reports itself (exit 1, manifest written, no _SUCCESS)."""

import json

import pytest

from trajforge.pipelines import ownership, preflight
from trajforge.pipelines.cli import main
from trajforge.pipelines.run_dir import RUN_MARKER, prepare_run_dir

CONFIG = """
domain: retail
num_tasks: 3
seed: 1
mode: blueprint
roles:
  agent: {kind: scripted, responder: blueprint}
quality: {dedup: {semantic: {enabled: false}}}
"""
OPENAI = CONFIG.replace(
    "{kind: scripted, responder: blueprint}",
    "{kind: openai, model: m, base_url: 'http://127.0.0.1:9/v1', api_key_env: TF_TEST_KEY}",
)


@pytest.fixture
def cfg(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(CONFIG)
    return path


def run(capsys, *argv):
    code = main(["build", *argv, "--no-progress"])
    captured = capsys.readouterr()
    return code, captured.err.strip()


def one_line_error(code, err, *fragments):
    assert code == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in err, err


def test_output_that_is_a_file(tmp_path, cfg, capsys):
    target = tmp_path / "file.txt"
    target.write_text("keep me")
    code, err = run(capsys, "--config", str(cfg), "--output", str(target))
    one_line_error(code, err, "is a file")
    assert target.read_text() == "keep me"


@pytest.mark.parametrize("flag", ["--resume", "--overwrite"])
def test_foreign_folder_is_never_written_or_deleted(tmp_path, cfg, capsys, flag):
    home = tmp_path / "data-i-care-about"
    (home / "data").mkdir(parents=True)
    (home / "data" / "thesis.parquet").write_text("precious")
    (home / "notes.txt").write_text("precious")
    code, err = run(capsys, "--config", str(cfg), "--output", str(home), flag)
    one_line_error(code, err, "not a trajforge run directory")
    assert sorted(p.name for p in home.iterdir()) == ["data", "notes.txt"]
    assert (home / "data" / "thesis.parquet").read_text() == "precious"


@pytest.mark.slow  # two whole builds (~20 s)
def test_overwrite_deletes_only_what_a_run_wrote_and_keeps_the_cache(tmp_path, cfg, capsys):
    out = tmp_path / "run"
    assert run(capsys, "--config", str(cfg), "--output", str(out))[0] == 0
    assert (out / RUN_MARKER).exists() and (out / "cache" / "responses.sqlite").exists()
    (out / "my-notes.txt").write_text("mine")  # added by the user after the run
    stale = out / "data" / "stale.parquet"  # the user's, in the folder the build replaces
    stale.write_text("x")
    code, err = run(capsys, "--config", str(cfg), "--output", str(out), "--overwrite")
    one_line_error(code, err, "data/stale.parquet", "did not write")
    assert stale.read_text() == "x"
    stale.unlink()
    cache_size = (out / "cache" / "responses.sqlite").stat().st_size
    code, err = run(capsys, "--config", str(cfg), "--output", str(out), "--overwrite")
    assert code == 0, err
    assert (out / "my-notes.txt").read_text() == "mine"
    assert (out / "cache" / "responses.sqlite").stat().st_size >= cache_size
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["tokens"]["cached_calls"] == manifest["tokens"]["llm_calls"] > 0  # free rerun
    code, err = run(
        capsys, "--config", str(cfg), "--output", str(out), "--overwrite", "--clear-cache"
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert code == 0 and manifest["tokens"].get("cached_calls", 0) == 0


def test_resume_clears_stale_progress(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    ownership.start(str(out), "h")
    ownership.ensure_dir(str(out), "_progress")
    ownership.record(str(out), ["_progress/123.json"])
    (out / "_progress" / "123.json").write_text(json.dumps({"split.kept": 72}))
    prepare_run_dir(str(out), "h", resume=True, overwrite=False)
    assert not (out / "_progress").exists()
    assert ownership.header(str(out))["config_hash"] == "h"


def test_missing_api_key_is_caught_before_the_run(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("TF_TEST_KEY", raising=False)
    path = tmp_path / "o.yaml"
    path.write_text(OPENAI)
    out = tmp_path / "never-created"
    code, err = run(capsys, "--config", str(path), "--output", str(out))
    one_line_error(code, err, "roles.agent", "TF_TEST_KEY", "needs_api_key: false")
    assert not out.exists()


@pytest.mark.parametrize(
    "argv, fragments",
    [
        (["--ovewrite"], ["unknown flag --ovewrite", "did you mean --overwrite?"]),
        (["--overwirte"], ["did you mean --overwrite?"]),
        (["--resum"], ["unknown flag --resum", "did you mean --resume?"]),  # no prefixes
        (["--no-prog"], ["unknown flag --no-prog"]),
        (["--no-progess"], ["did you mean --no-progress?"]),
        (["--runer=DataflowRunner"], ["did you mean the Beam option --runner?"]),
        (["--runner", "DataFlowRuner"], ["not a Beam runner", "did you mean DataflowRunner?"]),
        (["--runner=DataflowRunner"], ["local path", "gs://"]),
    ],
)
def test_flags_and_runners_are_checked(tmp_path, cfg, capsys, argv, fragments):
    out = tmp_path / "out"
    code, err = run(capsys, "--config", str(cfg), "--output", str(out), *argv)
    one_line_error(code, err, *fragments)
    assert not out.exists()


def test_gs_output_without_the_gcp_filesystem_names_the_fix(cfg, capsys):
    # asks for the client, not Beam's filesystem: Beam 2.78 registers that without the client
    if preflight.gcs_client_installed():
        pytest.skip("google-cloud-storage is installed here")
    code, err = run(capsys, "--config", str(cfg), "--output", "gs://bucket/run")
    one_line_error(code, err, "trajforge[dataflow]")


@pytest.mark.slow  # a whole build with extra Beam flags
def test_true_beam_flags_pass_through(tmp_path, cfg, capsys):
    code, err = run(
        capsys, "--config", str(cfg), "--output", str(tmp_path / "r"), "--direct_num_workers=1"
    )
    assert code == 0, err


def test_a_build_that_keeps_too_little_fails_loudly(tmp_path, cfg, capsys):
    strict = tmp_path / "strict.yaml"
    strict.write_text(CONFIG + "failure: {min_kept: 1000}\n")
    out = tmp_path / "run"
    code, err = run(capsys, "--config", str(strict), "--output", str(out))
    assert code == 1 and len(err.splitlines()) == 1 and "build failed: kept" in err
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "failed" and "min_kept" in manifest["failure"]
    assert not (out / "_SUCCESS").exists()


@pytest.mark.parametrize(
    "argv, fragments",
    [
        (
            ["show", "run", "--spilt", "train"],
            ["trajforge show", "--spilt", "did you mean --split?"],
        ),
        (["report", "run", "--verbose"], ["trajforge report", "unrecognized arguments: --verbose"]),
        (["show", "run", "--rej"], ["trajforge show", "--rej"]),  # a prefix is not a flag
    ],
)
def test_other_commands_refuse_unknown_flags_instead_of_ignoring_them(capsys, argv, fragments):
    from trajforge.pipelines.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    one_line_error(2, err, *fragments)
