"""The retail domain: seeded users/products/orders, order-management tools, tasks, policy."""

from trajforge.generators.domains.retail.domain import RetailDomain

__all__ = ["RetailDomain"]
