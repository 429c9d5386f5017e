"""The length of `json.dumps(value, default=str)` without writing out shared parts twice.

Why: the split plan sizes each output's shards from the bytes of its rows (`split_keys`), and
the `step_prefix` view repeats a conversation's prefix in every row (row k holds messages
0..k-1): dumping each row whole wrote the same messages again and again, ~190 KB of JSON per
4-turn retail record, quadratic in the conversation (issue 30). The length of a JSON object or
array is fixed by its parts' lengths (`{`, `}`, `", "` between items, `": "` after each key:
`json.dumps`' default separators), so each shared message is dumped once and its length reused
by identity. The value is exactly `len(json.dumps(value, default=str))`
(`tests/pipelines/test_json_size.py`), so shard counts are unchanged.
"""

from __future__ import annotations

import json
from typing import Any

#: Containers this deep (the row is depth 0, its list values 1, their items 2) are dumped
#: whole: below a row's lists nothing is shared, and one C-level dump beats walking it.
WHOLE_DEPTH = 2


def _dumped(value: Any) -> int:
    return len(json.dumps(value, default=str))


#: id -> (the container, its length): holding the container keeps its id from being reused
Seen = dict[int, tuple[Any, int]]


def json_length(value: Any, seen: Seen, depth: int = 0) -> int:
    """`len(json.dumps(value, default=str))`. `seen`: the containers already measured (one
    record's rows share one), by identity."""
    if not isinstance(value, _CONTAINER):
        return _dumped(value)
    known = seen.get(id(value))
    if known is not None:
        return known[1]
    if depth >= WHOLE_DEPTH:
        size = _dumped(value)
    elif isinstance(value, dict):
        size = _object_length(value, seen, depth)
    else:
        size = _array_length(value, seen, depth)
    seen[id(value)] = (value, size)
    return size


_CONTAINER = dict | list | tuple


def _items(dumped: int, count: int) -> int:
    """The items' own lengths in a dumped array or object of `count` items: without the
    brackets and the `", "` between them."""
    return dumped - 2 - 2 * max(count - 1, 0)


def _array_length(value: list | tuple, seen: Seen, depth: int) -> int:
    """ "[" + ", ".join(items) + "]": the containers measured one by one (a shared one once),
    the other items in one dump (one call instead of one per item)."""
    if not value:
        return 2
    plain = [v for v in value if not isinstance(v, _CONTAINER)]
    size = _items(_dumped(plain), len(plain)) if plain else 0
    size += sum(json_length(v, seen, depth + 1) for v in value if isinstance(v, _CONTAINER))
    return 2 + size + 2 * (len(value) - 1)


def _object_length(value: dict, seen: Seen, depth: int) -> int:
    """ "{" + ", ".join(key + ": " + value) + "}", the plain values in one dump as in
    `_array_length`; a key that is not a string (json converts it) sends the whole object to
    `json.dumps`."""
    if not value:
        return 2
    if not all(isinstance(k, str) for k in value):
        return _dumped(value)
    plain = {k: v for k, v in value.items() if not isinstance(v, _CONTAINER)}
    size = _items(_dumped(plain), len(plain)) if plain else 0
    size += sum(
        _dumped(k) + 2 + json_length(v, seen, depth + 1)
        for k, v in value.items()
        if isinstance(v, _CONTAINER)
    )
    return 2 + size + 2 * (len(value) - 1)
