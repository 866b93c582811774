"""``CORBA.ORB`` and ``CORBA.ORB_init``.

Strategy: ``ORB_init`` parses the standard ``-ORB`` arguments into an
:class:`ORBOptions` value and returns one ORB per ``orb_id`` (as omniORB
does). The ORB is the mapping's face (CORBA 3.0 4.2): string/object
conversion (``IOR:``, ``corbaloc:``, ``corbaname:``, 13.6.10), initial
references (``-ORBInitRef``, ``-ORBDefaultInitRef``, 4.5.3), ``run`` and
``shutdown``, and the TypeCode factory. The machinery (connections, POAs,
the server) is :class:`cosnotify.orb.runtime.ORBCore`, made with the ORB and
started lazily: nothing listens until the RootPOA is first resolved.
"""

from __future__ import annotations

import threading
from typing import Any

import attrs

from cosnotify.orb.exceptions import (
    BAD_INV_ORDER,
    BAD_PARAM,
    COMPLETED_NO,
    OBJECT_NOT_EXIST,
    OMGVMCID,
    UserException,
)
from cosnotify.orb.tcfactory import TypeCodeFactory

__all__ = ["ORB", "ORB_ID", "ORBOptions", "ORB_init", "parse_orb_args"]

ORB_ID = "omniORB4"


@attrs.frozen
class ORBOptions:
    """The ``-ORB`` arguments an ORB was initialised with."""

    endpoints: tuple[str, ...] = ()
    init_refs: tuple[tuple[str, str], ...] = ()
    default_init_ref: str = ""
    extra: tuple[tuple[str, str], ...] = ()


def parse_orb_args(argv: list[str]) -> tuple[ORBOptions, list[str]]:
    """Split ``argv`` into ORB options and the remaining (non-ORB) arguments.

    Accepts ``-ORBendPoint giop:tcp:HOST:PORT``, ``-ORBInitRef NAME=URL``,
    ``-ORBDefaultInitRef URL`` and any other ``-ORBname value`` pair.
    """
    endpoints: list[str] = []
    init_refs: list[tuple[str, str]] = []
    default_ref = ""
    extra: list[tuple[str, str]] = []
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("-ORB") and arg != "-ORB":
            if i + 1 >= len(argv):
                raise BAD_PARAM(0, COMPLETED_NO, f"{arg} needs a value")
            value = argv[i + 1]
            name = arg[4:].lower()
            if name in ("endpoint", "endpoints"):
                endpoints.append(value)
            elif name == "initref":
                key, sep, url = value.partition("=")
                if not sep or not key:
                    raise BAD_PARAM(0, COMPLETED_NO, f"-ORBInitRef wants NAME=URL, got {value!r}")
                init_refs.append((key, url))
            elif name == "defaultinitref":
                default_ref = value
            else:
                extra.append((arg[4:], value))
            i += 2
            continue
        rest.append(arg)
        i += 1
    return ORBOptions(tuple(endpoints), tuple(init_refs), default_ref, tuple(extra)), rest


class InvalidName(UserException):
    """``CORBA::ORB::InvalidName``: no initial reference by that name."""

    _NP_RepositoryId = "IDL:omg.org/CORBA/ORB/InvalidName:1.0"


_BUILT_IN = ("RootPOA", "POACurrent", "omniINSPOA")


