"""The domains a finished run's records name, resolved from the run's own config.

A record carries its domain's short `name` (`task.domain == "outlet"`), while the config that
built it names a plug-in domain by import path (`domain: mypkg.domains:OutletDomain`). A
command that reads a run back (`verify`, `calibrate`, `eval`, ...) therefore resolves domains
from the run's `config.json`, which every build writes, and indexes each one under both names.
No pipelines import: `finetune` reads runs too.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trajforge.generators.tooling import Domain

#: The file every build writes into its run directory (the validated config, canonical JSON).
RUN_CONFIG_FILE = "config.json"


class UnknownDomainError(ValueError):
    """A record names a domain that is neither built in nor part of the run's config."""


def config_domain_names(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The domain names (table names or import paths) of a config dumped as JSON, sorted."""
    if config.get("domain"):
        return (str(config["domain"]),)
    return tuple(sorted(config.get("domains") or {}))


def domain_names_from_config_json(text: str) -> tuple[str, ...]:
    """`config_domain_names` of a run's `config.json` text."""
    return config_domain_names(json.loads(text))


class RunDomains:
    """Domain instances by the name records carry, for one run (or one config).

    Every configured domain is built once, up front, so a plug-in that cannot be imported
    fails before any record is read, and each is indexed under its configured name and its
    own `name`. A built-in domain a record names is found even when the run did not use it
    (a JSONL file of trajectories from elsewhere)."""

    def __init__(self, names: Iterable[str] = ()):
        # lazy, measured start-up cost: domains ~160 ms
        from trajforge.generators.domains import get_domain

        self._configured = tuple(names)
        self._domains: dict[str, Domain] = {}
        for name in self._configured:
            domain = get_domain(name)
            self._domains.setdefault(name, domain)
            self._domains.setdefault(domain.name, domain)

    @classmethod
    def of_local_run(cls, run_dir: str | Path) -> RunDomains:
        """A local run directory's domains, from its config.json; none configured (built-in
        domains only) where there is none (a folder of trajectories, a hand-made run)."""
        config_file = Path(run_dir) / RUN_CONFIG_FILE
        if not config_file.is_file():
            return cls()
        return cls(domain_names_from_config_json(config_file.read_text()))

    @property
    def configured(self) -> tuple[str, ...]:
        return self._configured

    def get(self, name: str) -> Domain:
        """The domain a record names (`task.domain`)."""
        # lazy, measured start-up cost: domains ~160 ms
        from trajforge.generators.domains import DOMAIN_PATHS, get_domain

        if name not in self._domains:
            if name not in DOMAIN_PATHS:
                raise UnknownDomainError(self._unknown_message(name))
            self._domains[name] = get_domain(name)
        return self._domains[name]

    def _unknown_message(self, name: str) -> str:
        # lazy, measured start-up cost: domains ~160 ms
        from trajforge.generators.domains import DOMAIN_PATHS

        used = ", ".join(self._configured) or "none given"
        return (
            f"records name domain {name!r}, which is neither built in "
            f"({', '.join(sorted(DOMAIN_PATHS))}) nor in the run's config ({used}); "
            "read the run directory itself, or pass --config with the build config that names "
            "its import path (domain: 'package.module:Class')"
        )

    def only(self) -> Domain:
        """The run's single domain (commands that evaluate one domain at a time)."""
        if len(self._configured) != 1:
            raise UnknownDomainError(
                f"the run mixes domains ({', '.join(self._configured)}); this command takes one "
                "domain at a time: evaluate a run built with a single `domain:`"
            )
        return self._domains[self._configured[0]]
