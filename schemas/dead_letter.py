"""Dead letters: elements a stage could not process because something raised."""

from __future__ import annotations

from trajforge.schemas.base import Record
from trajforge.schemas.judgement import Stage


class DeadLetter(Record):
    """An element that raised, kept whole with the error so nothing is silently lost."""

    record_id: str
    stage: Stage
    error: str  # "ExceptionType: message"
    traceback: str
    element_json: str
