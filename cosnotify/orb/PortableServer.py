"""The ``PortableServer`` module: servants, POA policies, servant managers, and the POA.

Strategy: everything a generated ``__POA`` package or a server needs by the
mapping's names (CORBA 3.0 chapter 11). The skeleton base class, the policy
values, the POA's user exceptions and the servant-manager bases live here, so
that generated code can import them before any ORB exists; the POA and
POAManager themselves live in :mod:`cosnotify.orb.poa` and are reached here
lazily (``PortableServer.POA``). A servant knows its interface through
``_NP_RepositoryId`` and ``_NP_operations`` (set by the generated skeleton
class) and answers ``_is_a`` locally.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from cosnotify.orb.exceptions import UserException
from cosnotify.orb.interface import Operation
from cosnotify.orb.values import Enum, EnumItem

__all__ = [
    "IMPLICIT_ACTIVATION",
    "MAIN_THREAD_MODEL",
    "MULTIPLE_ID",
    "NON_RETAIN",
    "NO_IMPLICIT_ACTIVATION",
    "ORB_CTRL_MODEL",
    "PERSISTENT",
    "RETAIN",
    "SINGLE_THREAD_MODEL",
    "SYSTEM_ID",
    "TRANSIENT",
    "UNIQUE_ID",
    "USER_ID",
    "USE_ACTIVE_OBJECT_MAP_ONLY",
    "USE_DEFAULT_SERVANT",
    "USE_SERVANT_MANAGER",
    "ForwardRequest",
    "ObjectId_to_string",
    "ObjectId_to_wstring",
    "Policy",
    "Servant",
    "ServantActivator",
    "ServantLocator",
    "ServantManager",
    "string_to_ObjectId",
    "wstring_to_ObjectId",
]


class Servant:
    """Base of every skeleton class (``PortableServer::Servant``)."""

    _NP_RepositoryId: ClassVar[str] = ""
    _NP_operations: ClassVar[Mapping[str, Operation]] = {}

    def _is_a(self, repo_id: str) -> bool:
        if repo_id == "IDL:omg.org/CORBA/Object:1.0":
            return True
        return any(getattr(c, "_NP_RepositoryId", None) == repo_id for c in type(self).__mro__)

    def _non_existent(self) -> bool:
        return False

    def _default_POA(self) -> Any:
        """The RootPOA of the ORB (what ``_this`` activates in)."""
        from cosnotify.orb import poa

        return poa.default_poa()

    def _this(self) -> Any:
        """A reference to this servant (CORBA 3.0 11.3.1, implicit activation).

        Inside an upcall on this servant: the reference the request was
        made on. Otherwise, if active in its default POA: that reference;
        else the servant is activated there (RootPOA: IMPLICIT_ACTIVATION).
        """
        from cosnotify.orb import poa

        return poa.this_reference(self)


# -- policies (CORBA 3.0 11.3.7) -----------------------------------------------------------------


def _enum(repo_name: str, names: str) -> tuple[Enum, tuple[EnumItem, ...]]:
    items = tuple(EnumItem(name, i) for i, name in enumerate(names.split()))
    return Enum(f"IDL:omg.org/PortableServer/{repo_name}:1.0", items), items


ThreadPolicyValue, (ORB_CTRL_MODEL, SINGLE_THREAD_MODEL, MAIN_THREAD_MODEL) = _enum(
    "ThreadPolicyValue", "ORB_CTRL_MODEL SINGLE_THREAD_MODEL MAIN_THREAD_MODEL")
LifespanPolicyValue, (TRANSIENT, PERSISTENT) = _enum("LifespanPolicyValue", "TRANSIENT PERSISTENT")
IdUniquenessPolicyValue, (UNIQUE_ID, MULTIPLE_ID) = _enum(
    "IdUniquenessPolicyValue", "UNIQUE_ID MULTIPLE_ID")
IdAssignmentPolicyValue, (USER_ID, SYSTEM_ID) = _enum("IdAssignmentPolicyValue", "USER_ID SYSTEM_ID")
ImplicitActivationPolicyValue, (IMPLICIT_ACTIVATION, NO_IMPLICIT_ACTIVATION) = _enum(
    "ImplicitActivationPolicyValue", "IMPLICIT_ACTIVATION NO_IMPLICIT_ACTIVATION")
ServantRetentionPolicyValue, (RETAIN, NON_RETAIN) = _enum("ServantRetentionPolicyValue",
                                                          "RETAIN NON_RETAIN")
RequestProcessingPolicyValue, (USE_ACTIVE_OBJECT_MAP_ONLY, USE_DEFAULT_SERVANT,
                               USE_SERVANT_MANAGER) = _enum(
    "RequestProcessingPolicyValue",
    "USE_ACTIVE_OBJECT_MAP_ONLY USE_DEFAULT_SERVANT USE_SERVANT_MANAGER")

#: Policy type ids (CORBA 3.0 11.4).
THREAD_POLICY_ID = 16
LIFESPAN_POLICY_ID = 17
ID_UNIQUENESS_POLICY_ID = 18
ID_ASSIGNMENT_POLICY_ID = 19
IMPLICIT_ACTIVATION_POLICY_ID = 20
SERVANT_RETENTION_POLICY_ID = 21
REQUEST_PROCESSING_POLICY_ID = 22

#: Policy type -> the Enum of its values.
POLICY_VALUES: dict[int, Enum] = {
    THREAD_POLICY_ID: ThreadPolicyValue,
    LIFESPAN_POLICY_ID: LifespanPolicyValue,
    ID_UNIQUENESS_POLICY_ID: IdUniquenessPolicyValue,
    ID_ASSIGNMENT_POLICY_ID: IdAssignmentPolicyValue,
    IMPLICIT_ACTIVATION_POLICY_ID: ImplicitActivationPolicyValue,
    SERVANT_RETENTION_POLICY_ID: ServantRetentionPolicyValue,
    REQUEST_PROCESSING_POLICY_ID: RequestProcessingPolicyValue,
}


class Policy:
    """A POA policy: ``policy_type`` and its ``value`` (an item of the policy's enum)."""

    def __init__(self, policy_type: int, value: EnumItem) -> None:
        self.policy_type = policy_type
        self.value = value

    def copy(self) -> Policy:
        return Policy(self.policy_type, self.value)

    def destroy(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"<Policy {self.policy_type}={self.value._n}>"


# -- exceptions ------------------------------------------------------------------------------------


class ForwardRequest(UserException):
    """Raised by a servant manager (or servant) to redirect the client (LOCATION_FORWARD)."""

    _NP_RepositoryId = "IDL:omg.org/PortableServer/ForwardRequest:1.0"

    def __init__(self, forward_reference: Any) -> None:
        UserException.__init__(self, forward_reference)
        self.forward_reference = forward_reference


# -- servant managers (11.3.4 - 11.3.6) ------------------------------------------------------------


class ServantManager:
    """Base of servant activators and locators."""


class ServantActivator(ServantManager):
    """For RETAIN POAs: make the servant for an object id on its first request."""

    def incarnate(self, oid: bytes, adapter: Any) -> Servant:
        raise NotImplementedError

    def etherealize(self, oid: bytes, adapter: Any, serv: Servant, cleanup_in_progress: bool,
                    remaining_activations: bool) -> None:
        pass


class ServantLocator(ServantManager):
    """For NON_RETAIN POAs: find the servant for every request."""

    def preinvoke(self, oid: bytes, adapter: Any, operation: str) -> tuple[Servant, Any]:
        raise NotImplementedError

    def postinvoke(self, oid: bytes, adapter: Any, operation: str, cookie: Any,
                   serv: Servant) -> None:
        pass


# -- ObjectId conversions (the mapping's helpers) ------------------------------------------------


def ObjectId_to_string(oid: bytes) -> str:
    return oid.decode("latin-1")


def string_to_ObjectId(text: str) -> bytes:
    return text.encode("latin-1")


def ObjectId_to_wstring(oid: bytes) -> str:
    return oid.decode("utf-8")


def wstring_to_ObjectId(text: str) -> bytes:
    return text.encode("utf-8")


def __getattr__(name: str) -> Any:
    """``POA``, ``POAManager`` and ``Current`` come from :mod:`cosnotify.orb.poa` on first use."""
    if name in ("POA", "POAManager", "Current"):
        from cosnotify.orb import poa

        return getattr(poa, name)
    raise AttributeError(f"module 'PortableServer' has no attribute {name!r}")
