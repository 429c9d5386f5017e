"""Per-process resources for the stage DoFns: the domain, the gates and filters, one LLM client
per role and the objects built on them (judge, agent and user factories).

A `StageResources` is small and picklable (it carries only the config and the run directory);
`setup()`, called from DoFn.setup() on the worker, builds the heavy objects once per DoFn
instance (see pipelines/builders.py); plugin domains and filters are imported there, so they
resolve on remote workers too. LLM clients are shared by every DoFn instance in a process (one
connection pool, one local model, one cache connection), which is what lets one worker keep
hundreds of calls in flight.
"""

from __future__ import annotations

import functools
import json
import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from trajforge.generators.domains import get_domain
from trajforge.generators.llm.accounting import AccountingLLM
from trajforge.generators.llm.cache import ResponseCache
from trajforge.generators.llm.factory import BackendConfig, build_client, model_name
from trajforge.generators.tooling import Domain
from trajforge.pipelines import ownership
from trajforge.pipelines.builders import Gates, RoleBuilders, build_gates, build_roles
from trajforge.pipelines.config import BuildConfig
from trajforge.pipelines.gc_tuning import tune_gc
from trajforge.verifiers.protocol import FilterContext

if TYPE_CHECKING:
    from trajforge.generators.llm.cache import ResponseStore

#: The run directory's cache folder (run_dir.CACHE_DIR: kept by --resume and --overwrite).
CACHE_DIR = "cache"

_LOCK = threading.Lock()
#: (config hash, cache path) -> RoleClients. The one piece of process state: the shared clients.
_PROCESS_CLIENTS: dict[tuple[str, str], RoleClients] = {}


ROLES = ("agent", "user", "judge", "baseline")


@dataclass(frozen=True)
class RoleClients:
    """One accounting client per role; roles bound to the same backend share its connections,
    cache and concurrency limit (so `concurrency.calls_limit` holds at that endpoint across every
    stage of the process) but keep their own tallies, which become the manifest's per-role
    counters."""

    agent: AccountingLLM
    user: AccountingLLM
    judge: AccountingLLM
    baseline: AccountingLLM  # the no-tool baseline, on the judge's backend
    models: dict[str, str]  # role -> model name, for provenance

    def by_role(self) -> dict[str, AccountingLLM]:
        return {role: getattr(self, role) for role in ROLES}


@dataclass(frozen=True)
class OwnedWriter:
    """Writes a cache file as the run's own (pipelines/ownership.py: recorded in the ledger
    before it is created, written under a temporary name and renamed), so --overwrite and
    --clear-cache find every response file and a reader never sees half of one."""

    run_dir: str
    rel_root: str  # the cache's folder, relative to the run directory

    def __call__(self, rel: str, data: bytes) -> None:
        ownership.write_bytes(self.run_dir, f"{self.rel_root}/{rel}", data)


@dataclass(frozen=True)
class CacheLocation:
    """Where a run's response cache lives: always inside the run directory, so `--resume`
    (and every worker of the run) answers finished calls for free."""

    run_dir: str
    store: Literal["sqlite", "files"]
    path: str  # the SQLite file, or the root of the per-response files

    def open(self) -> ResponseStore:
        # Here, not at the top: the file cache imports Beam's FileSystems (~0.7 s of CPU,
        # pipelines/files.py), which `trajforge verify` and `calibrate` (importing this module
        # for the shared clients) never need; only a build opens a response cache.
        from trajforge.generators.llm.file_cache import FileResponseCache

        if self.store == "files":
            return FileResponseCache(self.path, OwnedWriter(self.run_dir, FILES_CACHE))
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        return ResponseCache(self.path)


#: The per-response files' folder inside the run directory.
FILES_CACHE = f"{CACHE_DIR}/responses"


def cache_location(run_dir: str, store: str = "auto") -> CacheLocation:
    """A SQLite file in a local run directory; one file per response (Beam FileSystems) under
    a remote one, which no SQLite file can live in and which every worker shares (a cache on
    each worker's disk made `--resume` after a killed remote job pay for every call again)."""
    if store == "files" or "://" in run_dir:  # URL paths join with "/" (gs://b/run/cache/...)
        return CacheLocation(run_dir, "files", f"{run_dir.rstrip('/')}/{FILES_CACHE}")
    return CacheLocation(run_dir, "sqlite", os.path.join(run_dir, CACHE_DIR, "responses.sqlite"))


