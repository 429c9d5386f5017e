"""The build config: one YAML file, validated by pydantic on load.

Every field is typed and closed; an unknown key, a wrong type or a missing required field fails
at load time with a message naming the field, before any worker starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from trajforge.generators.domains import DOMAINS
from trajforge.generators.llm.factory import BackendConfig
from trajforge.generators.llm.guard import TextLimits
from trajforge.generators.noise import NoiseConfig
from trajforge.generators.plugins import is_plugin_path, load_domain
from trajforge.pipelines.config_types import number_type_errors
from trajforge.pipelines.dedup_config import (  # noqa: F401 - DedupConfig's parts re-exported
    DedupConfig,
    DiversityConfig,
    NearDupConfig,
    SemanticDupConfig,
)
from trajforge.pipelines.processes import RunnerConfig
from trajforge.schemas import SamplingParams, canonical_json, content_hash, derive_seed
from trajforge.verifiers.filters import DEFAULT_FILTERS, FilterSpec, build_filters, unique_names
from trajforge.verifiers.judge import JudgeConfig


class _Config(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RolesConfig(_Config):
    """Which backend plays each role. The user and judge default to the agent's backend."""

    agent: BackendConfig
    user: BackendConfig | None = None
    judge: BackendConfig | None = None


class RolloutConfig(_Config):
    """`attempts: K` rolls each task out K times (seeds derive_seed(task id, mode, attempt)),
    keeps the distinct passing attempts and labels rows with the task's pass rate and pass^k
    (pipelines/attempts.py). Sample with temperature > 0, or every attempt is the same."""

    max_turns: int = Field(default=20, ge=1, le=200)
    max_steps: int = Field(default=40, ge=1, le=500)
    user: Literal["llm", "scripted"] = "llm"
    # noisy: the gold plan with seeded faults at `noise`'s rates (generators/noisy_teacher.py)
    agent: Literal["llm", "oracle", "noisy"] = "llm"
    attempts: int = Field(default=1, ge=1, le=64)
    noise: NoiseConfig = NoiseConfig()
    # Fraction of tasks whose scripted user says "no, not yet" to the first confirmation and
    # yes when asked again (seeded per task): where an agent can act after a refusal.
    user_declines_first: float = Field(default=0.0, ge=0, le=1)

    @model_validator(mode="after")
    def _noise_needs_noisy_agent(self) -> RolloutConfig:
        # Compared with the default, not `model_fields_set`: a run's config.json holds every
        # field, and it must validate again when a command reads the run back.
        if self.noise != NoiseConfig() and self.agent != "noisy":
            raise ValueError(
                f"rollout.noise sets the noisy teacher's fault rates, but rollout.agent is "
                f"{self.agent!r}; set `agent: noisy` or drop `noise`"
            )
        return self

    @model_validator(mode="after")
    def _declines_need_scripted_user(self) -> RolloutConfig:
        if self.user_declines_first > 0 and self.user != "scripted":
            raise ValueError(
                "rollout.user_declines_first makes the scripted user decline first, but "
                f"rollout.user is {self.user!r}; set `user: scripted` or drop it"
            )
        return self


class BlueprintConfig(_Config):
    """Blueprint mode: which utterances the LLM rewrites (the rest keep their drafts)."""

    verbalise: Literal["all", "user", "none"] = "all"
    max_retries: int = Field(default=1, ge=0, le=10)


class ConcurrencyConfig(_Config):
    """Per Beam process (N local processes split them, 1/N each). `max_in_flight`: elements
    (trajectories, judgements) each async stage keeps in flight. `max_calls_in_flight`:
    requests in flight at each endpoint, one limit for every stage and role bound to that
    backend (no-tool baseline, generation and judge share the agent's when they use its
    backend); defaults to `max_in_flight`. On Dataflow an endpoint sees at most workers x
    processes per worker x `max_calls_in_flight` requests (README "Sizing concurrency")."""

    max_in_flight: int = Field(default=64, ge=1, le=4096)
    max_calls_in_flight: int | None = Field(default=None, ge=1, le=4096)

    @property
    def calls_limit(self) -> int:
        """Requests in flight per endpoint and process."""
        return self.max_calls_in_flight or self.max_in_flight


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
    # Templates held out whole for evaluation (fnmatch patterns on template ids, as in the
    # report's `template_id`: `toy/deposit/c1`, `retail/cancel_order*`): every cluster holding
    # one is golden, whatever the fractions say (the other clusters are split by them).
    golden_templates: tuple[str, ...] = ()
    # Golden ends at most one cluster past its ratio: the clusters the hash draws for golden
    # are taken in hash order while golden is under it, the rest go to train (golden_templates
    # are never capped). Off: the pure draw, frozen however the build grows (needed to compare
    # golden results across build sizes; pipelines/splits.py).
    cap_golden: bool = True

    @model_validator(mode="before")
    @classmethod
    def _renamed_test(cls, data):
        if isinstance(data, dict) and "test" in data:
            raise ValueError("`test` was renamed `golden` (the frozen evaluation split); rename it")
        return data

    @model_validator(mode="after")
    def _held_out_templates_are_keys(self) -> SplitConfig:
        if self.golden_templates and "template" not in self.group_by:
            raise ValueError(
                "golden_templates holds templates out whole, which needs template clusters: "
                "add `template` to output.splits.group_by"
            )
        return self

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


