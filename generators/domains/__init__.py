"""Domains (data model + tools + tasks + policy), wired by one frozen table."""

from __future__ import annotations

from types import MappingProxyType

from trajforge.generators.domains.retail import RetailDomain
from trajforge.generators.domains.search import SearchDomain
from trajforge.generators.domains.toy import ToyDomain
from trajforge.generators.plugins import is_plugin_path, load_domain
from trajforge.generators.tooling import Domain

#: Domain name -> class. Add a domain by importing it here; nothing is discovered implicitly.
DOMAINS = MappingProxyType({"retail": RetailDomain, "search": SearchDomain, "toy": ToyDomain})


def get_domain(name: str) -> Domain:
    """A fresh instance of the named domain (a table name, or a `package.module:Class` path to
    a domain in the user's own package); unknown names list the known ones."""
    if is_plugin_path(name):
        return load_domain(name)
    try:
        cls = DOMAINS[name]
    except KeyError:
        known = ", ".join(sorted(DOMAINS))
        raise KeyError(f"unknown domain '{name}'; known domains: {known}") from None
    return cls()
