"""The dedup and diversity sections of the build config (`quality.dedup`,
`quality.diversity`), validated on load like the rest of `pipelines/config.py`, which
re-exports them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Config(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class NearDupConfig(_Config):
    enabled: bool = True
    threshold: float = Field(default=0.8, gt=0, le=1)  # true shingle Jaccard of a near-dup
    num_perm: int = Field(default=128, ge=16)
    bands: int = Field(default=21, ge=1)
    rows: int = Field(default=6, ge=1)
    # A band bucket over this many records is split by the content values' MinHash, so one
    # worker holds at most ~max_bucket signatures and candidate pairs grow linearly.
    max_bucket: int = Field(default=64, ge=2, le=100_000)

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
    # Random-hyperplane LSH: records meet when one band of `rows` sign bits matches (recall
    # 0.997 at cosine 0.97 with 8 x 8); a bucket over max_bucket is split by content values.
    bands: int = Field(default=8, ge=1, le=64)
    rows: int = Field(default=8, ge=1, le=32)
    max_bucket: int = Field(default=256, ge=2, le=100_000)
    neighbours: int = Field(default=16, ge=1, le=1024)  # nearest records checked per record


class DedupConfig(_Config):
    exact: bool = True
    near: NearDupConfig = NearDupConfig()
    semantic: SemanticDupConfig = SemanticDupConfig()


class DiversityConfig(_Config):
    """The Vendi score is estimated on a deterministic sample of at most `sample_size` kept
    trajectories (embedded on one worker, so it bounds that worker's memory and time); its
    spread over `subsamples` half-size subsamples is stated next to it in the manifest."""

    sample_size: int = Field(default=1000, ge=2, le=50_000)
    subsamples: int = Field(default=20, ge=2, le=1000)
    seed: int = 0
