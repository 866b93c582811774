"""What a subscription contract's proxies push to: the contract's rules of delivery.

Strategy: a contract (contracts.py) has up to two structured push proxies in
its consumer admin, a best-effort one and a guaranteed one; both push to a
:class:`Relay` of the contract, which pushes to the contract's consumer and
keeps the seed's rules the channel does not know (Subscription Contracts,
SUBSCRIBE, Quality of Service):

- "only one notification will be delivered for a given contract, regardless
  of how many subscriptions placed with that contract may absorb the
  notification": the best-effort relay skips a notification a guaranteed
  subscription of the contract took when it was routed
  (``ContractBook.covered``);
- "a subscription contract immediately and implicitly expires upon failure to
  deliver a notification", unless leased keep-alive: then a best-effort
  notification that cannot be delivered is discarded and a guaranteed one
  retried;
- the consumer is told once, when the contract ends; a proxy destroyed by
  someone else (with its admin, say) ends the contract.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from omniORB import CORBA

import CosEventComm

if TYPE_CHECKING:
    from cosnotify.oes.contracts import ContractBook, _Contract

__all__ = ["Relay"]

log = logging.getLogger("cosnotify.oes")

_GONE = (CosEventComm.Disconnected, CORBA.OBJECT_NOT_EXIST)


class Relay:
    """What a contract's proxy pushes to (module docstring)."""

    def __init__(self, book: ContractBook, contract: _Contract, guaranteed: bool) -> None:
        self._book = book
        self._contract = contract
        self._guaranteed = guaranteed

    def push_structured_event(self, event: Any) -> None:
        contract = self._contract
        if contract.ended:
            raise CosEventComm.Disconnected()
        if not self._guaranteed and self._book.covered(contract, event):
            return  # the contract's guaranteed proxy took it too: one notification
        try:
            contract.consumer.push_structured_event(event)
        except Exception as exc:
            if not contract.keep_alive:
                # "a subscription contract immediately and implicitly expires upon
                # failure to deliver a notification"
                self._book.delivery_failed(contract, exc)
                raise CosEventComm.Disconnected() from exc
            if self._guaranteed:
                if isinstance(exc, _GONE):  # kept for a renewal naming a new consumer
                    raise CORBA.TRANSIENT(0, CORBA.COMPLETED_NO) from exc
                raise
            log.info("contract %d: a notification could not be delivered (%s): discarded",
                     contract.id, exc)

    def disconnect_structured_push_consumer(self) -> None:
        """A proxy ends: the consumer is told once. The tree drops its own proxies without
        telling, so a live contract hears this only when someone else destroyed its
        admin or proxy (they are the channel's, in ``get_all_consumeradmins``): it can
        no longer deliver, and ends."""
        contract = self._contract
        if contract.told:
            return
        contract.told = True
        if not contract.ended:
            self._book.channel_side_gone(contract)
        disconnect = getattr(contract.consumer, "disconnect_structured_push_consumer", None)
        if disconnect is not None:
            try:
                disconnect()
            except Exception as exc:  # noqa: BLE001 - the client may be gone already
                log.debug("contract %d: telling its consumer failed: %s", contract.id, exc)
