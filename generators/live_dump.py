"""`LiveDump`: the held dump of one live state, kept across the calls that mutate it.

Split from tooling.py (the boundary that runs calls) because it is the other half of the
incremental path: the boundary patches a held dump at the entries a write declares
(`tool(touches=...)`), and this keeps that dump and the canonical bytes of its entries from
one version to the next, so a version's hash re-encodes only what changed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from trajforge.generators.execute_options import ExecuteOptions
from trajforge.generators.state_dumps import state_hash
from trajforge.schemas import ToolCall
from trajforge.schemas.base import CanonicalParts

if TYPE_CHECKING:
    from trajforge.generators.tooling import Toolbox, ToolExecution
    from trajforge.generators.world_templates import CowCopy


class LiveDump:
    """The current dump of one live state that only `Toolbox.execute` mutates, kept across
    calls so that a write's "before" is the previous write's "after" and the final state hash
    reads the last dump instead of dumping the whole world again.

    Why it stays current: a write hands back its `state_after` (a failed one the very dump it
    restored the state from, `restore_whole`), and a read tool never
    mutates (tests/generators/test_tooling.py holds every domain's read tools to that). Before
    the first write nothing is held and the state is dumped as before."""

    #: False dumps afresh around every call, as before this helper (the tests' reference).
    SHARE = True

    def __init__(
        self,
        initial_hash: str | None = None,
        hold: bool = True,
        journal: bool = False,
        start: CowCopy | None = None,
        observe: bool = True,
    ) -> None:
        self.dumped: dict[str, Any] | None = None
        #: How the toolbox runs this state's calls. `hold=False`: a write with nothing held
        #: dumps only the entries it touches and no whole dump is ever held (for a state that
        #: is never hashed, such as a plan search's working copy; `state_hash` then dumps the
        #: state). `cow`: the template handout the live state is (None: a state of its own).
        #: `observe=False`: successful calls' observations are not rendered, for a run whose
        #: callers read only errors, states and hashes (plan search, replays).
        self.options = ExecuteOptions(hold=hold, observe=observe, cow=start)
        self.wrote = False
        #: With `journal`, how to undo each write that ran, in order (`undo_all`).
        self._journal: list[Callable[[BaseModel], None]] | None = [] if journal else None
        #: The canonical bytes of the held dump's entries, reused by the next version's hash.
        self.parts = CanonicalParts()
        #: The initial state's hash when the caller knows it (a replay memo entry): the final
        #: hash of a run in which no write ran.
        self.initial_hash = initial_hash

    def execute(self, toolbox: Toolbox, state: BaseModel, call: ToolCall) -> ToolExecution:
        """`toolbox.execute` with the held dump; holds the write's `state_after`."""
        if self.dumped is None and not self.wrote and self.options.cow is not None:
            self._adopt_template()
        options = self.options if self.SHARE else replace(self.options, incremental=False)
        execution = toolbox.execute(state, call, self.dumped, options)
        if execution.state_after is not None and self.SHARE:
            self.dumped = execution.state_after
        ran = execution.mutating and execution.error is None
        self.wrote |= ran
        if ran and self._journal is not None and execution.undo is not None:
            self._journal.append(execution.undo)
        return execution

    def _adopt_template(self) -> None:
        """Hold the template's dump as the current one (nothing wrote yet, so the copy is
        still equal to its template), with its parts so the next hash re-encodes only what
        changed, when a dump is wanted at all (`hold`, SHARE)."""
        cow = self.options.cow
        if self.options.hold and self.SHARE and cow is not None:
            template = cow.template.dumped()
            self.dumped, self.parts = template.dumped, template.parts_for_copy()

    def undo_all(self, state: BaseModel) -> None:
        """Put `state` back as it was before the first journalled write (last write first)."""
        for undo in reversed(self._journal or ()):
            undo(state)
        self._journal = [] if self._journal is not None else None
        self.dumped, self.wrote = None, False

    def state_hash(self, state: BaseModel) -> str:
        """`state_hash(state)`, from the held dump when there is one, else (no write ran, so
        the state is still the initial one) from the known initial hash."""
        if self.dumped is None and self.wrote:
            return state_hash(state)  # written to without holding a dump (`hold=False`)
        if self.dumped is not None:  # held only when SHARE is on (execute, run_replay)
            return hashlib.sha256(self.parts.bytes_of(self.dumped)).hexdigest()
        if self.initial_hash is not None and self.SHARE:
            return self.initial_hash
        if self.options.cow is not None and self.SHARE:  # no write ran: the copy is its template
            return self.options.cow.template.dumped().hash
        return state_hash(state)
