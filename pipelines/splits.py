"""Leakage-guarded split assignment by cluster, the leakage report and the gap table.

Trajectories that share a task, a task template, a configured shared entity (e.g. the same
`user_id`), or that are near-duplicates (MinHash estimate above `near_dup_threshold`) are joined
into one cluster (union-find), and a whole cluster lands in one split. The golden split is
decided per cluster by a hash of (`splits.seed`, the cluster's smallest key) alone, so a later
build with the same seed puts the same templates/tasks in golden and results stay comparable.
`golden_templates` names templates to hold out whole instead of by chance (a benchmark's
held-out task families): every cluster that holds one of them is golden.

Whole clusters chosen by hash make a small build's split a coin toss per cluster (12 tasks at
75/25 could give 5 train / 7 golden). So golden is capped (`output.splits.cap_golden`, on by
default): the clusters the hash draws for golden are taken in the order of that hash, and only
while golden still holds fewer rows than its ratio of the build, so golden never exceeds its
ratio by more than one cluster. Clusters held out by `golden_templates` are always golden and
take no part in the cap (their rows do count towards golden). A capped cluster goes to train.

The cap keeps golden frozen as far as a cap can: the hash orders the clusters, so a build whose
cap does not bind has every cluster the hash draws, i.e. every cluster of a smaller build's
golden (same seed, same clusters). Where the cap binds, a cluster capped out of this build's
golden may be drawn into a larger build's golden, after a model trained on it; the summary and
the card say so, with the capped clusters' sizes. Comparing golden results across build sizes
(benchmarks/data_value.py) needs `cap_golden: false`, which keeps the pure draw; and
`split_balance` reports a realised split far from the configured one, with its cause (the
clusters' count and sizes), in the summary and the card.

Assignment needs every record's keys in one place (a few hundred bytes per record, no text):
fine to millions of rows; it also ranks rows inside each split so shards are balanced to one row.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from fnmatch import fnmatchcase
from typing import Literal

from pydantic import Field

from trajforge.pipelines.split_figures import RowFigures
from trajforge.schemas import Record, Trajectory, derive_seed
from trajforge.verifiers.dedup import estimated_jaccard, lsh_band_keys

SplitName = Literal["train", "validation", "golden"]
SPLIT_NAMES: tuple[SplitName, ...] = ("train", "validation", "golden")
KeyKind = Literal["task", "template", "entity", "persona"]


class SplitKeys(Record):
    """What assignment needs of one record: its cluster keys, MinHash, and size per output."""

    id: str
    keys: tuple[str, ...]  # `<kind>:<value>`, e.g. `task:ab12`, `entity:user_id=u_3`
    signature: tuple[int, ...] = ()  # MinHash of the conversation (near-duplicate edges)
    bytes_by_output: dict[str, int] = Field(default_factory=dict)
    figures: RowFigures | None = None  # what the per-split figures need (split_figures.py)


class SplitPlan(Record):
    """Per record: split, cluster and rank in its split; per output and split: shard count."""

    split_of: dict[str, SplitName]
    cluster_of: dict[str, str]
    rank_of: dict[str, int]
    shards: dict[str, dict[str, int]]  # output -> split -> number of shards
    near_dup_pairs: tuple[tuple[str, str], ...] = ()
    held_out: tuple[str, ...] = ()  # clusters golden by `golden_templates`
    capped: tuple[str, ...] = ()  # clusters drawn for golden that the cap sent to train

    def shard_of(self, output: str, record_id: str) -> tuple[str, int, int]:
        split = self.split_of[record_id]
        n = self.shards[output][split]
        return split, self.rank_of[record_id] % n, n


def template_id(trajectory: Trajectory) -> str:
    """A task's template: domain, its sequence of task types and its complexity."""
    intent = trajectory.task.intent
    return f"{intent.domain}/{'+'.join(intent.task_types)}/c{intent.complexity}"


