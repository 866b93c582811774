"""What an OES tree refuses, in process (cosnotify/oes/corba.py maps each onto its IDL
exception of idl/CosNotifyOES.idl).

Strategy: small exceptions with structured fields, subclassing the built-in
that fits, as the seed's status codes separate them ("Processing Logic"):
a malformed request (400, "Bad request") is :class:`InvalidRequest`; a node or
contract that is not there (404, "Not found") is :class:`NodeNotFound`,
:class:`ContractNotFound` or :class:`SubscriptionNotFound`. Creating a node
that exists is :class:`NodeExists` (the seed's POST updates it instead: the
strict ``create`` is cosnotify's). Every refusal changes nothing.
"""

from __future__ import annotations

__all__ = [
    "ContractNotFound",
    "InvalidRequest",
    "NodeExists",
    "NodeNotFound",
    "OESError",
    "SubscriptionNotFound",
]


class OESError(Exception):
    """Base of the tree's refusals: ``nodepath`` (the pathname asked about, or "")
    and ``reason`` (what is wrong)."""

    def __init__(self, nodepath: str, reason: str) -> None:
        super().__init__(f"{nodepath}: {reason}" if nodepath else reason)
        self.nodepath = nodepath
        self.reason = reason


class InvalidRequest(OESError, ValueError):
    """A malformed request: a bad pathname or name, content over the limit, a bad
    attribute, a subscription-pool cycle, the root removed, a limit reached."""


class NodeNotFound(OESError, LookupError):
    """No node has this pathname (the seed's status 404; its LIST and GET say 402)."""

    def __init__(self, nodepath: str, reason: str = "no such node") -> None:
        super().__init__(nodepath, reason)


class NodeExists(OESError, ValueError):
    """``create`` of a node that already exists."""

    def __init__(self, nodepath: str) -> None:
        super().__init__(nodepath, "the node exists")


class ContractNotFound(OESError, LookupError):
    """No subscription contract has this id (never leased, cancelled or expired: "its
    subscription-contract-id is rendered meaningless")."""

    def __init__(self, contract_id: int) -> None:
        super().__init__("", f"no subscription contract {contract_id}")
        self.contract_id = contract_id


class SubscriptionNotFound(OESError, LookupError):
    """UNSUBSCRIBE of a node the contract has no subscription on."""

    def __init__(self, contract_id: int, nodepath: str) -> None:
        super().__init__(nodepath, f"contract {contract_id} has no subscription here")
        self.contract_id = contract_id
