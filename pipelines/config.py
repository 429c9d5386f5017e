"""The build config: one YAML file, validated by pydantic on load.

Every field is typed and closed; an unknown key, a wrong type or a missing required field fails
at load time with a message naming the field, before any worker starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from trajforge.generators.llm.factory import BackendConfig
from trajforge.schemas import SamplingParams, canonical_json, content_hash
from trajforge.verifiers.judge import JudgeConfig


class _Config(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RolesConfig(_Config):
    """Which backend plays each role. The user and judge default to the agent's backend."""

    agent: BackendConfig
    user: BackendConfig | None = None
    judge: BackendConfig | None = None


class RolloutConfig(_Config):
    max_turns: int = Field(default=20, ge=1, le=200)
    max_steps: int = Field(default=40, ge=1, le=500)
    user: Literal["llm", "scripted"] = "llm"
    agent: Literal["llm", "oracle"] = "llm"


class BlueprintConfig(_Config):
    """Blueprint mode: which utterances the LLM rewrites (the rest keep their drafts)."""

    verbalise: Literal["all", "user", "none"] = "all"
    max_retries: int = Field(default=1, ge=0, le=10)


class ConcurrencyConfig(_Config):
    max_in_flight: int = Field(default=64, ge=1, le=4096)


class SplitConfig(_Config):
    """Fractions per split, assigned by cluster (see pipelines/splits.py): trajectories sharing a
    task, a key kind in `group_by` or a value of a `shared_entities` argument, and near-duplicates
    (MinHash estimate >= `near_dup_threshold`), always land in the same split. `seed` freezes the
    golden split: later builds with the same seed keep the same clusters in golden."""

    train: float = Field(default=0.9, ge=0, le=1)
    validation: float = Field(default=0.0, ge=0, le=1)
    golden: float = Field(default=0.1, ge=0, le=1)
    seed: int = 0
    group_by: tuple[Literal["template", "persona"], ...] = ("template",)
    shared_entities: tuple[str, ...] = ()  # gold-action argument names, e.g. [user_id]
    near_dup_threshold: float | None = Field(default=0.7, gt=0, le=1)

    @model_validator(mode="before")
    @classmethod
    def _renamed_test(cls, data):
        if isinstance(data, dict) and "test" in data:
            raise ValueError("`test` was renamed `golden` (the frozen evaluation split); rename it")
        return data

    @model_validator(mode="after")
    def _sums_to_one(self) -> SplitConfig:
        total = self.train + self.validation + self.golden
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"split fractions must sum to 1.0, got {total:g}")
        return self


class CardConfig(_Config):
    """Hub metadata of the dataset card (the rest comes from the build)."""

    license: str = "apache-2.0"
    language: tuple[str, ...] = ("en",)
    pretty_name: str | None = None  # defaults to the build's name


class OutputConfig(_Config):
    """What is written. `num_shards` fixes the train split's shard count of every output;
    unset, each output split gets one shard per `shard_mb` MB (at least one)."""

    num_shards: int | None = Field(default=None, ge=1, le=4096)
    shard_mb: int = Field(default=256, ge=1, le=4096)
    views: tuple[Literal["messages", "step_prefix", "steps", "sharegpt"], ...] = (
        "messages",
        "step_prefix",
        "steps",
        "sharegpt",
    )
    splits: SplitConfig = SplitConfig()
    card: CardConfig = CardConfig()


class CacheConfig(_Config):
    enabled: bool = True


class JudgeStageConfig(_Config):
    """The multi-axis LLM judge. `gate: false` records judgements without rejecting."""

    enabled: bool = False
    gate: bool = True
    settings: JudgeConfig = JudgeConfig()


class ShortcutConfig(_Config):
    """Programmatic shortcut-resistance filters (no LLM), plus the task-level no-tool baseline."""

    answer_before_evidence: bool = True
    hallucinated_values: bool = True
    structural: bool = True
    loops: bool = True
    max_repeats: int = Field(default=3, ge=2)
    user_fidelity: bool = True
    no_tool_baseline: bool = True  # one LLM call per read-only task (write tasks cannot pass)


