"""Dead letters never hold secrets, whatever the failing call's error text echoes."""

from trajforge.generators.llm.redact import REDACTED, remember_secret
from trajforge.pipelines.transforms.routing import dead_letter_for
from trajforge.schemas import LLMError


def test_dead_letter_error_and_traceback_are_redacted(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-abcdefghijklmnop")
    remember_secret("secret-from-secret-manager-123")
    err = LLMError(
        "HTTP 400: {'headers': {'Authorization': 'Bearer sk-live-abcdefghijklmnop'}, "
        "'x-key': 'secret-from-secret-manager-123'}"
    )
    tb = f"Traceback ...\nLLMError: {err}\n"
    dead = dead_letter_for("blueprint", 3, err, tb)
    text = dead.to_json()
    assert "abcdefghijklmnop" not in text and "secret-from-secret-manager" not in text
    assert REDACTED in dead.error and REDACTED in dead.traceback
    assert dead.error.startswith("LLMError: HTTP 400")


def test_dead_letter_error_bodies_are_bounded_and_still_redacted(monkeypatch):
    """A server that answers with a megabyte of HTML echoing the request: the dead letter says
    why in a bounded text, the key redacted even where it sits at the very end."""
    from trajforge.generators.llm.openai_wire import status_failure
    from trajforge.pipelines.transforms.routing import (
        DEAD_LETTER_ERROR_CHARS,
        DEAD_LETTER_TRACEBACK_CHARS,
    )

    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-abcdefghijklmnop")
    body = "<html>" + "x" * 1_000_000 + " Authorization: Bearer sk-live-abcdefghijklmnop</html>"
    failure = status_failure(502, {}, body)
    assert len(failure.detail) < 1_100 and "abcdefghijklmnop" not in failure.detail
    err = LLMError(f"HTTP 502: {body}")
    dead = dead_letter_for("blueprint", 3, err, f"Traceback ...\nLLMError: {err}\n")
    assert len(dead.error) <= DEAD_LETTER_ERROR_CHARS + 60
    assert len(dead.traceback) <= DEAD_LETTER_TRACEBACK_CHARS + 60
    assert "characters cut" in dead.error and dead.error.startswith("LLMError: HTTP 502")
    assert "abcdefghijklmnop" not in dead.to_json() and REDACTED in dead.error
