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