def per_process(limit: int, processes: int) -> int:
    """A build-wide limit's share per worker process (rounded up, at least 1). Limits decide
    only scheduling, never a row (seeds come from record ids), so the config and its hash
    keep the configured values."""
    return max(1, -(-limit // processes))


def _build_role_clients(
    config: BuildConfig, cache: CacheLocation | None, processes: int = 1
) -> RoleClients:
    """One client per backend; `processes` local worker processes share the endpoint limit."""
    store = cache.open() if cache is not None else None
    built: dict[str, AccountingLLM] = {}

    def client_for(cfg: BackendConfig) -> AccountingLLM:
        key = cfg.model_dump_json()
        if key not in built:  # roles bound to the same backend share one client
            built[key] = build_client(
                cfg,
                cache=store,
                max_in_flight=per_process(config.concurrency.calls_limit, processes),
                limits=config.limits,
            )
        return built[key].for_role()

    roles = config.roles
    user_cfg = roles.user or roles.agent
    judge_cfg = roles.judge or roles.agent
    return RoleClients(
        agent=client_for(roles.agent),
        user=client_for(user_cfg),
        judge=client_for(judge_cfg),
        baseline=client_for(judge_cfg),
        models={
            "agent": model_name(roles.agent),
            "user": model_name(user_cfg),
            "judge": model_name(judge_cfg),
        },
    )


def shared_role_clients(config: BuildConfig, run_dir: str, processes: int = 1) -> RoleClients:
    cache = cache_location(run_dir, config.runner.cache_store) if config.cache.enabled else None
    key = (config.config_hash(), cache.path if cache else "", processes)
    with _LOCK:
        if key not in _PROCESS_CLIENTS:
            if cache is not None and cache.store == "sqlite":  # the files record themselves
                _record_cache(run_dir, cache.path)
            _PROCESS_CLIENTS[key] = _build_role_clients(config, cache, processes)
        return _PROCESS_CLIENTS[key]


#: The files sqlite makes beside its database (WAL mode, and a rollback journal on fallback).
SQLITE_SIDE_FILES = ("", "-wal", "-shm", "-journal")


def _record_cache(run_dir: str, cache_path: str) -> None:
    """The cache is the run's: its folder and sqlite's files are recorded before sqlite
    creates them (sqlite writes them itself, so the names are recorded here, by their owner)."""
    rel = os.path.relpath(cache_path, run_dir).replace(os.sep, "/")
    ownership.ensure_dir(run_dir, rel.rsplit("/", 1)[0])
    ownership.record(run_dir, [rel + side for side in SQLITE_SIDE_FILES])


def forget_process_clients(run_dir: str) -> None:
    """Drop this process's clients whose cache lives in `run_dir` (its cache was deleted: an
    open sqlite connection would keep answering from the unlinked file)."""
    paths = {cache_location(run_dir, store).path for store in ("auto", "files")}
    with _LOCK:
        for key in [k for k in _PROCESS_CLIENTS if k[1] in paths]:
            del _PROCESS_CLIENTS[key]


def domain_tools_json(domain: Domain) -> str:
    """The domain's tools in OpenAI shape as JSON: each exported row's `tools_json`, made once
    per domain in `StageResources.setup` instead of once per row."""
    return json.dumps([s.openai_schema() for s in domain.toolbox.specs], sort_keys=True)


class StageResources:
    """What a stage needs at run time; cheap to pickle, heavy parts built in setup()."""

    def __init__(
        self, config: BuildConfig, run_dir: str, needs_llm: bool = False, processes: int = 1
    ):
        self.config = config
        self.processes = processes  # local worker processes sharing the endpoint limit
        self.run_dir = run_dir
        self.needs_llm = needs_llm
        self.domains: dict[str, Domain] = {}
        self.contexts: dict[str, FilterContext] = {}
        self._tools_json: dict[str, str] = {}
        self.gates: Gates | None = None
        self.clients: RoleClients | None = None
        self.roles: RoleBuilders | None = None

    def setup(self) -> None:
        tune_gc()  # a Beam worker process runs no CLI: its stages set the thresholds

        for name in self.config.domain_names:
            if name not in self.domains:
                domain = get_domain(name)
                # A plugin path resolves to a domain whose tasks carry its short `name`.
                for key in (name, domain.name):
                    self.domains.setdefault(key, domain)
                    self.contexts.setdefault(key, FilterContext(domain=domain))
                    self._tools_json.setdefault(key, domain_tools_json(domain))
        if self.gates is None:
            self.gates = build_gates(self.config)
        if self.needs_llm and self.clients is None:
            self.clients = shared_role_clients(self.config, self.run_dir, self.processes)
            self.roles = build_roles(self.config, self.clients)

    @functools.cached_property
    def config_hash(self) -> str:
        """The build config's hash (a dump and a content hash): once, not once per row."""
        return self.config.config_hash()

    def domain_for(self, name: str) -> Domain:
        """The named domain of this build (each record carries its own: `task.domain`)."""
        try:
            return self.domains[name]
        except KeyError:
            known = ", ".join(sorted(self.domains)) or "none (setup() not called)"
            raise KeyError(f"domain {name!r} is not part of this build; it has: {known}") from None

    def context_for(self, name: str) -> FilterContext:
        """What filters may consult about the named domain (its policy, tools, vocabulary)."""
        self.domain_for(name)  # the same clear error for an unknown name
        return self.contexts[name]

    def tools_json_for(self, name: str) -> str:
        """The named domain's `tools_json` column (`domain_tools_json`, made in setup)."""
        self.domain_for(name)  # the same clear error for an unknown name
        return self._tools_json[name]

    def __getstate__(self) -> dict[str, Any]:
        # `processes` travels to the worker: each worker process takes only its share of the
        # endpoint limit.
        return {
            "config": self.config,
            "run_dir": self.run_dir,
            "needs_llm": self.needs_llm,
            "processes": self.processes,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)