#: Former `quality.shortcut` switches, now entries of `quality.filters`.
_MOVED_TO_FILTERS = {
    "answer_before_evidence": "answer_before_evidence",
    "hallucinated_values": "hallucinated_values",
    "structural": "agent_tool_calls, narrated_actions",
    "loops": "loops",
    "max_repeats": "{name: loops, max_repeats: N}",
    "user_fidelity": "user_fidelity",
}


class ShortcutConfig(_Config):
    """The task-level no-tool baseline (trajectory filters are listed in `quality.filters`)."""

    no_tool_baseline: bool = True  # one LLM call per read-only task (write tasks cannot pass)
    # Tokens the no-tool answer may take: enough to state a task's few expected values; a small
    # CPU model decodes one token at a time for this single call, so the quickstart uses 64.
    baseline_max_tokens: int = Field(default=256, ge=8, le=4096)

    @model_validator(mode="before")
    @classmethod
    def _moved_switches(cls, value: Any) -> Any:
        moved = sorted(set(value) & set(_MOVED_TO_FILTERS)) if isinstance(value, dict) else []
        if moved:
            hints = "; ".join(f"{k} -> {_MOVED_TO_FILTERS[k]}" for k in moved)
            raise ValueError(
                f"{', '.join(moved)} moved to `quality.filters` (an ordered list of filters; "
                f"drop an entry to disable it): {hints}"
            )
        return value


class QualityConfig(_Config):
    """`filters` is the ordered trajectory-filter list (see verifiers/filters.py); the default
    runs every built-in filter."""

    judge: JudgeStageConfig = JudgeStageConfig()
    shortcut: ShortcutConfig = ShortcutConfig()
    filters: tuple[FilterSpec, ...] = DEFAULT_FILTERS
    dedup: DedupConfig = DedupConfig()
    diversity: DiversityConfig = DiversityConfig()

    @field_validator("filters")
    @classmethod
    def _unique_filter_names(cls, value: tuple[FilterSpec, ...]) -> tuple[FilterSpec, ...]:
        twice = unique_names(build_filters(value))
        if twice:
            raise ValueError(
                f"filter(s) {', '.join(twice)} listed twice; each filter has its own counters, "
                "so list it once (with the parameters you want)"
            )
        return value


class FailureConfig(_Config):
    """When a finished build counts as failed (exit 1, no `_SUCCESS`; the manifest is written)."""

    max_dead_letter_fraction: float = Field(default=0.10, ge=0, le=1)
    min_kept: int = Field(default=1, ge=0)


