"""The generation stages' data caches, released when a process is past generating (issue 30).

Why: generating a task fills bounded `lru_cache`s of pure functions (seeded worlds, canonical
JSON key bytes, normalised texts, extracted values, span patterns): at 1,600 blueprint tasks
~70 MB of objects (~700,000 of the process's 1.8 million), sized by their `maxsize`, not by the
build, and still held when the build writes its shards, where a one-process build's memory
peaks (a row group of the largest shard being converted to Arrow). Cleared there, a traced
1,600-task build's writer stage peaked at 578 MB instead of 637-641 (benchmarks/README.md).

Each cache is a pure function's: clearing it changes no output, a later call only computes
again. Only modules this process has already imported are touched (nothing is imported to
clear it). The list is explicit (`CACHES`); `tests/generators/test_data_caches.py` checks each
entry still names a cached function.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

#: module -> its cached pure functions that grow with the tasks generated
CACHES: dict[str, tuple[str, ...]] = {
    "trajforge.schemas.base": ("_key_bytes",),
    "trajforge.generators.values": (
        "normalise",
        "_squash",
        "_whole_numbers",
        "_numbers",
        "_extract_values",
    ),
    "trajforge.generators.value_grammar": ("addresses_in",),
    "trajforge.generators.bare_turns": ("_span_pattern",),
    "trajforge.generators.domains.retail.domain": ("_seeded_world", "_patched_world"),
    "trajforge.generators.domains.search.data_model": ("world_for",),
    "trajforge.generators.domains.search.names": ("name_tokens", "full_names"),
    "trajforge.generators.domains.search.tasks": ("synthesized_for",),
    "trajforge.pipelines.transforms.dedup": ("text_signature",),  # dedup's, for the split
}


def loaded_caches() -> Iterator[Any]:
    """The cached functions of `CACHES` whose module is imported in this process."""
    for module_name, names in CACHES.items():
        module = sys.modules.get(module_name)
        if module is None:
            continue
        for name in names:
            yield getattr(module, name)


def release_generation_caches() -> int:
    """Empty every loaded cache of `CACHES`; how many entries went."""
    dropped = 0
    for cached in loaded_caches():
        dropped += cached.cache_info().currsize
        cached.cache_clear()
    return dropped
