"""A remote runner may write a local `--output` only when the user says its workers run on this
machine (`--local-workers`), and only PortableRunner can have them there."""

from __future__ import annotations

import pytest

from trajforge.pipelines.preflight import PreflightError, check_runner


def test_remote_runner_refuses_local_output_and_names_the_opt_in():
    with pytest.raises(PreflightError, match="--local-workers"):
        check_runner("PortableRunner", "/tmp/run")
    with pytest.raises(PreflightError, match="gs://") as err:
        check_runner("DataflowRunner", "/tmp/run")
    assert "--local-workers" not in str(err.value)


def test_local_workers_allow_a_local_output_for_portable_runner_only():
    check_runner("PortableRunner", "/tmp/run", local_workers=True)
    check_runner("PortableRunner", "gs://bucket/run", local_workers=True)
    for runner in ("DataflowRunner", "FnApiRunner"):
        with pytest.raises(PreflightError, match="drop --local-workers"):
            check_runner(runner, "/tmp/run", local_workers=True)