class BuildConfig(_Config):
    """One build. `domain: retail` builds one domain; `domains: {retail: 0.7, toy: 0.3}` mixes
    several, each seed index drawing its domain by weight (`domain_of`)."""

    name: str = "trajforge-build"
    domain: str | None = None
    domains: dict[str, float] | None = None
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
    limits: TextLimits = TextLimits()  # size bounds on LLM replies and tool arguments
    failure: FailureConfig = FailureConfig()
    runner: RunnerConfig = RunnerConfig()  # scheduling only: not hashed

    @field_validator("domain")
    @classmethod
    def _known_domain(cls, value: str | None) -> str | None:
        if value is not None:
            _check_known(value, "domain")
        return value

    @field_validator("domains")
    @classmethod
    def _known_weighted_domains(cls, value: dict[str, float] | None) -> dict[str, float] | None:
        if value is None:
            return None
        if not value:
            raise ValueError("domains is empty: give at least one `name: weight` (or use domain)")
        for name, weight in value.items():
            _check_known(name, "domains")
            if not weight > 0:
                raise ValueError(f"domains.{name}: weight must be > 0, got {weight} (drop it)")
        return value

    @model_validator(mode="after")
    def _one_domain_field(self) -> BuildConfig:
        if (self.domain is None) == (self.domains is None):
            raise ValueError(
                "set exactly one of `domain: <name>` and `domains: {<name>: <weight>, ...}`"
                + (" (both are set)" if self.domain is not None else " (neither is set)")
            )
        return self

    @model_validator(mode="after")
    def _attempts_need_rollout(self) -> BuildConfig:
        if self.rollout.attempts > 1 and self.mode != "rollout":
            raise ValueError(
                f"rollout.attempts: {self.rollout.attempts} needs `mode: rollout`; blueprint mode "
                "executes the gold plan, so every attempt would pass and measure nothing (set "
                "mode: rollout, or drop rollout.attempts)"
            )
        return self

    @property
    def domain_names(self) -> tuple[str, ...]:
        """Every domain this build draws from, sorted."""
        return (self.domain,) if self.domain is not None else tuple(sorted(self.domains or {}))

    def domain_of(self, index: int) -> str:
        """The domain of seed index `index`: fixed for `domain`, drawn by weight for `domains`.

        Deterministic per (build seed, index) and independent of the worker that asks, so a
        rerun or a retried bundle gives every index the same domain.
        """
        if self.domain is not None:
            return self.domain
        weights = sorted((self.domains or {}).items())
        total = sum(w for _, w in weights)
        point = derive_seed(self.seed, index, "domain") / float(1 << 63) * total
        for name, weight in weights:
            point -= weight
            if point < 0:
                return name
        return weights[-1][0]

    def config_hash(self) -> str:
        """Of what decides the rows; `runner` (how many processes) does not."""
        return content_hash(self.model_dump(mode="json", exclude={"runner"}), 16)

    def canonical(self) -> str:
        return canonical_json(self.model_dump(mode="json"))


def _check_known(name: str, field: str) -> None:
    """A built-in domain name, or a plugin path that imports now (not first on a worker)."""
    if is_plugin_path(name):
        load_domain(name)  # PluginError says what failed and how to fix it
        return
    if name not in DOMAINS:
        known = ", ".join(sorted(DOMAINS))
        raise ValueError(
            f"{field}: unknown domain {name!r}; use one of: {known} "
            "(or name your own class with a path, `package.module:Class`)"
        )


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
            msg = e["msg"].removeprefix("Value error, ")
            lines.append(f"  {loc or '(top level)'}: {msg} (got {e.get('input')!r})")
    return "\n".join(lines)


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a mapping with a repeated key (plain YAML keeps the last one,
    so a config with two `max_in_flight:` lines silently runs with the second)."""

    def construct_mapping(self, node, deep=False):  # noqa: ANN001 - PyYAML's signature
        seen: dict = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise ConfigError(
                    f"duplicate key {key!r} at line {key_node.start_mark.line + 1} (first at "
                    f"line {seen[key] + 1}); keep one of them"
                )
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


def _read_config_text(path: Path) -> str:
    if path.is_dir():
        raise ConfigError(f"config {path} is a directory; pass the YAML file inside it")
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError as err:
        raise ConfigError(f"config file not found: {path}") from err
    except PermissionError as err:
        raise ConfigError(f"config {path} is not readable (permission denied)") from err
    except UnicodeDecodeError as err:
        raise ConfigError(
            f"config {path} is not UTF-8 text (byte {err.start}); save it as UTF-8"
        ) from err


def load_config(path: str | Path) -> BuildConfig:
    """Read and validate a YAML build config; raise ConfigError with an actionable message."""
    path = Path(path)
    text = _read_config_text(path)
    try:
        raw = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as err:
        raise ConfigError(f"config {path} is not valid YAML: {err}") from err
    if not isinstance(raw, dict):
        raise ConfigError(
            f"config {path} must be a YAML mapping of fields, got {type(raw).__name__}"
        )
    wrong_numbers = number_type_errors(BuildConfig, raw)
    if wrong_numbers:
        raise ConfigError(f"invalid config {path}:\n  " + "\n  ".join(wrong_numbers))
    try:
        return BuildConfig.model_validate(raw)
    except ValidationError as err:
        raise ConfigError(format_validation_error(err, str(path))) from err