def record_keys(
    trajectory: Trajectory, group_by: Iterable[KeyKind], shared_entities: Iterable[str]
) -> tuple[str, ...]:
    """The cluster keys of one trajectory (its task id always)."""
    task = trajectory.task
    keys = {f"task:{task.id}"}
    kinds = set(group_by)
    if "template" in kinds:
        keys.add(f"template:{template_id(trajectory)}")
    if "persona" in kinds:
        keys.add(f"persona:{task.persona.id}")
    names = set(shared_entities)
    for action in task.gold_actions:
        for name, value in action.arguments.items():
            if name in names and isinstance(value, str | int):
                keys.add(f"entity:{name}={value}")
    return tuple(sorted(keys))


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def near_dup_pairs(
    items: Sequence[SplitKeys], threshold: float, bands: int, rows: int
) -> list[tuple[str, str]]:
    """Pairs whose MinHash estimate reaches `threshold`, found through shared LSH bands."""
    buckets: dict[str, list[SplitKeys]] = defaultdict(list)
    for item in items:
        if item.signature:
            for key in lsh_band_keys(item.signature, bands=bands, rows=rows):
                buckets[key].append(item)
    pairs = set()
    for members in buckets.values():
        for i, a in enumerate(members):
            for b in members[i + 1 :]:
                pair = (min(a.id, b.id), max(a.id, b.id))
                if pair not in pairs and estimated_jaccard(a.signature, b.signature) >= threshold:
                    pairs.add(pair)
    return sorted(pairs)


