"""Server-side request dispatch: from a GIOP Request to a servant method and back.

Strategy: :class:`Dispatcher` turns one received request (a general
``Request`` or a hot-path :class:`~cosnotify.orb.fastpath.FastRequest`) into
the octets of its Reply (or None for a oneway), and one ``LocateRequest``
into its ``LocateReply``. Replies never carry service contexts, so their
body starts at octet 24 in every GIOP version and is built straight into
one buffer (:func:`cosnotify.orb.fastpath.reply_prefix`). It finds the POA and object by key
(:class:`cosnotify.orb.poa.AdapterRegistry`), passes the POA manager's gate,
finds the servant (active object map, servant manager or default servant),
demarshals the in and inout arguments by the skeleton's
``_NP_operations[op]`` descriptor, calls the servant method of the same name
(``_get_x``/``_set_x`` for attributes; a Python keyword gets a leading ``_``),
splits the return value with ``Operation.unpack_result`` and marshals the
result and out values. The pseudo-operations ``_is_a``, ``_non_existent``
(and GIOP 1.0's ``_not_existent``) and ``_repository_id`` are answered here.

This is the error boundary of an upcall (CORBA 3.0 15.4.3): a declared user
exception becomes a USER_EXCEPTION reply; an undeclared one ``UNKNOWN``; a
CORBA system exception a SYSTEM_EXCEPTION reply with its own minor code and
completion status; ``PortableServer.ForwardRequest`` a LOCATION_FORWARD
reply; any other Python exception is logged and becomes ``UNKNOWN``
(COMPLETED_MAYBE). Malformed arguments are ``MARSHAL`` (COMPLETED_NO).
"""

from __future__ import annotations

import keyword
import logging
import struct
from collections.abc import Callable
from typing import Any

from cosnotify.orb import cdr_compile
from cosnotify.orb import poa as poa_module
from cosnotify.orb.cdr import Encoder, translate_encode_error
from cosnotify.orb.cdr_core import Codec, DecodeState, EncodeState
from cosnotify.orb.exceptions import (
    BAD_OPERATION,
    BAD_PARAM,
    COMPLETED_MAYBE,
    COMPLETED_NO,
    COMPLETED_YES,
    NO_IMPLEMENT,
    OBJECT_NOT_EXIST,
    OMGVMCID,
    UNKNOWN,
    SystemException,
    UserException,
)
from cosnotify.orb.fastpath import FastRequest, finish_reply, plan_for, reply_prefix
from cosnotify.orb.giop_messages import (
    LocateReply,
    LocateRequest,
    LocateStatus,
    ReplyStatus,
    Request,
    body_offset,
)
from cosnotify.orb.interface import IN, Operation, Param, exception_typecode
from cosnotify.orb.ior import IOR, ior_bytes, write_ior
from cosnotify.orb.poa_manager import _local as upcalls
from cosnotify.orb.PortableServer import ForwardRequest, Servant
from cosnotify.orb.typecode import TC_boolean, TC_string

__all__ = ["PSEUDO_OPERATIONS", "Dispatcher", "method_name"]

log = logging.getLogger("cosnotify.orb")

_IS_A = Operation("_is_a", (Param("logical_type_id", IN, TC_string),), TC_boolean)
_NON_EXISTENT = Operation("_non_existent", (), TC_boolean)
_REPOSITORY_ID = Operation("_repository_id", (), TC_string)
#: The CORBA::Object pseudo-operations every servant answers (15.4.2.1).
PSEUDO_OPERATIONS: dict[str, Operation] = {
    "_is_a": _IS_A, "_non_existent": _NON_EXISTENT, "_not_existent": _NON_EXISTENT,
    "_repository_id": _REPOSITORY_ID,
}
_UNLISTED_USER_EXCEPTION = OMGVMCID | 1
_UNRECOGNISED_OPERATION = OMGVMCID | 2  # BAD_OPERATION (omniORB uses its own minor)
_UNKNOWN_PYTHON_EXCEPTION = OMGVMCID | 2

