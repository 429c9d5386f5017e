"""The LLM runtime shared by the pipeline's stages: backends, response cache, accounting.

Stages depend only on `schemas.LLMClient`; a build config names a backend (`BackendConfig`,
discriminated on `kind`) and `build_client` turns it into a client wrapped with the cache and
call accounting. The vLLM backend is imported lazily (it needs the `gpu` extra).
"""

from pipelines.llm.accounting import AccountingLLM, CallStats, cost_of
from pipelines.llm.cache import CachedLLM, ResponseCache
from pipelines.llm.factory import (
    BackendConfig,
    LocalBackendConfig,
    OpenAIBackendConfig,
    ScriptedBackendConfig,
    VLLMBackendConfig,
    build_client,
    model_name,
)
from pipelines.llm.local import LOCAL_MODEL_NAME, LocalLLM, MicroBatcher
from pipelines.llm.openai_backend import OpenAIBackend
from pipelines.llm.scripted import ScriptedLLM
from pipelines.llm.toolcall_text import parse_tool_calls, render_history, validate_arguments

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
