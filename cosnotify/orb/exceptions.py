"""CORBA exceptions: the UserException base and every standard system exception.

Strategy: one generic ``SystemException`` class carries ``minor`` and
``completed``; each standard exception is a trivial subclass generated from
the table below (CORBA 2.6 section 4.12.3, plus the later BAD_QOS,
CODESET_INCOMPATIBLE, REBIND, TIMEOUT and activity exceptions). Repository ids
follow ``IDL:omg.org/CORBA/<NAME>:1.0`` so the GIOP layer can map a reply's
exception id straight back to the class.
"""

from __future__ import annotations

import builtins
from typing import Any, ClassVar

from cosnotify.orb.values import Enum, EnumItem

__all__ = [
    "COMPLETED_MAYBE",
    "COMPLETED_NO",
    "COMPLETED_YES",
    "OMGVMCID",
    "SYSTEM_EXCEPTIONS",
    "CompletionStatus",
    "Exception",
    "SystemException",
    "UserException",
]

COMPLETED_YES = EnumItem("COMPLETED_YES", 0)
COMPLETED_NO = EnumItem("COMPLETED_NO", 1)
COMPLETED_MAYBE = EnumItem("COMPLETED_MAYBE", 2)
CompletionStatus = Enum("IDL:omg.org/CORBA/CompletionStatus:1.0",
                        (COMPLETED_YES, COMPLETED_NO, COMPLETED_MAYBE))

#: The OMG's vendor minor codeset id; standard minor codes are OMGVMCID | n.
OMGVMCID = 0x4F4D0000


class Exception(builtins.Exception):
    """Root of CORBA exceptions (``CORBA.Exception`` in the mapping)."""

    _NP_RepositoryId: ClassVar[str] = ""


class UserException(Exception):
    """Base of IDL-declared exceptions; members are instance attributes."""

    def __init__(self, *args: Any) -> None:
        builtins.Exception.__init__(self, *args)

    def _members(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if not k.startswith("__")}

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, UserException)
        return self._members() == other._members()

    __hash__ = builtins.Exception.__hash__

    def __str__(self) -> str:
        members = ", ".join(f"{k}={v!r}" for k, v in self._members().items())
        return f"{self._NP_RepositoryId or type(self).__name__}({members})"

    def __repr__(self) -> str:
        members = ", ".join(f"{k}={v!r}" for k, v in self._members().items())
        return f"{type(self).__name__}({members})"

    def __reduce__(self) -> Any:
        return (_rebuild_user_exception, (type(self), self.__dict__.copy()))


def _rebuild_user_exception(cls: type[UserException], state: dict[str, Any]) -> UserException:
    obj = cls.__new__(cls)
    builtins.Exception.__init__(obj)
    obj.__dict__.update(state)
    return obj


class SystemException(Exception):
    """A standard system exception: ``NAME(minor=0, completed=COMPLETED_NO)``.

    ``detail`` is a local, human-readable explanation; it never crosses the
    wire (GIOP carries only the id, minor and completion status).
    """

    def __init__(self, minor: int = 0, completed: EnumItem = COMPLETED_NO,
                 detail: str = "") -> None:
        builtins.Exception.__init__(self, minor, completed)
        self.minor = minor
        self.completed = completed
        self.detail = detail

    def __str__(self) -> str:
        text = f"CORBA.{type(self).__name__}(minor=0x{self.minor:x}, {self.completed._n})"
        return f"{text}: {self.detail}" if self.detail else text

    __repr__ = __str__

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, SystemException)
        return (self.minor, self.completed) == (other.minor, other.completed)

    __hash__ = builtins.Exception.__hash__

    def __reduce__(self) -> Any:
        return (type(self), (self.minor, self.completed, self.detail))


_NAMES = ["UNKNOWN", "BAD_PARAM", "NO_MEMORY", "IMP_LIMIT", "COMM_FAILURE", "INV_OBJREF", "NO_PERMISSION", "INTERNAL", "MARSHAL", "INITIALIZE", "NO_IMPLEMENT", "BAD_TYPECODE", "BAD_OPERATION", "NO_RESOURCES", "NO_RESPONSE", "PERSIST_STORE", "BAD_INV_ORDER", "TRANSIENT", "FREE_MEM", "INV_IDENT", "INV_FLAG", "INTF_REPOS", "BAD_CONTEXT", "OBJ_ADAPTER", "DATA_CONVERSION", "OBJECT_NOT_EXIST", "TRANSACTION_REQUIRED", "TRANSACTION_ROLLEDBACK", "INVALID_TRANSACTION", "INV_POLICY", "CODESET_INCOMPATIBLE", "REBIND", "TIMEOUT", "TRANSACTION_UNAVAILABLE", "TRANSACTION_MODE", "BAD_QOS", "INVALID_ACTIVITY", "ACTIVITY_COMPLETED", "ACTIVITY_REQUIRED"]

#: Repository id -> class, for every standard system exception.
SYSTEM_EXCEPTIONS: dict[str, type[SystemException]] = {}

for _name in _NAMES:
    _cls = type(_name, (SystemException,), {
        "_NP_RepositoryId": f"IDL:omg.org/CORBA/{_name}:1.0",
        "__module__": "cosnotify.orb.CORBA",
        "__doc__": f"The CORBA standard system exception {_name}.",
    })
    globals()[_name] = _cls
    SYSTEM_EXCEPTIONS[f"IDL:omg.org/CORBA/{_name}:1.0"] = _cls
    __all__.append(_name)

# Named for mypy and readers; the loop above defined them.
UNKNOWN: type[SystemException]
BAD_PARAM: type[SystemException]
NO_MEMORY: type[SystemException]
IMP_LIMIT: type[SystemException]
COMM_FAILURE: type[SystemException]
INV_OBJREF: type[SystemException]
NO_PERMISSION: type[SystemException]
INTERNAL: type[SystemException]
MARSHAL: type[SystemException]
INITIALIZE: type[SystemException]
NO_IMPLEMENT: type[SystemException]
BAD_TYPECODE: type[SystemException]
BAD_OPERATION: type[SystemException]
NO_RESOURCES: type[SystemException]
NO_RESPONSE: type[SystemException]
PERSIST_STORE: type[SystemException]
BAD_INV_ORDER: type[SystemException]
TRANSIENT: type[SystemException]
FREE_MEM: type[SystemException]
INV_IDENT: type[SystemException]
INV_FLAG: type[SystemException]
INTF_REPOS: type[SystemException]
BAD_CONTEXT: type[SystemException]
OBJ_ADAPTER: type[SystemException]
DATA_CONVERSION: type[SystemException]
OBJECT_NOT_EXIST: type[SystemException]
TRANSACTION_REQUIRED: type[SystemException]
TRANSACTION_ROLLEDBACK: type[SystemException]
INVALID_TRANSACTION: type[SystemException]
INV_POLICY: type[SystemException]
CODESET_INCOMPATIBLE: type[SystemException]
REBIND: type[SystemException]
TIMEOUT: type[SystemException]
TRANSACTION_UNAVAILABLE: type[SystemException]
TRANSACTION_MODE: type[SystemException]
BAD_QOS: type[SystemException]
INVALID_ACTIVITY: type[SystemException]
ACTIVITY_COMPLETED: type[SystemException]
ACTIVITY_REQUIRED: type[SystemException]
