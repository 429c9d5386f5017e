"""Open a report in headless Chromium: no console messages, a non-blank screenshot.

    python -m trajforge.pipelines.finished.report_check runs/quickstart/report.html

The report has no scripts and loads nothing, so any console message (a failed resource, a
parse error) is a defect. Name resolution is disabled, so a page that needed the network
would log errors. Used by `make report-check` and by a test skipped when Chromium is absent.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile

from pydantic import BaseModel, ConfigDict

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
CONSOLE = re.compile(r":CONSOLE(?::\d+)?\]|CONSOLE\(\d+\)")


class ReportCheckError(RuntimeError):
    """The check could not run; the message (one line) says why and what to do."""


class ReportCheck(BaseModel):
    model_config = ConfigDict(frozen=True)

    console_messages: tuple[str, ...]
    ink_fraction: float  # share of screenshot pixels that are not background
    colours: int  # distinct colours in the screenshot (plots bring many)

    @property
    def ok(self) -> bool:
        return not self.console_messages and self.ink_fraction > 0.01 and self.colours > 16


def browser() -> str | None:
    return next((b for b in map(shutil.which, BROWSERS) if b), None)


def screenshot_stats(png: str) -> tuple[float, int]:
    # Here, not at the top: Pillow is not a declared dependency (a transitive one of the
    # dev tools); the HTML checks run without it, only the screenshot check needs it.
    import numpy as np
    from PIL import Image

    pixels = np.asarray(Image.open(png).convert("RGB")).reshape(-1, 3)
    colours, counts = np.unique(pixels, axis=0, return_counts=True)
    background = counts.max()
    return float(1 - background / len(pixels)), len(colours)


def check_report(path: str, timeout_s: int = 120) -> ReportCheck:
    exe = browser()
    if exe is None:
        raise ReportCheckError(
            f"no Chromium found (looked for {', '.join(BROWSERS)}); install the Debian "
            "package: apt-get install chromium"
        )
    if not os.path.isfile(path):
        raise ReportCheckError(f"{path} is not a file; pass a run's report.html")
    with tempfile.TemporaryDirectory() as tmp:
        png = os.path.join(tmp, "shot.png")
        proc = _run_browser(
            [
                exe,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--enable-logging=stderr",
                "--v=0",
                "--host-resolver-rules=MAP * ~NOTFOUND",
                f"--user-data-dir={tmp}/profile",
                "--window-size=1280,2400",
                f"--screenshot={png}",
                "file://" + os.path.abspath(path),
            ],
            timeout_s,
        )
        if not os.path.exists(png):
            last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1][:200]
            raise ReportCheckError(
                f"{exe} wrote no screenshot (exit {proc.returncode}; last line: {last}); run "
                "it by hand with --headless --screenshot to see why"
            )
        ink, colours = screenshot_stats(png)
    messages = tuple(line for line in proc.stderr.splitlines() if CONSOLE.search(line))
    return ReportCheck(console_messages=messages, ink_fraction=ink, colours=colours)


def _run_browser(argv: list[str], timeout_s: int) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as err:
        raise ReportCheckError(
            f"{argv[0]} did not finish in {timeout_s} s; a busy machine may need a longer timeout"
        ) from err
    except OSError as err:
        raise ReportCheckError(f"{argv[0]} could not be started ({err.strerror})") from err


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if len(args) != 1:
        print(
            "usage: python -m trajforge.pipelines.finished.report_check REPORT.html",
            file=sys.stderr,
        )
        return 2
    try:
        result = check_report(args[0])
    except ReportCheckError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"console messages: {len(result.console_messages)}")
    for m in result.console_messages:
        print(f"  {m}")
    print(f"non-background pixels: {result.ink_fraction:.1%}, colours: {result.colours}")
    print("OK" if result.ok else "FAILED")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