class NearDupConfig(_Config):
    enabled: bool = True
    threshold: float = Field(default=0.8, gt=0, le=1)  # true shingle Jaccard of a near-dup
    num_perm: int = Field(default=128, ge=16)
    bands: int = Field(default=21, ge=1)
    rows: int = Field(default=6, ge=1)

    @model_validator(mode="after")
    def _bands_fit(self) -> NearDupConfig:
        if self.bands * self.rows > self.num_perm:
            raise ValueError(
                f"bands*rows ({self.bands}*{self.rows}) must be <= num_perm ({self.num_perm})"
            )
        return self


class SemanticDupConfig(_Config):
    """Embedding near-duplicates (the packaged all-MiniLM-L6-v2, loaded once per worker).

    The embedder reads at most 256 word pieces, so it mostly sees a conversation's opening;
    templated conversations that open alike reach cosine ~0.94-0.95 across different tasks,
    hence a strict default."""

    enabled: bool = True
    threshold: float = Field(default=0.97, gt=0, le=1)


class DedupConfig(_Config):
    exact: bool = True
    near: NearDupConfig = NearDupConfig()
    semantic: SemanticDupConfig = SemanticDupConfig()


class QualityConfig(_Config):
    judge: JudgeStageConfig = JudgeStageConfig()
    shortcut: ShortcutConfig = ShortcutConfig()
    dedup: DedupConfig = DedupConfig()


class BuildConfig(_Config):
    name: str = "trajforge-build"
    domain: str
    num_tasks: int = Field(ge=1, le=10_000_000)
    seed: int = 0
    mode: Literal["rollout", "blueprint"] = "blueprint"
    roles: RolesConfig
    sampling: SamplingParams = SamplingParams(temperature=0.0, max_tokens=128)
    rollout: RolloutConfig = RolloutConfig()
    blueprint: BlueprintConfig = BlueprintConfig()
    concurrency: ConcurrencyConfig = ConcurrencyConfig()
    output: OutputConfig = OutputConfig()
    cache: CacheConfig = CacheConfig()
    quality: QualityConfig = QualityConfig()

    @field_validator("domain")
    @classmethod
    def _known_domain(cls, value: str) -> str:
        from trajforge.generators.domains import DOMAINS

        if value not in DOMAINS:
            raise ValueError(
                f"unknown domain {value!r}; known domains: {', '.join(sorted(DOMAINS))}"
            )
        return value

    def config_hash(self) -> str:
        return content_hash(self.model_dump(mode="json"), 16)

    def canonical(self) -> str:
        return canonical_json(self.model_dump(mode="json"))


class ConfigError(ValueError):
    """A config file that cannot be used; the message names the field and the fix."""


def format_validation_error(err: ValidationError, source: str) -> str:
    lines = [f"invalid config {source}:"]
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"] if not str(x).startswith("function-after"))
        if e["type"] == "extra_forbidden":
            lines.append(f"  {loc}: unknown field (remove it or check its spelling)")
        elif e["type"] == "missing":
            lines.append(f"  {loc}: required field is missing (add it)")
        else:
            lines.append(f"  {loc or '(top level)'}: {e['msg']} (got {e.get('input')!r})")
    return "\n".join(lines)


def load_config(path: str | Path) -> BuildConfig:
    """Read and validate a YAML build config; raise ConfigError with an actionable message."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except FileNotFoundError as err:
        raise ConfigError(f"config file not found: {path}") from err
    except yaml.YAMLError as err:
        raise ConfigError(f"config {path} is not valid YAML: {err}") from err
    if not isinstance(raw, dict):
        raise ConfigError(
            f"config {path} must be a YAML mapping of fields, got {type(raw).__name__}"
        )
    try:
        return BuildConfig.model_validate(raw)
    except ValidationError as err:
        raise ConfigError(format_validation_error(err, str(path))) from err
