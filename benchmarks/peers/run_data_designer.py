"""data-designer 0.9.7: one LLM text column over a seed DataFrame, max_parallel_requests raised.

Telemetry off (NEMO_TELEMETRY_ENABLED=false, set by the driver); artifacts in a temp dir.
"""

from __future__ import annotations

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from _common import Timer, parse_args, prompts, report  # noqa: E402


def main() -> None:
    args = parse_args(default_concurrency=64)
    import pandas as pd
    from data_designer.config.column_configs import LLMTextColumnConfig
    from data_designer.config.config_builder import DataDesignerConfigBuilder
    from data_designer.config.models import (
        ChatCompletionInferenceParams,
        ModelConfig,
        ModelProvider,
    )
    from data_designer.config.seed_source_dataframe import DataFrameSeedSource
    from data_designer.interface.data_designer import DataDesigner

    model = ModelConfig(
        alias="stub",
        model=args.model,
        provider="stub",
        skip_health_check=True,
        inference_parameters=ChatCompletionInferenceParams(
            max_parallel_requests=args.concurrency, max_tokens=args.max_tokens
        ),
    )
    builder = DataDesignerConfigBuilder(model_configs=[model])
    builder.with_seed_dataset(
        DataFrameSeedSource(df=pd.DataFrame({"instruction": prompts(args.n)}))
    )
    builder.add_column(
        LLMTextColumnConfig(name="generation", prompt="{{ instruction }}", model_alias="stub")
    )
    designer = DataDesigner(
        artifact_path=tempfile.mkdtemp(prefix="data-designer-"),
        model_providers=[ModelProvider(name="stub", endpoint=args.base_url, api_key="stub")],
    )
    with Timer() as timer:
        results = designer.create(builder, num_records=args.n)
    frame = results.load_dataset()
    ok = int(frame["generation"].notna().sum())
    report("data-designer", args, ok, timer, max_parallel_requests=args.concurrency)


if __name__ == "__main__":
    main()
