"""Backend configs (one discriminated union on `kind`) and the one place clients are built.

Configs are data (frozen, no unknown keys) so a build config can be hashed and recorded; API
keys never appear in them, only the name of the environment variable that holds one.
`build_client` wraps every backend the same way: the cache (when given) inside accounting, so
`client.stats` counts cache hits as well as paid calls.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from trajforge.generators.llm.accounting import AccountingLLM, CallStats
from trajforge.generators.llm.cache import CachedLLM, ResponseStore
from trajforge.generators.llm.guard import BoundedLLM, ConcurrencyLimitedLLM, TextLimits
from trajforge.generators.llm.local import LOCAL_MODEL_NAME, LocalLLM
from trajforge.generators.llm.openai_backend import OpenAIBackend
from trajforge.generators.llm.openai_wire import base_url_problem
from trajforge.generators.llm.responders import RESPONDERS
from trajforge.generators.llm.scripted import ScriptedLLM
from trajforge.generators.llm.vllm_backend import VLLMBackend
from trajforge.schemas import LLMClient, LLMError


class _BackendConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OpenAIBackendConfig(_BackendConfig):
    kind: Literal["openai"] = "openai"
    model: str
    base_url: str | None = None  # None: $OPENAI_BASE_URL, else the OpenAI API
    api_key_env: str = "OPENAI_API_KEY"
    # A local server (vLLM, llama.cpp) that ignores authentication: say so explicitly, and a
    # placeholder key is sent; otherwise an unset `api_key_env` is an error before the build.
    needs_api_key: bool = True
    # Google Secret Manager version to read the key from on each worker (Dataflow), e.g.
    # "projects/P/secrets/openai-key/versions/latest"; needs the `dataflow` extra.
    api_key_secret: str | None = None
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=6, ge=0)
    backoff_base_s: float = Field(default=0.5, ge=0)
    backoff_max_s: float = Field(default=30.0, ge=0)
    max_connections: int = Field(default=1000, ge=1)
    transport: Literal["auto", "httpx", "aiohttp"] = "auto"  # auto: aiohttp when installed

    @field_validator("base_url")
    @classmethod
    def _valid_base_url(cls, url: str | None) -> str | None:
        if url is not None:
            problem = base_url_problem(url)
            if problem:
                raise ValueError(
                    f"{problem}; write it like http://localhost:8000/v1 or https://host/v1"
                )
        return url


class LocalBackendConfig(_BackendConfig):
    kind: Literal["local"] = "local"
    max_batch_size: int = Field(default=8, ge=1)
    batch_window_ms: float = Field(default=5.0, ge=0)
    # torch intra-op threads while the model generates (process-wide); None: torch's default.
    # 1 by default: on 2 shared cores two threads spent 5-10x the CPU per token of one
    # (spinning), for a 135M model that gains little from a second (benchmarks/README.md).
    threads: int | None = Field(default=1, ge=1)
    # Slices of a batch generated at once, each in its own thread on one torch thread: a second
    # core used without the spinning of torch's intra-op threads (benchmarks/README.md,
    # "Quickstart in three minutes"). 1: one generate per batch.
    workers: int = Field(default=2, ge=1, le=64)
    # Weights and activations: `auto` is bfloat16 where the CPU has native bfloat16 matrix
    # units (about half the CPU of float32 per prompt token), float32 elsewhere.
    dtype: Literal["auto", "float32", "bfloat16"] = "auto"


class ScriptedBackendConfig(_BackendConfig):
    kind: Literal["scripted"] = "scripted"
    responder: str

    @field_validator("responder")
    @classmethod
    def _known_responder(cls, name: str) -> str:
        if name not in RESPONDERS:
            raise ValueError(f"unknown responder {name!r}; known: {', '.join(sorted(RESPONDERS))}")
        return name


class VLLMBackendConfig(_BackendConfig):
    kind: Literal["vllm"] = "vllm"
    model: str
    dtype: str = "auto"
    max_model_len: int | None = Field(default=None, ge=1)
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)
    tensor_parallel_size: int = Field(default=1, ge=1)
    max_batch_size: int = Field(default=256, ge=1)


BackendConfig = Annotated[
    OpenAIBackendConfig | LocalBackendConfig | ScriptedBackendConfig | VLLMBackendConfig,
    Field(discriminator="kind"),
]


def model_name(cfg: BackendConfig) -> str:
    """The model name recorded in provenance for this backend."""
    if isinstance(cfg, OpenAIBackendConfig | VLLMBackendConfig):
        return cfg.model
    if isinstance(cfg, LocalBackendConfig):
        return LOCAL_MODEL_NAME
    return f"scripted:{cfg.responder}"


def read_secret(name: str) -> str:
    """The payload of a Secret Manager secret version, read where the client is built (on the
    worker), so the key never travels in pipeline options or logs."""
    try:
        # lazy: optional dependency (the dataflow extra)
        from google.cloud import secretmanager
    except ImportError as err:
        raise LLMError(
            "api_key_secret needs google-cloud-secret-manager: pip install 'trajforge[dataflow]'"
        ) from err
    client = secretmanager.SecretManagerServiceClient()
    return client.access_secret_version(name=name).payload.data.decode("utf-8").strip()


def build_client(
    cfg: BackendConfig,
    cache: ResponseStore | None = None,
    stats: CallStats | None = None,
    max_in_flight: int | None = None,
    limits: TextLimits | None = None,
) -> AccountingLLM:
    """The backend for `cfg`, wrapped (inside out) by the concurrency limit (cache hits take no
    slot), the cache, the size bounds (cached answers are checked too) and accounting."""
    stats = stats if stats is not None else CallStats()
    inner: LLMClient = _build_backend(cfg, stats)
    if max_in_flight is not None:
        inner = ConcurrencyLimitedLLM(inner, max_in_flight)
    if cache is not None:
        inner = CachedLLM(inner, cache, namespace=f"{cfg.kind}:{model_name(cfg)}")
    if limits is not None:
        inner = BoundedLLM(inner, limits)
    return AccountingLLM(inner, stats, model=model_name(cfg))


def _build_backend(cfg: BackendConfig, stats: CallStats) -> Any:
    if isinstance(cfg, OpenAIBackendConfig):
        return OpenAIBackend(
            cfg.model,
            base_url=cfg.base_url,
            api_key=read_secret(cfg.api_key_secret) if cfg.api_key_secret else None,
            api_key_env=cfg.api_key_env,
            needs_api_key=cfg.needs_api_key,
            timeout_s=cfg.timeout_s,
            max_retries=cfg.max_retries,
            backoff_base_s=cfg.backoff_base_s,
            backoff_max_s=cfg.backoff_max_s,
            max_connections=cfg.max_connections,
            transport=cfg.transport,
            stats=stats,
        )
    if isinstance(cfg, LocalBackendConfig):
        return LocalLLM(
            max_batch_size=cfg.max_batch_size,
            batch_window_s=cfg.batch_window_ms / 1000.0,
            threads=cfg.threads,
            workers=cfg.workers,
            dtype=cfg.dtype,
        )
    if isinstance(cfg, ScriptedBackendConfig):
        return ScriptedLLM(responder=RESPONDERS[cfg.responder], model=model_name(cfg))
    if isinstance(cfg, VLLMBackendConfig):
        return VLLMBackend.from_config(cfg)
    raise LLMError(f"unknown backend config {type(cfg).__name__}")