class ORB(TypeCodeFactory):
    """The ORB pseudo-object."""

    InvalidName = InvalidName

    def __init__(self, orb_id: str, options: ORBOptions) -> None:
        from cosnotify.orb.runtime import ORBCore, Settings

        self.orb_id = orb_id
        self.options = options
        self._lock = threading.RLock()
        self._destroyed = False
        self._core = ORBCore(Settings.from_options(options.endpoints, options.extra))
        self._registered: dict[str, Any] = {}
        self._done = threading.Event()

    def __repr__(self) -> str:
        return f"<ORB {self.orb_id!r}>"

    # -- object references and strings ------------------------------------------------------
    def object_to_string(self, obj: Any) -> str:
        """``IOR:...`` for a reference (or a servant, activated implicitly); nil for None."""
        return self._core.objref_encoder(obj).to_string()

    def string_to_object(self, text: str) -> Any:
        """A reference from an ``IOR:``, ``corbaloc:`` or ``corbaname:`` string (13.6.10)."""
        from cosnotify.orb import corbaloc
        from cosnotify.orb.ior import IOR

        if not isinstance(text, str):
            raise BAD_PARAM(OMGVMCID | 7, COMPLETED_NO, f"not a string: {text!r}")
        text = text.strip()
        scheme = text.partition(":")[0].lower()
        if scheme == "ior":
            ior = IOR.from_string(text)
            return None if ior.is_nil() else self._core.objref_factory(ior, ior.type_id)
        if scheme not in ("corbaloc", "corbaname"):
            raise BAD_PARAM(OMGVMCID | 7, COMPLETED_NO, f"unknown object URL scheme in {text[:30]!r}")
        try:
            url = corbaloc.parse(text)
        except corbaloc.StringNameError as exc:  # the name of a corbaname URL
            raise BAD_PARAM(OMGVMCID | 9, COMPLETED_NO,
                            f"bad name in {text[:60]!r}: {exc}") from None
        if url.is_rir:
            key = url.key.decode("utf-8", "replace")
            target = self.resolve_initial_references(key or "NameService")
        else:
            target = self._core.objref_factory(corbaloc.ior_for(url), "")
        if scheme == "corbaloc" or not url.name:
            return target
        return _resolve_name(target, url.name)

    # -- initial references (4.5.3) -----------------------------------------------------------
    def resolve_initial_references(self, identifier: str) -> Any:
        """``RootPOA``, ``POACurrent``, ``omniINSPOA``, ``NameService``, or a registered name."""
        for name, url in self.options.init_refs:
            if name == identifier:
                return self.string_to_object(url)
        with self._lock:
            if identifier in self._registered:
                return self._registered[identifier]
        if identifier == "RootPOA":
            return self._core.root_poa()
        if identifier == "omniINSPOA":
            self._core.root_poa()
            return self._core.registry.ins
        if identifier == "POACurrent":
            from cosnotify.orb.poa import Current

            return Current()
        if self.options.default_init_ref:
            return self.string_to_object(f"{self.options.default_init_ref}/{identifier}")
        raise InvalidName()

    def register_initial_reference(self, identifier: str, obj: Any) -> None:
        if not identifier or obj is None:
            raise BAD_PARAM(OMGVMCID | 24 if obj is None else OMGVMCID | 27, COMPLETED_NO,
                            "register_initial_reference needs a name and an object")
        with self._lock:
            if identifier in self._registered or identifier in _BUILT_IN:
                raise InvalidName()
            self._registered[identifier] = obj

    def list_initial_services(self) -> list[str]:
        names = list(_BUILT_IN) + [name for name, _ in self.options.init_refs]
        with self._lock:
            names.extend(self._registered)
        return list(dict.fromkeys(names))

    # -- running and stopping -----------------------------------------------------------------
    def run(self) -> None:
        """Serve requests until ``shutdown`` (requests are served by ORB threads anyway)."""
        self._done.wait()

    def work_pending(self) -> bool:
        return False

    def perform_work(self) -> None:
        pass

    def shutdown(self, wait_for_completion: bool) -> None:
        """Stop serving (4.2.3.3); with ``wait_for_completion``, after running requests end."""
        from cosnotify.orb.poa import in_upcall

        if wait_for_completion and in_upcall():
            raise BAD_INV_ORDER(OMGVMCID | 3, COMPLETED_NO,
                                "shutdown(True) inside a request would wait for itself")
        if wait_for_completion:
            self._shutdown()
        else:
            threading.Thread(target=self._shutdown, name="orb-shutdown", daemon=True).start()

    def _shutdown(self) -> None:
        try:
            self._core.shutdown(True)
        finally:
            self._done.set()

    def destroy(self) -> None:
        """Shut down (waiting for requests) and forget this ORB; ORB_init makes a new one."""
        if not self._core.shut_down:
            self.shutdown(True)
        self._done.wait()
        with self._lock:
            self._destroyed = True
        from cosnotify.orb import adapters

        if adapters._default_orb is self:
            adapters.set_default_orb(None)


def _resolve_name(context: Any, name: str) -> Any:
    """``corbaname``: resolve ``name`` in the naming context ``context``."""
    from cosnotify.orb import corbaloc
    from cosnotify.stubs import CosNaming

    components = [CosNaming.NameComponent(i, k) for i, k in corbaloc.to_name(name)]
    naming: Any = CosNaming.NamingContext._unchecked_narrow(context)
    if naming is None:
        raise OBJECT_NOT_EXIST(0, COMPLETED_NO, "no naming context")
    return naming.resolve(components)


_orbs: dict[str, ORB] = {}
_orbs_lock = threading.Lock()


def ORB_init(argv: list[str] | None = None, orb_id: str = ORB_ID) -> Any:
    """Initialise (or return the existing) ORB named ``orb_id``.

    ORB arguments are removed from ``argv`` in place, as the mapping requires.
    """
    args = argv if argv is not None else []
    options, rest = parse_orb_args(list(args))
    if argv is not None:
        argv[:] = rest
    with _orbs_lock:
        orb = _orbs.get(orb_id)
        if orb is None or orb._destroyed:
            from cosnotify.orb import poa

            orb = ORB(orb_id, options)
            _orbs[orb_id] = orb
            poa.set_default_orb(orb)
        return orb
