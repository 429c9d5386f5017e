"""The one result type every programmatic filter returns.

Filters are pure functions over typed records; the pipeline wraps each in a Beam stage that counts
and routes rejections. A small frozen record (instead of raising) lets the stage count passes and
rejections alike, and `raise_if_rejected` bridges to the `Rejected` exception where a stage prefers
exceptions.
"""

from __future__ import annotations

from dataclasses import dataclass

from trajforge.schemas import Rejected, RejectionReason


@dataclass(frozen=True)
class FilterResult:
    """Verdict of one filter: passed, or rejected with a typed reason and a human-readable detail."""

    passed: bool
    reason: RejectionReason | None
    detail: str

    def __post_init__(self) -> None:
        if self.passed == (self.reason is not None):
            raise ValueError("a passing result has no reason; a rejection needs one")

    @classmethod
    def ok(cls, detail: str = "") -> FilterResult:
        return cls(True, None, detail)

    @classmethod
    def reject(cls, reason: RejectionReason, detail: str) -> FilterResult:
        return cls(False, reason, detail)

    def raise_if_rejected(self) -> None:
        """Raise `Rejected(reason, detail)` when this result is a rejection."""
        if not self.passed:
            assert self.reason is not None
            raise Rejected(self.reason, self.detail)
