"""Domains (data model + tools + tasks + policy), wired by one frozen table."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType

from trajforge.generators.plugins import is_plugin_path, load_domain, load_object
from trajforge.generators.tooling import Domain

#: Domain name -> the import path of its class. Add a domain by naming it here; nothing is
#: discovered implicitly. A class is imported when it is first looked up, so a retail build
#: does not pay for the search domain's graph library (networkx, ~0.2 s of start-up).
DOMAIN_PATHS = MappingProxyType(
    {
        "phone": "trajforge.generators.domains.phone:PhoneDomain",
        "retail": "trajforge.generators.domains.retail:RetailDomain",
        "search": "trajforge.generators.domains.search.domain:SearchDomain",
        "toy": "trajforge.generators.domains.toy:ToyDomain",
    }
)


class _DomainClasses(Mapping[str, type]):
    """`DOMAIN_PATHS` read as name -> class (imported on lookup; Python caches the module)."""

    def __getitem__(self, name: str) -> type:
        return load_object(DOMAIN_PATHS[name])

    def __contains__(self, name: object) -> bool:
        return name in DOMAIN_PATHS

    def __iter__(self) -> Iterator[str]:
        return iter(DOMAIN_PATHS)

    def __len__(self) -> int:
        return len(DOMAIN_PATHS)


#: Domain name -> class, for callers that read a class member (e.g. its phrasing table).
DOMAINS: Mapping[str, type] = _DomainClasses()


def get_domain(name: str) -> Domain:
    """A fresh instance of the named domain (a table name, or a `package.module:Class` path to
    a domain in the user's own package); unknown names list the known ones."""
    if is_plugin_path(name):
        return load_domain(name)
    if name not in DOMAIN_PATHS:
        known = ", ".join(sorted(DOMAIN_PATHS))
        raise KeyError(f"unknown domain '{name}'; known domains: {known}")
    return DOMAINS[name]()
