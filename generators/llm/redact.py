"""Redaction of secrets from error text before it is stored (dead letters, logs, messages).

Why: an endpoint that echoes the request (some proxies put the headers into their 4xx body)
would otherwise copy the API key into `dead_letter/`, which is shipped with the dataset. Three
things are removed: every key a backend of this process resolved (`remember_secret`), the values
of environment variables whose names look secret (`*_API_KEY`, `*_TOKEN`, `*_SECRET`), and
anything shaped like a credential (`Authorization: ...`, `Bearer ...`, `sk-...`).
"""

from __future__ import annotations

import os
import re
import threading

REDACTED = "[REDACTED]"
_SECRET_ENV = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)
_SHAPES = (
    re.compile(r"(?i)(authorization['\"]?\s*[:=]\s*['\"]?)[^'\"\n,}]+"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=\-]{4,}"),
    re.compile(r"()\bsk-[A-Za-z0-9_\-]{8,}"),
)
_MIN_SECRET_CHARS = 8  # shorter values (e.g. "EMPTY", "secret") would redact ordinary words

_known: set[str] = set()
_lock = threading.Lock()


def remember_secret(value: str | None) -> None:
    """Register a key this process uses, so `redact` removes it wherever it shows up."""
    if value and len(value) >= _MIN_SECRET_CHARS:
        with _lock:
            _known.add(value)


def _secrets() -> list[str]:
    from_env = [
        v for k, v in os.environ.items() if _SECRET_ENV.search(k) and len(v) >= _MIN_SECRET_CHARS
    ]
    with _lock:
        known = list(_known)
    return sorted({*known, *from_env}, key=len, reverse=True)  # longest first: no partial leaks


def redact(text: str) -> str:
    """`text` with known secrets and credential-shaped strings replaced by `[REDACTED]`."""
    for secret in _secrets():
        if secret in text:
            text = text.replace(secret, REDACTED)
    for shape in _SHAPES:
        text = shape.sub(lambda m: m.group(1) + REDACTED, text)
    return text


#: What an HTTP error body keeps (the status says what failed; a proxy's 5 MB HTML page or a
#: body echoing the whole request says nothing more and would be copied into every dead letter).
ERROR_BODY_CHARS = 1_000


def bounded(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters, head and tail kept (an error's cause is often at
    the end of a traceback), with how much was cut said in the middle. Redact before cutting:
    a secret cut in two would no longer match."""
    if len(text) <= limit:
        return text
    half = max(limit // 2, 1)
    return f"{text[:half]} ...[{len(text) - 2 * half} characters cut]... {text[-half:]}"
