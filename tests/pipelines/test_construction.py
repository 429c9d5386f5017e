"""The in-process build's graph skips Beam's construction-time type check and the seeds'
reshuffle (pipelines/construction.py), and writes the same rows as the graph with both."""

from __future__ import annotations

import apache_beam as beam
import pytest
from apache_beam.options.pipeline_options import TypeOptions

from tests.pipelines.test_process_count_outputs import CONFIG, outputs
from trajforge.pipelines.build import build_pipeline
from trajforge.pipelines.cli import main
from trajforge.pipelines.config import BuildConfig, load_config
from trajforge.pipelines.construction import build_options, one_local_worker


@pytest.mark.parametrize(
    ("args", "one_worker"),
    [
        ([], True),
        (["--runner=FnApiRunner"], True),
        (["--runner=FnApiRunner", "--direct_running_mode=in_memory"], True),
        (["--runner=FnApiRunner", "--direct_running_mode=multi_processing"], False),
        (["--runner=FnApiRunner", "--direct_running_mode=multi_threading"], False),
        (["--runner=DataflowRunner"], False),
        (["--runner=PortableRunner"], False),
    ],
)
def test_type_check_off_only_on_one_local_worker(args, one_worker):
    options = build_options(args)
    assert one_local_worker(options) is one_worker
    assert options.view_as(TypeOptions).pipeline_type_check is not one_worker


def test_no_pipeline_type_check_flag_is_honoured_everywhere():
    options = build_options(["--runner=DataflowRunner", "--no_pipeline_type_check"])
    assert options.view_as(TypeOptions).pipeline_type_check is False


def labels(config: BuildConfig, spread_seeds: bool, tmp_path) -> set[str]:
    p = beam.Pipeline(options=build_options([]))
    build_pipeline(p, config, str(tmp_path), rebalance=False, spread_seeds=spread_seeds)
    found: set[str] = set()

    class Labels(beam.pipeline.PipelineVisitor):
        def visit_transform(self, node):
            found.add(node.full_label)

    p.visit(Labels())
    return found


def test_seeds_reshuffled_only_when_spread(tmp_path):
    path = tmp_path / "build.yaml"
    path.write_text(CONFIG.format(mode="blueprint", processes=1))
    config = load_config(str(path))
    assert any(label.startswith("Reshuffle/") for label in labels(config, True, tmp_path))
    assert not any(label.startswith("Reshuffle") for label in labels(config, False, tmp_path))


def test_same_rows_with_and_without_type_check_and_reshuffle(tmp_path, capsys):
    """One worker thread in both: `multi_threading` keeps the type check and the reshuffle."""
    (tmp_path / "build.yaml").write_text(CONFIG.format(mode="blueprint", processes=1))
    runs = {}
    for name, flags in (
        ("skipped", []),
        ("kept", ["--direct_running_mode=multi_threading", "--direct_num_workers=1"]),
    ):
        out = tmp_path / name
        argv = ["build", "--config", str(tmp_path / "build.yaml"), "--output", str(out), *flags]
        assert main([*argv, "--no-progress"]) == 0, capsys.readouterr().out
        runs[name] = outputs(out)
    assert runs["skipped"]["kept"]  # rows to compare
    assert runs["skipped"] == runs["kept"]
