"""Consumers and suppliers as the channel sees them: Python objects or object references.

Strategy: the channel calls every client by its IDL operation names, so an
in-process client is any Python object with the operations of its interface
and a remote one is an omniORBpy object reference; both are called alike.
Two questions tell them apart, and both are answered here:

- :func:`connectable`: is this client of interface X, and how is it called?
  (the connect operations raise ``CosEventChannelAdmin::TypeError`` when it
  is not one);
- :func:`narrowed`: this client as something whose operation Y of interface
  X can be called, or None (the offer and subscription relays of section
  2.6 call ``offer_change``/``subscription_change`` only on clients that have
  them).

A Python object is judged by its operations. A reference is judged by its
stub class when the class proves it, otherwise by asking the object with
``_is_a`` (a remote call, unless omniORB can answer from the type id in the
IOR). omniORB gives a reference it unmarshals the stub class of the IOR's
type id when that type is registered and derives from the parameter's static
type, and the static type's class otherwise: a sequence consumer passed where
IDL declares a structured one arrives as ``_objref_StructuredPushConsumer``.
So only a class *strictly derived* from X's stub class proves X (it was
chosen from the IOR, or the caller narrowed to it); X's own class may be no
more than the parameter's static type.

Narrowing keeps the caller's reference: omniORB's ``_narrow`` makes a new
reference, which would lose the per-reference call timeout the server layer
set (``omniORB.setClientCallTimeout``). After ``_is_a`` has said yes, the
narrower stub class is put over the same underlying omniORB reference
(``stub(ref._obj)``, as omniORB itself builds references), so calls through it
keep the timeout and the IOR (and so the dispatch lane) of the original.
"""

from __future__ import annotations

import logging
from typing import Any

import omniORB
from omniORB import CORBA

__all__ = ["connectable", "narrowed", "stub_class"]

log = logging.getLogger("cosnotify.channel")


def stub_class(repo_id: str) -> type | None:
    """The omniORB stub (object reference) class of interface ``repo_id``, if registered."""
    found = omniORB.objrefMapping.get(repo_id)
    return found if isinstance(found, type) else None


def _class_proves(client: Any, repo_id: str) -> bool:
    """Does the reference's class alone show that the object is a ``repo_id``?"""
    stub = stub_class(repo_id)
    cls = type(client)
    return stub is not None and cls is not stub and issubclass(cls, stub)


def connectable(client: Any, repo_id: str | None, method: str) -> Any:
    """``client`` as the channel will call it, if it is a ``repo_id``; else None.

    A Python object qualifies by having ``method``. A reference qualifies by
    its class, or else by ``_is_a``; a system exception on the way (the
    object is gone, unreachable or timed out) counts as no. A reference that
    qualifies but whose class lacks ``method`` (a plain ``CORBA.Object`` from
    ``string_to_object``) is seen through ``repo_id``'s stub class.
    """
    if not isinstance(client, CORBA.Object):
        return client if callable(getattr(client, method, None)) else None
    if repo_id is None or _class_proves(client, repo_id):
        return client
    return _with_stub(client, repo_id, method) if _is_a(client, repo_id) else None


def _is_a(client: Any, repo_id: str) -> bool:
    """``client._is_a(repo_id)``; a system exception (gone, unreachable, timed out) is no."""
    try:
        return bool(client._is_a(repo_id))
    except CORBA.SystemException as exc:
        log.info("cannot tell whether %r is a %s: %s", client, repo_id, exc)
        return False


def _with_stub(client: Any, repo_id: str, method: str) -> Any:
    """A reference known to be a ``repo_id``, callable by ``method`` (module docstring)."""
    if callable(getattr(client, method, None)):
        return client
    stub = stub_class(repo_id)
    return None if stub is None else stub(client._obj)


def narrowed(client: Any, repo_id: str, method: str) -> Any:
    """``client`` as something whose ``method`` (of interface ``repo_id``) can be
    called, or None if it has no such operation.

    A Python object is inspected for the method. A reference whose stub class
    has the method is used as it is; otherwise it is asked with ``_is_a`` (a
    notification-style consumer passed where the IDL says
    ``CosEventComm::PushConsumer`` arrives without ``offer_change``) and, if
    it is one, seen through ``repo_id``'s stub class (module docstring).
    """
    if client is None:
        return None
    if not isinstance(client, CORBA.Object):
        return client if callable(getattr(client, method, None)) else None
    if callable(getattr(client, method, None)):
        return client
    if stub_class(repo_id) is None:
        return None  # without a stub there is no way to call the operation
    return _with_stub(client, repo_id, method) if _is_a(client, repo_id) else None