def clusters(items: Sequence[SplitKeys], pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """record id -> cluster representative (the cluster's smallest key)."""
    uf = _UnionFind()
    for item in items:
        for key in item.keys:
            uf.union(f"id:{item.id}", key)
    for a, b in pairs:
        uf.union(f"id:{a}", f"id:{b}")
    smallest: dict[str, str] = {}
    for item in items:
        root = uf.find(f"id:{item.id}")
        best = min(item.keys) if item.keys else item.id
        smallest[root] = min(smallest.get(root, best), best)
    return {item.id: smallest[uf.find(f"id:{item.id}")] for item in items}


def cluster_bucket(cluster: str, seed: int) -> float:
    """Where a cluster falls in [0, 1), by (seed, cluster) alone: it picks the split and orders
    the golden candidates of the cap."""
    return derive_seed(seed, "split", cluster) % 1_000_000 / 1_000_000


def split_for_cluster(cluster: str, fractions: dict[str, float], seed: int) -> SplitName:
    """Golden first (frozen by seed and cluster), then validation, then train."""
    bucket = cluster_bucket(cluster, seed)
    if bucket < fractions["golden"]:
        return "golden"
    if bucket < fractions["golden"] + fractions["validation"]:
        return "validation"
    return "train"


def capped_golden(
    drawn: dict[str, SplitName], sizes: dict[str, int], held: set[str], ratio: float, seed: int
) -> list[str]:
    """The clusters drawn for golden that the cap sends to train, in hash order.

    Golden starts with the `held` clusters (`golden_templates`, never capped) and takes the
    drawn ones in the order of their hash bucket while it holds fewer rows than `ratio` of all
    rows: it ends at most one cluster past its ratio. The order is fixed by (seed, cluster), so
    the clusters kept are the same first ones in every build where they exist."""
    allowed = ratio * sum(sizes.values())
    golden_rows = sum(sizes[c] for c in held)
    candidates = sorted(
        (c for c, split in drawn.items() if split == "golden" and c not in held),
        key=lambda c: (cluster_bucket(c, seed), c),
    )
    capped = []
    for cluster in candidates:
        if golden_rows < allowed:
            golden_rows += sizes[cluster]
        else:
            capped.append(cluster)
    return capped


def held_out_clusters(
    items: Sequence[SplitKeys], cluster_of: dict[str, str], patterns: Sequence[str]
) -> set[str]:
    """Clusters holding a template that matches one of `patterns` (fnmatch, on template ids
    such as `toy/deposit/c1`): held out whole, so no held-out template reaches training."""
    if not patterns:
        return set()
    held = set()
    for item in items:
        for key in item.keys:
            kind, _, value = key.partition(":")
            if kind == "template" and any(fnmatchcase(value, p) for p in patterns):
                held.add(cluster_of[item.id])
    return held


def shard_count(total_bytes: int, rows: int, target_bytes: int, fixed: int | None) -> int:
    """Shards for one output split: fixed when configured, else one per `target_bytes`."""
    wanted = fixed if fixed is not None else math.ceil(total_bytes / max(target_bytes, 1))
    return max(1, min(wanted, rows))


def plan_splits(
    items: Sequence[SplitKeys],
    fractions: dict[str, float],
    seed: int,
    near: tuple[float, int, int] | None,
    target_shard_bytes: int,
    train_shards: int | None,
    pairs: Sequence[tuple[str, str]] | None = None,
    golden_templates: Sequence[str] = (),
    cap_golden: bool = True,
) -> SplitPlan:
    """Assign every record a split (by cluster), a rank in it, and shard counts per output.
    Near-duplicate edges are `pairs` when given (the build finds them in bounded buckets, see
    transforms/outputs.py), else they come from the items' signatures (`near`). With
    `cap_golden`, golden ends at most one cluster past its ratio (`capped_golden`)."""
    items = sorted(items, key=lambda i: i.id)
    if pairs is not None:
        pairs = sorted({(min(a, b), max(a, b)) for a, b in pairs})
    else:
        pairs = near_dup_pairs(items, *near) if near else []
    cluster_of = clusters(items, pairs)
    held = held_out_clusters(items, cluster_of, golden_templates)
    sizes: dict[str, int] = defaultdict(int)
    for cluster in cluster_of.values():
        sizes[cluster] += 1
    drawn: dict[str, SplitName] = {
        c: "golden" if c in held else split_for_cluster(c, fractions, seed) for c in sizes
    }
    capped = capped_golden(drawn, sizes, held, fractions["golden"], seed) if cap_golden else []
    drawn.update(dict.fromkeys(capped, "train"))
    split_of: dict[str, SplitName] = {i.id: drawn[cluster_of[i.id]] for i in items}
    rank_of: dict[str, int] = {}
    counts: dict[str, int] = defaultdict(int)
    size: dict[tuple[str, str], int] = defaultdict(int)
    for item in items:
        split = split_of[item.id]
        rank_of[item.id] = counts[split]
        counts[split] += 1
        for output, n in item.bytes_by_output.items():
            size[output, split] += n
    outputs = sorted({o for o, _ in size})
    shards = {
        o: {
            s: shard_count(
                size[o, s], counts[s], target_shard_bytes, train_shards if s == "train" else None
            )
            for s in counts
        }
        for o in outputs
    }
    return SplitPlan(
        split_of=split_of,
        cluster_of=cluster_of,
        rank_of=rank_of,
        shards=shards,
        near_dup_pairs=tuple(pairs),
        held_out=tuple(sorted(held)),
        capped=tuple(capped),
    )


#: A split whose realised fraction is further than this from its configured one is reported.
SPLIT_TOLERANCE = 0.1


class SplitBalance(Record):
    """Configured against realised split fractions, and why they differ when they do."""

    configured: dict[str, float]
    realised: dict[str, float]
    rows: dict[str, int]
    clusters: int
    largest_cluster: int
    held_out_rows: int = 0
    capped_clusters: tuple[int, ...] = ()  # rows of each cluster the golden cap sent to train
    far: bool = False
    note: str | None = None  # set when the split is far from its ratio or golden was capped


def split_balance(plan: SplitPlan, fractions: dict[str, float]) -> SplitBalance:
    """How far the drawn split is from `fractions`; a `note` naming the cause when any split
    is more than `SPLIT_TOLERANCE` off (whole clusters move together, chosen by hash) or when
    the golden cap moved clusters to train."""
    total = len(plan.split_of)
    rows = {s: sum(1 for v in plan.split_of.values() if v == s) for s in SPLIT_NAMES}
    sizes: dict[str, int] = defaultdict(int)
    for cluster in plan.cluster_of.values():
        sizes[cluster] += 1
    held = set(plan.held_out)
    held_rows = sum(1 for c in plan.cluster_of.values() if c in held)
    realised = {s: round(rows[s] / total, 4) if total else 0.0 for s in SPLIT_NAMES}
    configured = {s: float(fractions[s]) for s in SPLIT_NAMES}
    far = total > 0 and any(abs(realised[s] - configured[s]) > SPLIT_TOLERANCE for s in SPLIT_NAMES)
    balance = SplitBalance(
        configured=configured,
        realised=realised,
        rows=rows,
        clusters=len(sizes),
        largest_cluster=max(sizes.values(), default=0),
        held_out_rows=held_rows,
        capped_clusters=tuple(sizes[c] for c in plan.capped),
        far=far,
    )
    notes = [_balance_note(balance)] if far else []
    if plan.capped:
        notes.append(_cap_note(balance))
    return balance.model_copy(update={"note": " ".join(notes)}) if notes else balance


def _shown(b: SplitBalance) -> tuple[str, str, str]:
    """(rows per split, configured fractions, split names) of the splits worth naming."""
    shown = [s for s in SPLIT_NAMES if b.rows[s] or b.configured[s]]
    got = " / ".join(f"{b.rows[s]} {s}" for s in shown)
    want = "/".join(f"{b.configured[s]:g}" for s in shown)
    return got, want, "/".join(shown)


def _balance_note(b: SplitBalance) -> str:
    """One sentence for the summary and the card: what was configured, what came out, why."""
    got, want, names = _shown(b)
    cause = (
        f"splits take whole leakage clusters, each drawn by hash, and these {sum(b.rows.values())}"
        f" rows form {b.clusters} clusters (largest {b.largest_cluster} rows)"
    )
    if b.held_out_rows:
        cause += f"; golden_templates hold out {b.held_out_rows} rows whatever the ratio"
    frozen = "" if b.capped_clusters else "; golden stays frozen by output.splits.seed"
    return (
        f"realised split {got} is far from the configured {want} ({names}): {cause}. "
        "More tasks, or fewer cluster keys (output.splits.group_by, shared_entities), bring it "
        f"closer{frozen}."
    )


def _cap_note(b: SplitBalance) -> str:
    """What the golden cap did, and what it costs (golden is frozen only where it did not)."""
    n = len(b.capped_clusters)
    sizes = ", ".join(str(size) for size in b.capped_clusters)
    return (
        f"Golden capped at {b.configured['golden']:g} of the rows plus one cluster: "
        f"{n} cluster{'s' if n != 1 else ''} drawn for golden ({sizes} rows) went to train; "
        "a larger build with this seed may draw them into golden, so compare golden results "
        "across build sizes only without a cap (output.splits.cap_golden: false)."
    )


def leakage_report(items: Sequence[SplitKeys], plan: SplitPlan) -> dict[str, int]:
    """Keys (per kind) and near-duplicate pairs found in more than one split; all must be 0.

    Computed from the raw keys and the final assignment, not from the clusters, so a bug in
    clustering shows up here."""
    splits_of_key: dict[str, set[str]] = defaultdict(set)
    for item in items:
        for key in item.keys:
            splits_of_key[key].add(plan.split_of[item.id])
    report = {f"{kind}_overlaps": 0 for kind in ("task", "template", "entity", "persona")}
    for key, splits in splits_of_key.items():
        if len(splits) > 1:
            report[f"{key.split(':', 1)[0]}_overlaps"] += 1
    report["near_duplicate_overlaps"] = sum(
        plan.split_of[a] != plan.split_of[b] for a, b in plan.near_dup_pairs
    )
    report["total"] = sum(report.values())
    return report
