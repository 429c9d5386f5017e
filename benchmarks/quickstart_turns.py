"""Issue 27's acceptance read off a finished build: the most repeated sentence shape (values and
names masked), and how many kept rows hold a bare (name- or value-only) or out-of-role user turn.

    .venv/bin/python benchmarks/quickstart_turns.py RUN_DIR
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pyarrow.parquet as pq

from trajforge.generators.bare_turns import is_bare
from trajforge.generators.prompts import SIMULATOR_TOKENS
from trajforge.generators.roles import out_of_role
from trajforge.schemas import Trajectory
from trajforge.verifiers.readability import measure


def _spoken(text: str) -> str:
    for token in SIMULATOR_TOKENS:
        text = text.replace(token, " ")
    return text.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run", type=Path)
    args = parser.parse_args()
    rows = [
        r for f in sorted(args.run.glob("data/*.parquet")) for r in pq.read_table(f).to_pylist()
    ]
    report = measure(json.loads(r["messages_json"]) for r in rows)
    bare = confused = 0
    for row in rows:
        t = Trajectory.from_json(row["trajectory_json"])
        said = [_spoken(m.content) for m in t.messages if m.role == "user" and m.content]
        name = t.task.persona.name
        bare += any(s and is_bare(s, [name]) for s in said)
        confused += any(out_of_role(s, name) for s in said)
    print(
        f"rows {report.rows}; top sentence shape {report.top_sentence!r} in {report.top_sentence_rows:.1%}"
    )
    print(f"rows with a bare user turn: {bare}; with an out-of-role user turn: {confused}")


if __name__ == "__main__":
    main()