_method_names: dict[tuple[type, str], str] = {}


def method_name(cls: type, operation: str) -> str:
    """The Python method implementing ``operation`` (keywords get a leading ``_``)."""
    key = (cls, operation)
    found = _method_names.get(key)
    if found is None:
        found = "_" + operation if keyword.iskeyword(operation) else operation
        _method_names[key] = found
    return found


class Incoming:
    """The parts of a received request that dispatch needs, from either parser."""

    __slots__ = ("data", "little_endian", "object_key", "operation", "pos", "request_id",
                 "response_expected", "version")

    def __init__(self, request: Request) -> None:
        self.request_id = request.request_id
        self.response_expected = request.response_expected
        self.object_key = request.object_key
        self.operation = request.operation
        self.version = request.version
        self.little_endian = request.little_endian
        # index 0 of the data must sit at an 8-aligned stream offset
        shift = request.body_offset % 8
        self.data, self.pos = bytes(shift) + request.body, shift


_BINARY = struct.Struct("<II")


class Dispatcher:
    """Runs requests against the servants of one ORB."""

    def __init__(self, registry: poa_module.AdapterRegistry, *,
                 objref_factory: Callable[[Any, str], Any],
                 objref_encoder: Callable[[Any], Any],
                 max_depth: int) -> None:
        self.registry = registry
        self.objref_factory = objref_factory
        self.objref_encoder = objref_encoder
        self.max_depth = max_depth
        self._methods: dict[tuple[type, str, int, int], tuple[Operation, str, Any, Any] | None] = {}

    # -- requests -----------------------------------------------------------------------------
    def handle_request(self, request: Request | FastRequest, codec: Codec, reply_codec: Codec
                       ) -> bytearray | None:
        """The octets of the reply to ``request`` (None for a oneway); never raises."""
        incoming: Any = request if type(request) is FastRequest else Incoming(request)  # type: ignore[arg-type]
        try:
            return self._handle(incoming, codec, reply_codec)
        except SystemException as exc:
            return self._system(incoming, exc)
        except ForwardRequest as forward:
            return self._forward(incoming, reply_codec, forward)
        except Exception:
            log.exception("unexpected error dispatching %r", incoming.operation)
            return self._system(incoming, UNKNOWN(_UNKNOWN_PYTHON_EXCEPTION, COMPLETED_MAYBE))

    def system_reply(self, request: Request | FastRequest, exc: SystemException) -> bytearray | None:
        """The SYSTEM_EXCEPTION reply to ``request``."""
        return self._system(request if type(request) is FastRequest else Incoming(request), exc)  # type: ignore[arg-type]

    def _handle(self, request: Any, codec: Codec, reply_codec: Codec) -> bytearray | None:
        key = request.object_key
        if key is None:
            raise OBJECT_NOT_EXIST(OMGVMCID | 2, COMPLETED_NO, "no object key in the target")
        name = request.operation
        try:
            poa, oid = self.registry.locate(key)
        except OBJECT_NOT_EXIST:
            if name in ("_non_existent", "_not_existent"):
                return self._reply(request, reply_codec, _NON_EXISTENT, True)
            raise
        manager = poa.the_POAManager
        manager.enter()
        try:
            try:
                servant, cookie = poa.locate_servant(oid, name)
            except OBJECT_NOT_EXIST:
                if name in ("_non_existent", "_not_existent"):
                    return self._reply(request, reply_codec, _NON_EXISTENT, True)
                raise
            try:
                return self._upcall(request, codec, reply_codec, poa, oid, servant)
            finally:
                poa.release_servant(oid, name, servant, cookie)
        finally:
            manager.leave()

    def _entry(self, servant: Servant, name: str, codec: Codec, reply_codec: Codec
               ) -> tuple[Operation, str, Any, Any] | None:
        """(operation, method name, request plan, reply plan), cached per servant class."""
        key = (type(servant), name, id(codec), id(reply_codec))
        try:
            return self._methods[key]
        except KeyError:
            pass
        operation = servant._NP_operations.get(name)
        found = None if operation is None else (
            operation, method_name(type(servant), name), plan_for(operation, codec),
            plan_for(operation, reply_codec))
        if len(self._methods) > 10000:
            self._methods.clear()
        self._methods[key] = found
        return found

    def _upcall(self, request: Any, codec: Codec, reply_codec: Codec,
                poa: poa_module.POA, oid: bytes, servant: Servant) -> bytearray | None:
        name = request.operation
        found = self._entry(servant, name, codec, reply_codec)
        if found is None:
            operation = PSEUDO_OPERATIONS.get(name)
            if operation is None:
                if name in ("_interface", "_get_component", "_component"):
                    raise NO_IMPLEMENT(OMGVMCID | 3, COMPLETED_NO, f"{name} is not supported")
                raise BAD_OPERATION(_UNRECOGNISED_OPERATION, COMPLETED_NO,
                                    f"{type(servant).__name__} has no operation {name!r}")
            plan = plan_for(operation, codec)
            args, _ = plan.decode(request.data, request.pos, plan.in_decoders,
                                  DecodeState(self.objref_factory, self.max_depth))
            if operation is _IS_A:
                value: Any = servant._is_a(args[0])
            elif operation is _NON_EXISTENT:
                value = servant._non_existent()
            else:
                value = servant._NP_RepositoryId
            return self._reply(request, reply_codec, operation, value)
        operation, attribute, plan, reply_plan = found
        args, _ = plan.decode(request.data, request.pos, plan.in_decoders,
                              DecodeState(self.objref_factory, self.max_depth))
        method = getattr(servant, attribute, None)
        if method is None:
            raise NO_IMPLEMENT(OMGVMCID | 3, COMPLETED_NO,
                               f"{type(servant).__name__} does not implement {name!r}")
        stack = upcalls.stack
        stack.append((poa, oid, servant))
        try:
            value = poa.run_upcall(method, args)
        except UserException as exc:
            if isinstance(exc, ForwardRequest):
                raise
            if not request.response_expected:
                return None
            return self._user(request, reply_codec, operation, exc)
        finally:
            stack.pop()
        if not request.response_expected:
            return None
        return self._reply(request, reply_codec, operation, value, reply_plan)

    # -- replies ------------------------------------------------------------------------------
    def _reply(self, request: Any, codec: Codec, operation: Operation, value: Any,
               plan: Any = None) -> bytearray | None:
        if not request.response_expected:
            return None
        if plan is None:
            plan = plan_for(operation, codec)
        buffer = reply_prefix(request.request_id, ReplyStatus.NO_EXCEPTION, request.version,
                              codec.little_endian)
        try:
            values = plan.unpack(value)
            if len(values) != len(plan.out_types):
                raise BAD_PARAM(OMGVMCID | 41, COMPLETED_YES,
                                f"{operation.name} returned {len(values)} values, "
                                f"expected {len(plan.out_types)}")
            plan.encode(buffer, plan.out_encoders, plan.out_types, values,
                        EncodeState(self.objref_encoder, self.max_depth))
        except SystemException as exc:
            log.warning("cannot marshal the result of %s: %s", operation.name, exc)
            return self._system(request, type(exc)(exc.minor, COMPLETED_YES, exc.detail))
        except (TypeError, ValueError) as exc:  # a return value of the wrong shape
            log.warning("bad result from %s: %s", operation.name, exc)
            return self._system(request, BAD_PARAM(OMGVMCID | 41, COMPLETED_YES, str(exc)))
        return finish_reply(buffer, codec.little_endian)

    def _user(self, request: Any, codec: Codec, operation: Operation,
              exc: UserException) -> bytearray | None:
        cls = type(exc)
        declared = any(issubclass(cls, raised) for raised in operation.raises)
        typecode = exception_typecode(cls) if declared else None
        if typecode is None:
            if declared:
                log.warning("no TypeCode for user exception %s", cls.__qualname__)
            return self._system(request, UNKNOWN(_UNLISTED_USER_EXCEPTION, COMPLETED_MAYBE,
                                                 f"undeclared user exception {cls.__name__}"))
        buffer = reply_prefix(request.request_id, ReplyStatus.USER_EXCEPTION, request.version,
                              codec.little_endian)
        _write_string(buffer, typecode.id(), codec.little_endian)
        try:
            cdr_compile.encoder_for(typecode, codec)(
                buffer, exc, EncodeState(self.objref_encoder, self.max_depth))
        except Exception as error:  # noqa: BLE001 - translated like the Encoder does
            bad = translate_encode_error(typecode, exc, error)
            log.warning("cannot marshal user exception %s: %s", cls.__qualname__, bad)
            return self._system(request, type(bad)(bad.minor, COMPLETED_YES, bad.detail))
        return finish_reply(buffer, codec.little_endian)

    def _system(self, request: Any, exc: SystemException) -> bytearray | None:
        """A SYSTEM_EXCEPTION reply: repository id, minor code, completion status (15.4.3.2)."""
        if not request.response_expected:
            return None
        completed = exc.completed if exc.completed in (COMPLETED_YES, COMPLETED_NO,
                                                       COMPLETED_MAYBE) else COMPLETED_MAYBE
        buffer = reply_prefix(request.request_id, ReplyStatus.SYSTEM_EXCEPTION, request.version)
        _write_string(buffer, exc._NP_RepositoryId, True)
        buffer += bytes(-len(buffer) & 3)
        buffer += _BINARY.pack(exc.minor & 0xFFFFFFFF, completed._v)
        return finish_reply(buffer)

    def _forward(self, request: Any, codec: Codec, forward: ForwardRequest) -> bytearray | None:
        if not request.response_expected:
            return None
        try:
            ior = self.objref_encoder(forward.forward_reference)
        except SystemException as exc:
            return self._system(request, exc)
        if not isinstance(ior, IOR) or ior.is_nil():
            return self._system(request, OBJECT_NOT_EXIST(OMGVMCID | 2, COMPLETED_NO,
                                                          "forwarded to a nil reference"))
        buffer = reply_prefix(request.request_id, ReplyStatus.LOCATION_FORWARD, request.version,
                              codec.little_endian)
        buffer += ior_bytes(ior, codec)
        return finish_reply(buffer, codec.little_endian)

    # -- locate requests ------------------------------------------------------------------------
    def handle_locate(self, request: LocateRequest) -> LocateReply:
        """OBJECT_HERE, UNKNOWN_OBJECT or OBJECT_FORWARD for a LocateRequest (15.4.5)."""
        little = True
        status = LocateStatus.UNKNOWN_OBJECT
        body = b""
        key = request.object_key
        if key is not None:
            try:
                poa, oid = self.registry.locate(key)
                poa.locate_servant(oid, "_locate")
                status = LocateStatus.OBJECT_HERE
            except ForwardRequest as forward:
                try:
                    ior = self.objref_encoder(forward.forward_reference)
                    shell = LocateReply(request.request_id, LocateStatus.OBJECT_FORWARD, b"",
                                        request.version, little)
                    encoder = Encoder(Codec(little), offset=body_offset(shell))
                    write_ior(encoder, ior)
                    status, body = LocateStatus.OBJECT_FORWARD, encoder.getvalue()
                except SystemException:
                    status = LocateStatus.UNKNOWN_OBJECT
            except (SystemException, UserException):
                status = LocateStatus.UNKNOWN_OBJECT
            except Exception:
                log.exception("servant manager failed in a LocateRequest")
                status = LocateStatus.UNKNOWN_OBJECT
        return LocateReply(request.request_id, status, body, request.version, little)


def _write_string(buffer: bytearray, text: str, little: bool) -> None:
    """A CDR string (ASCII repository ids) at a 4-aligned position."""
    raw = text.encode("latin-1", "replace")
    buffer += bytes(-len(buffer) & 3)
    buffer += struct.pack("<I" if little else ">I", len(raw) + 1)
    buffer += raw + b"\0"
