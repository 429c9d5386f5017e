"""One small text file written from a one-element PCollection (a summary, a report).

`beam.io.WriteToText(path, num_shards=1, shard_name_template="")` does the same job with ~17
transforms (initialise, write bundles, a GroupByKey, pre-finalise, finalise) spread over several
fused stages; a build had four of them, and the local runner pays its per-stage, per-DoFn set-up
(`get_dofn_specs`, bundle processors) for each. The summaries written here are one element by
construction (the output of a global combine), so one `Map` that writes the file is enough and
fuses into the stage that computes the element. The bytes are WriteToText's: the text and "\n".
A retried write rewrites the same bytes.
"""

from __future__ import annotations

import apache_beam as beam

from trajforge.pipelines import io, ownership


def write_line(text: str, path: str, run_dir: str | None = None) -> str:
    """`text` + newline into `path` (parent folders created); the path, for tests and joins.
    With `run_dir`, `path` is relative to it and the file is the run's (`ownership.create`:
    recorded, written under a temporary name, renamed into place)."""
    if run_dir is None:
        io.write_text(path, text + "\n")
        return path

    return ownership.write_text(run_dir, path, text + "\n")


class WriteTextFile(beam.PTransform):
    """A one-element PCollection of str -> the file `path` (nothing is written for no element:
    callers feed it the output of a global combine, which always has one). `run_dir`: `path`
    is one of that run's files, relative to it."""

    def __init__(self, path: str, run_dir: str | None = None):
        super().__init__()
        self.path = path
        self.run_dir = run_dir

    def expand(self, texts):
        return texts | "WriteFile" >> beam.Map(write_line, self.path, self.run_dir)
