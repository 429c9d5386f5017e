"""The phone domain: dual control (tau2-bench telecom in miniature).

The agent manages mobile lines; the customer's phone settings are state only the customer can
change, with tools of their own (`user_tools.py`). Every task needs both: the agent fixes the
line and tells the customer what to switch on the phone.
"""

from trajforge.generators.domains.phone.domain import PhoneDomain

__all__ = ["PhoneDomain"]
