"""Object keys, and the registry that turns a key back into (POA, object id).

Strategy: see :mod:`cosnotify.orb.poa` for the key layouts. The registry
keeps the transient POAs by their random uid and the persistent ones by
their path; a persistent key whose POA does not exist (yet) may be served
after adapter activators create it. It also remembers the POA each servant
was first activated in, which ``servant._this()`` uses, and the ORB
``_this()`` activates in by default.
"""

from __future__ import annotations

import struct
import threading
from typing import TYPE_CHECKING, Any, Protocol

from cosnotify.orb import PortableServer as PS
from cosnotify.orb.exceptions import BAD_INV_ORDER, COMPLETED_NO, OBJECT_NOT_EXIST, OMGVMCID
from cosnotify.orb.poa_manager import POAManager, _local

if TYPE_CHECKING:
    from cosnotify.orb.poa import POA

__all__ = ["AdapterRegistry", "Core", "decode_path", "default_poa", "encode_path",
           "set_default_orb", "this_reference"]

TRANSIENT_MAGIC = b"CNT\x01"
PERSISTENT_MAGIC = b"CNP\x01"
UID_SIZE = 8


class Core(Protocol):
    """What a POA needs from its ORB."""

    def make_reference(self, key: bytes, repo_id: str) -> Any: ...

    def local_key(self, obj: Any) -> bytes | None: ...


def encode_path(path: tuple[str, ...]) -> bytes:
    out = bytearray((len(path),))
    for name in path:
        raw = name.encode("utf-8")
        out += struct.pack(">H", len(raw)) + raw
    return bytes(out)


def decode_path(key: bytes, pos: int) -> tuple[tuple[str, ...], int] | None:
    """The POA path at ``key[pos:]`` and where the object id starts, or None if malformed."""
    if pos >= len(key):
        return None
    count = key[pos]
    pos += 1
    names = []
    for _ in range(count):
        if pos + 2 > len(key):
            return None
        (size,) = struct.unpack_from(">H", key, pos)
        pos += 2
        if pos + size > len(key):
            return None
        try:
            names.append(key[pos:pos + size].decode("utf-8"))
        except UnicodeDecodeError:
            return None
        pos += size
    return tuple(names), pos


class AdapterRegistry:
    """Every POA of one ORB, found by object key."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self._lock = threading.Lock()
        self._transient: dict[bytes, POA] = {}
        self._persistent: dict[tuple[str, ...], POA] = {}
        self._homes: dict[int, POA] = {}
        self.root: POA | None = None
        self.ins: POA | None = None

    def create_root(self) -> POA:
        from cosnotify.orb.poa import _DEFAULTS, POA

        policies = dict(_DEFAULTS)
        policies[PS.IMPLICIT_ACTIVATION_POLICY_ID] = PS.IMPLICIT_ACTIVATION
        root = POA(self, "RootPOA", None, POAManager("RootPOAManager"), policies)
        ins_policies = dict(_DEFAULTS)
        ins_policies[PS.LIFESPAN_POLICY_ID] = PS.PERSISTENT
        ins_policies[PS.ID_ASSIGNMENT_POLICY_ID] = PS.USER_ID
        self.ins = POA(self, "omniINSPOA", None, root.the_POAManager, ins_policies, ins=True)
        self.root = root
        self.add(root)
        return root

    def add(self, poa: POA) -> None:
        with self._lock:
            if poa.persistent:
                self._persistent[poa.path()] = poa
            else:
                self._transient[poa.uid] = poa

    def remove(self, poa: POA) -> None:
        with self._lock:
            if poa.persistent:
                if self._persistent.get(poa.path()) is poa:
                    del self._persistent[poa.path()]
            else:
                self._transient.pop(poa.uid, None)
            for key in [k for k, v in self._homes.items() if v is poa]:
                del self._homes[key]

    def note_home(self, servant: PS.Servant, poa: POA) -> None:
        with self._lock:
            self._homes.setdefault(id(servant), poa)

    def forget_home(self, servant: PS.Servant, poa: POA) -> None:
        with self._lock:
            if self._homes.get(id(servant)) is poa:
                del self._homes[id(servant)]

    def home_of(self, servant: PS.Servant) -> POA | None:
        return self._homes.get(id(servant))

    @staticmethod
    def is_structured(key: bytes) -> bool:
        return key[:4] in (TRANSIENT_MAGIC, PERSISTENT_MAGIC)

    def locate(self, key: bytes) -> tuple[POA, bytes]:
        """The POA and object id an object key names; OBJECT_NOT_EXIST if none."""
        magic = key[:4]
        if magic == TRANSIENT_MAGIC:
            poa = self._transient.get(key[4:4 + UID_SIZE])
            if poa is not None:
                return poa, key[4 + UID_SIZE:]
        elif magic == PERSISTENT_MAGIC:
            parsed = decode_path(key, 4)
            if parsed is not None:
                path, start = parsed
                poa = self._persistent.get(path) or self._activate_path(path)
                if poa is not None:
                    return poa, key[start:]
        elif self.ins is not None:
            return self.ins, key
        raise OBJECT_NOT_EXIST(OMGVMCID | 2, COMPLETED_NO, "no object adapter for this key")

    def _activate_path(self, path: tuple[str, ...]) -> POA | None:
        """Walk ``path`` from the RootPOA, letting adapter activators create missing POAs."""
        from cosnotify.orb.poa import POA

        poa = self.root
        for name in path:
            if poa is None:
                return None
            try:
                poa = poa.find_POA(name, True)
            except POA.AdapterNonExistent:
                return None
        return poa if poa is not None and poa.persistent else None


# -- the default ORB, for Servant._this ---------------------------------------------------------


_default_orb: Any = None


def set_default_orb(orb: Any) -> None:
    global _default_orb
    _default_orb = orb


def default_poa() -> POA:
    if _default_orb is None:
        raise BAD_INV_ORDER(0, COMPLETED_NO, "no ORB: call CORBA.ORB_init first")
    root: POA = _default_orb.resolve_initial_references("RootPOA")
    return root


def this_reference(servant: PS.Servant) -> Any:
    """``servant._this()`` (see :meth:`PortableServer.Servant._this`)."""
    stack = _local.stack
    if stack and stack[-1][2] is servant:
        poa, oid, _ = stack[-1]
        return poa.create_reference_with_id(oid, servant._NP_RepositoryId)
    root = default_poa()
    home = root._registry.home_of(servant)
    if home is not None and home.unique_id:
        return home.servant_to_reference(servant)
    return root.servant_to_reference(servant)
