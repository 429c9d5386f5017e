"""`ExecuteOptions`: how `Toolbox.execute` runs a call, one small record instead of keywords.

Split from tooling.py so `LiveDump` (which tooling re-exports) can build one without a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trajforge.generators.world_templates import CowCopy


@dataclass(frozen=True)
class ExecuteOptions:
    """How `Toolbox.execute` runs a write, made once per live state (`LiveDump`). Each mode
    keeps results identical and saves CPU (benchmarks/README.md, "Issue 31: the speed-ups at
    whole-build level", for what each is worth).

    `incremental`: a write whose tool declares `touches` re-dumps only those entries after the
    call (False: the whole state, the reference the tests compare with).
    `hold=False`: with no held dump, such a write dumps only its entries, before and after,
    and hands no whole dump on (a caller that never hashes: the plan search).
    `cow`: the state is that template's handout; a write first makes the entries it touches
    the copy's own (all of them when its tool declares none, or the declaration fails on
    these arguments), so the tool never mutates an entry the template shares.
    `observe=False`: a successful call's observation is left empty instead of rendered (a
    caller that reads only errors, states and hashes: plan search and replays, which rendered
    every result as JSON text for nothing); errors are always rendered."""

    incremental: bool = True
    hold: bool = True
    observe: bool = True
    cow: CowCopy | None = None


#: The defaults: every mode that saves work on, nothing held, no template.
PLAIN_EXECUTION = ExecuteOptions()
