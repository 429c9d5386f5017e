"""The LLM runtime shared by the pipeline's stages: backends, response cache, accounting.

Stages depend only on `schemas.LLMClient`; a build config names a backend (`BackendConfig`,
discriminated on `kind`) and `build_client` turns it into a client wrapped with the cache and
call accounting. The vLLM backend is imported lazily (it needs the `gpu` extra).
"""

from trajforge.generators.llm.accounting import AccountingLLM, CallStats, cost_of
from trajforge.generators.llm.cache import CachedLLM, ResponseCache
from trajforge.generators.llm.factory import (
    BackendConfig,
    LocalBackendConfig,
    OpenAIBackendConfig,
    ScriptedBackendConfig,
    VLLMBackendConfig,
    build_client,
    model_name,
)
from trajforge.generators.llm.local import LOCAL_MODEL_NAME, LocalLLM, MicroBatcher
from trajforge.generators.llm.openai_backend import OpenAIBackend
from trajforge.generators.llm.scripted import ScriptedLLM
from trajforge.generators.llm.toolcall_text import (
    parse_tool_calls,
    render_history,
    validate_arguments,
)

__all__ = [
    "AccountingLLM",
    "BackendConfig",
    "CachedLLM",
    "CallStats",
    "LOCAL_MODEL_NAME",
    "LocalBackendConfig",
    "LocalLLM",
    "MicroBatcher",
    "OpenAIBackend",
    "OpenAIBackendConfig",
    "ResponseCache",
    "ScriptedBackendConfig",
    "ScriptedLLM",
    "VLLMBackendConfig",
    "build_client",
    "cost_of",
    "model_name",
    "parse_tool_calls",
    "render_history",
    "validate_arguments",
]
