"""The one result type every trajectory filter returns.

Filters are pure checks over typed records; the pipeline wraps them in a Beam stage that counts
and routes rejections. A small frozen record (instead of raising) lets the stage count passes and
rejections alike, and `raise_if_rejected` bridges to the `Rejected` exception where a stage prefers
exceptions. The reason is validated here, where it is made, so a plugin filter's typo fails at the
filter and never reaches the rejected output as an untyped string.
"""

from __future__ import annotations

from dataclasses import dataclass

from trajforge.schemas import Rejected, RejectionReason, is_reason_id


@dataclass(frozen=True)
class FilterResult:
    """Verdict of one filter: passed, or rejected with a typed reason and a human-readable detail."""

    passed: bool
    reason: RejectionReason | None
    detail: str

    def __post_init__(self) -> None:
        if self.passed == (self.reason is not None):
            raise ValueError("a passing result has no reason; a rejection needs one")
        if self.reason is not None and not is_reason_id(self.reason):
            raise ValueError(
                f"rejection reason {self.reason!r} is not a reason id "
                "(lowercase snake_case words, dot-separated, at most 64 characters)"
            )

    @classmethod
    def ok(cls, detail: str = "") -> FilterResult:
        return cls(True, None, detail)

    @classmethod
    def reject(cls, reason: RejectionReason, detail: str) -> FilterResult:
        return cls(False, reason, detail)

    def raise_if_rejected(self, filter_name: str | None = None) -> None:
        """Raise `Rejected(reason, detail)` when this result is a rejection."""
        if not self.passed:
            assert self.reason is not None
            raise Rejected(self.reason, self.detail, filter_name)
