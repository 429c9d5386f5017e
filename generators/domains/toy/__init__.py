"""The toy domain: four seeded bank accounts, four tools, two task types (see README)."""

from trajforge.generators.domains.toy.domain import ToyDomain

__all__ = ["ToyDomain"]
