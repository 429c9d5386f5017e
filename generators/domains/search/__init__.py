"""The search domain: a seeded fictional world graph, its documents, BM25 search tools, and
multi-hop questions checked for shortcuts."""

from trajforge.generators.domains.search.domain import SearchDomain

__all__ = ["SearchDomain"]
